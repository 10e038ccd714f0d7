"""Real client traffic made as large as a test or a benchmark needs: a
capture copied onto distinct connections (test support: not part of the
installed package).

The committed sample (``samples/capture/kafka.pcap``) is what real clients
send: small frames (Metadata, ApiVersions, heartbeats, small Produce and
Fetch) on short connections, all on 127.0.0.1.  :func:`replicate` writes it
``copies`` times, copy ``i`` with both ends moved to its own address
(127.a.b.1) and its times moved on by ``i * shift`` seconds, so every copy's
connections are new ones; the IPv4 and TCP checksums follow the addresses
(RFC 1624's incremental update: a checksum that was right stays right, one
left to the network card stays as it was).

    python tests/support/replica.py samples/capture/kafka.pcap rep.pcap 160

writes about 100 MB: 321 k frames on 43.7 k connections.
"""

from __future__ import annotations

import struct
import sys

from kafkaproto.capture.formats.pcap import CaptureFile
from kafkaproto.capture.formats.writer import PcapWriter
from kafkaproto.capture.walker.packets import LINKTYPE_ETHERNET

__all__ = ["replicate"]

_TCP = 6


def _fold(total: int) -> int:
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def _adjusted(checksum: int, old: bytes, new: bytes) -> int:
    """A ones'-complement checksum after ``old`` 16-bit words became ``new`` (RFC 1624, eqn. 3)."""
    total = ~checksum & 0xFFFF
    for (o,), (n,) in zip(struct.iter_unpack(">H", old), struct.iter_unpack(">H", new)):
        total += (~o & 0xFFFF) + n
    return ~_fold(total) & 0xFFFF


def _moved(data: bytes, address: bytes) -> bytes:
    """An Ethernet frame's IPv4 packet with both addresses set to ``address``."""
    if len(data) < 34 or data[12:14] != b"\x08\x00":
        return data
    out = bytearray(data)
    ip = 14
    old = bytes(out[ip + 12:ip + 20])
    new = address + address
    out[ip + 12:ip + 20] = new
    struct.pack_into(">H", out, ip + 10, _adjusted(struct.unpack_from(">H", out, ip + 10)[0], old, new))
    tcp = ip + (out[ip] & 0x0F) * 4
    if out[ip + 9] == _TCP and len(out) >= tcp + 18:  # the TCP checksum covers the addresses too
        struct.pack_into(">H", out, tcp + 16, _adjusted(struct.unpack_from(">H", out, tcp + 16)[0], old, new))
    return bytes(out)


def replicate(src, dst, copies: int, shift: int = 31) -> int:
    """Write ``copies`` copies of the Ethernet pcap ``src`` to ``dst`` (see
    the module); returns the packets written."""
    with open(src, "rb") as f:
        packets = list(CaptureFile(f))
    if any(linktype != LINKTYPE_ETHERNET for _, linktype, _, _ in packets):
        raise ValueError(f"{src}: Ethernet packets only")
    with open(dst, "wb") as fh:
        w = PcapWriter(fh, LINKTYPE_ETHERNET)
        for i in range(copies):
            address = bytes([127, 1 + i // 250, 1 + i % 250, 1])
            for ts, _, data, orig_len in packets:
                w.write(ts + i * shift * 1_000_000_000, _moved(data, address), orig_len)
    return copies * len(packets)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python tests/support/replica.py SRC.pcap DST.pcap COPIES")
    n = replicate(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    print(f"{sys.argv[2]}: {n} packets")
