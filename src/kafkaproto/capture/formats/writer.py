"""Write pcap and pcapng files: synthetic captures for tests and benchmarks.

:func:`tcp_packet` builds one packet (any supported link type, IPv4 or
IPv6); :class:`TcpConversation` keeps the sequence numbers of a connection
and yields handshake, data and close packets; :class:`PcapWriter` and
:class:`PcapngWriter` write them.  Checksums are left zero, as loopback
captures with checksum offload show them.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import BinaryIO

from ..walker.packets import (
    ACK,
    FIN,
    LINKTYPE_ETHERNET,
    LINKTYPE_LINUX_SLL,
    LINKTYPE_LINUX_SLL2,
    LINKTYPE_LOOP,
    LINKTYPE_NULL,
    LINKTYPE_RAW,
    PSH,
    SYN,
)

__all__ = ["PcapWriter", "PcapngWriter", "TcpConversation", "tcp_packet"]


def tcp_packet(linktype: int, src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int,
               payload: bytes = b"", *, vlan: int | None = None) -> bytes:
    """One TCP packet with its link-layer header."""
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags,
                      65535, 0, 0) + payload
    v6 = ":" in src
    if v6:
        ip = (struct.pack(">IHBB", 6 << 28, len(tcp), 6, 64) + ipaddress.IPv6Address(src).packed
              + ipaddress.IPv6Address(dst).packed)
        etype = 0x86DD
    else:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                         ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed)
        etype = 0x0800
    packet = ip + tcp
    if linktype == LINKTYPE_ETHERNET:
        tag = struct.pack(">HH", 0x8100, vlan) if vlan is not None else b""
        return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + tag + struct.pack(">H", etype) + packet
    if linktype == LINKTYPE_LINUX_SLL:
        return struct.pack(">HHH8sH", 4, 772, 6, b"\0" * 8, etype) + packet
    if linktype == LINKTYPE_LINUX_SLL2:
        return struct.pack(">HHIHBB8s", etype, 0, 1, 772, 4, 6, b"\0" * 8) + packet
    if linktype == LINKTYPE_NULL:
        return struct.pack("<I", 30 if v6 else 2) + packet
    if linktype == LINKTYPE_LOOP:
        return struct.pack(">I", 24 if v6 else 2) + packet
    if linktype == LINKTYPE_RAW:
        return packet
    raise ValueError(f"cannot write link type {linktype}")


class TcpConversation:
    """Sequence numbers of one TCP connection; methods return packet tuples
    ``(ts_ns, bytes)`` ready for a writer."""

    def __init__(self, client: tuple[str, int], server: tuple[str, int], *, linktype: int = LINKTYPE_ETHERNET,
                 isn: tuple[int, int] = (1000, 5000), ts: int = 1_700_000_000_000_000_000, step: int = 1000) -> None:
        self.client, self.server = client, server
        self.linktype = linktype
        self.seq = {client: isn[0], server: isn[1]}
        self.ts = ts
        self.step = step

    def _tick(self) -> int:
        self.ts += self.step
        return self.ts

    def _packet(self, sender, flags, payload=b"", seq=None) -> tuple[int, bytes]:
        receiver = self.server if sender == self.client else self.client
        s = self.seq[sender] if seq is None else seq
        return self._tick(), tcp_packet(self.linktype, sender[0], sender[1], receiver[0], receiver[1], s,
                                        self.seq[receiver], flags, payload)

    def handshake(self) -> list[tuple[int, bytes]]:
        c, s = self.client, self.server
        out = [self._packet(c, SYN)]
        self.seq[c] += 1
        out.append(self._packet(s, SYN | ACK))
        self.seq[s] += 1
        out.append(self._packet(c, ACK))
        return out

    def send(self, from_client: bool, data: bytes, mss: int = 1460) -> list[tuple[int, bytes]]:
        """``data`` cut into segments of at most ``mss`` bytes."""
        sender = self.client if from_client else self.server
        out = []
        for i in range(0, len(data), mss):
            chunk = data[i:i + mss]
            out.append(self._packet(sender, PSH | ACK, chunk))
            self.seq[sender] += len(chunk)
        return out

    def close(self) -> list[tuple[int, bytes]]:
        out = []
        for sender in (self.client, self.server):
            out.append(self._packet(sender, FIN | ACK))
            self.seq[sender] += 1
        return out


class PcapWriter:
    """Classic pcap, microsecond or nanosecond time stamps, little-endian."""

    def __init__(self, f: BinaryIO, linktype: int = LINKTYPE_ETHERNET, *, nanos: bool = False,
                 snaplen: int = 262144) -> None:
        self.f = f
        self.nanos = nanos
        self.snaplen = snaplen
        magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))

    def write(self, ts_ns: int, data: bytes, orig_len: int | None = None) -> None:
        sec, frac = divmod(ts_ns, 1_000_000_000)
        if not self.nanos:
            frac //= 1000
        cap = data[:self.snaplen]
        self.f.write(struct.pack("<IIII", sec, frac, len(cap), orig_len or len(data)) + cap)


class PcapngWriter:
    """pcapng with one section; interfaces added with :meth:`interface`."""

    def __init__(self, f: BinaryIO, *, big_endian: bool = False) -> None:
        self.f = f
        self.o = ">" if big_endian else "<"
        self.resolution: list[int] = []
        body = struct.pack(self.o + "IHHq", 0x1A2B3C4D, 1, 0, -1)
        self._block(0x0A0D0D0A, body)

    def _block(self, btype: int, body: bytes) -> None:
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        self.f.write(struct.pack(self.o + "II", btype, n) + body + struct.pack(self.o + "I", n))

    def interface(self, linktype: int, *, tsresol: int = 6, snaplen: int = 262144, tsoffset: int | None = None) -> int:
        """Add an interface; ``tsresol`` is the pcapng option byte (6: µs, 9: ns,
        0x80 | n: 2**-n seconds); ``tsoffset``: the ``if_tsoffset`` option
        (seconds added to every time stamp, a signed 64-bit number)."""
        opts = struct.pack(self.o + "HHB3x", 9, 1, tsresol)
        if tsoffset is not None:
            opts += struct.pack(self.o + "HHq", 14, 8, tsoffset)
        opts += struct.pack(self.o + "HH", 0, 0)
        self._block(1, struct.pack(self.o + "HHI", linktype, 0, snaplen) + opts)
        self.resolution.append(2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10 ** tsresol)
        return len(self.resolution) - 1

    def write(self, ts_ns: int, data: bytes, iface: int = 0, orig_len: int | None = None, *,
              ticks: int | None = None) -> None:
        """One enhanced packet block; ``ticks``: the raw 64-bit time stamp to
        write instead of ``ts_ns`` in the interface's resolution."""
        if ticks is None:
            ticks = ts_ns * self.resolution[iface] // 1_000_000_000
        self._block(6, struct.pack(self.o + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(data),
                                   orig_len or len(data)) + data)

    def write_simple(self, data: bytes) -> None:
        self._block(3, struct.pack(self.o + "I", len(data)) + data)

    def comment_block(self) -> None:
        """A block readers must skip (a custom block, type 0xBAD)."""
        self._block(0x00000BAD, struct.pack(self.o + "I", 32473) + b"skip me")
