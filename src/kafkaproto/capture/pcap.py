"""Streaming readers for pcap and pcapng files, and the link/IP/TCP layers.

Only the standard library is used: a capture is read record by record from
a binary file object, so memory stays constant whatever the file's size.

- :meth:`CaptureFile.iter_records` yields ``(ts_ns, linktype, data, orig_len)`` for every
  packet of a pcap (micro- or nanosecond, either byte order) or pcapng file
  (several sections and interfaces, ``if_tsresol``/``if_tsoffset``,
  enhanced, simple and obsolete packet blocks).
- :func:`decode_tcp` takes one packet to a :class:`TcpSegment` (Ethernet with
  VLAN tags, Linux cooked SLL and SLL2, BSD/OpenBSD loopback, raw IP; IPv4
  and IPv6) or to the reason it is not one.

A damaged file never raises out of the iterator: it stops and says why in
:attr:`CaptureFile.error`, with the bytes it could not read in
:attr:`CaptureFile.unread_bytes`.  A time stamp no 64-bit nanosecond column
can hold (a pcapng interface's coarse ``if_tsresol`` with huge raw values, a
huge or negative ``if_tsoffset``) is read as None (no time) and counted in
:attr:`CaptureFile.bad_timestamps`.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

__all__ = [
    "CaptureFile",
    "CaptureFormatError",
    "PCAP_MAGICS",
    "PCAPNG_MAGIC",
    "TcpSegment",
    "decode_tcp",
    "sniff_format",
]

PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: pcap magic bytes -> (byte order, ticks per second)
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}

# link-layer header types (tcpdump.org LINKTYPE_* values)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_LINKTYPES = {LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6}

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
_VLAN_TAGS = {0x8100, 0x88A8, 0x9100}
# BSD address families for IPv6 differ between systems (24 NetBSD/OpenBSD,
# 28 FreeBSD, 30 macOS); IPv4 is 2 everywhere.
_AF_INET6 = {24, 28, 30}

_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file
#: the time stamps a packet may carry: nanoseconds since the epoch that fit in
#: an int64 (1970 to 2262); every later difference (latency) fits too
TS_MAX = (1 << 63) - 1
_READ_STEP = 1 << 20


class CaptureFormatError(ValueError):
    """The file is not a pcap or pcapng capture, or its header is damaged."""


class TcpSegment(NamedTuple):
    """One TCP segment; ``payload`` is what was captured, ``length`` what the
    IP header says was sent (longer when the snap length cut the packet);
    ``at``: where the payload starts in the packet's bytes."""

    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    length: int
    at: int = 0


FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def sniff_format(head: bytes) -> str | None:
    """``"pcap"``, ``"pcapng"`` or None from the first four bytes of a file."""
    if head[:4] == PCAPNG_MAGIC:
        return "pcapng"
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    return None


class CaptureFile:
    """Iterate the packet records of a pcap or pcapng file object.

    Iterating yields ``(ts_ns, linktype, data, orig_len)``.  ``ts_ns`` is
    nanoseconds since the epoch (None for pcapng simple packet blocks, which
    carry no time).  After iteration, ``error`` is None for a clean file or
    says what stopped the reader; ``unread_bytes`` counts the bytes left.
    """

    def __init__(self, f: BinaryIO, size: int | None = None, *, base: int = 0, read_rest: bool = True) -> None:
        self.f = f
        self.size = size
        self.format: str | None = None
        self.error: str | None = None
        self.unread_bytes = 0
        self.bytes_read = 0
        self.records = 0
        #: packets whose time stamp lies outside 0..TS_MAX: yielded with ts None
        self.bad_timestamps = 0
        self._magic = b""
        #: file offset of the record (pcap) or block (pcapng) being read; ``base``
        #: is the offset the file object stands at when reading starts
        self.base = base
        self.at = base
        #: file offset of the packet bytes of the record just yielded
        self.data_at = base
        #: a damaged file: read the rest to count it (False when reading a byte range)
        self.read_rest = read_rest
        # pcapng: the byte order and interfaces of the section being read
        self.order = "<"
        self.interfaces: list = []  # (linktype, ticks per second, offset seconds)

    def __iter__(self) -> Iterator[tuple[int | None, int, bytes, int]]:
        self.open()
        yield from self.iter_records()

    def open(self) -> str:
        """Read the first bytes: ``"pcap"`` or ``"pcapng"``, else CaptureFormatError."""
        head = self._read(4)
        fmt = sniff_format(head)
        if fmt is None:
            raise CaptureFormatError(f"not a pcap or pcapng file (first bytes {head.hex()})")
        self.format = fmt
        self._magic = head
        return fmt

    def iter_records(self) -> Iterator[tuple[int | None, int, bytes, int]]:
        """The packet records after :meth:`open`."""
        if self.format == "pcap":
            yield from self._pcap(*self.pcap_header())
        else:
            yield from self._pcapng(self._magic)

    def pcap_header(self) -> tuple[str, int, int]:
        """The rest of a pcap file header after :meth:`open`: byte order
        (``"<"``/``">"``), ticks per second, link type."""
        order, ticks = PCAP_MAGICS[self._magic]
        hdr = self._read(20)
        if len(hdr) < 20:
            raise CaptureFormatError(f"pcap header cut short: {4 + len(hdr)} of 24 bytes")
        major, _minor, _zone, _sigfigs, _snaplen, network = struct.unpack(order + "HHiIII", hdr)
        if major != 2:
            raise CaptureFormatError(f"pcap version {major} is not 2")
        return order, ticks, network & 0xFFFF

    # -- helpers -----------------------------------------------------------
    def _read(self, n: int) -> bytes:
        if n <= _READ_STEP:
            data = self.f.read(n)
        else:
            # A length the file claims is read in steps: a record that claims more
            # than the file holds costs what the file holds (read(n) would
            # allocate all n bytes first).
            parts = []
            while n > 0:
                chunk = self.f.read(min(n, _READ_STEP))
                if not chunk:
                    break
                parts.append(chunk)
                n -= len(chunk)
            data = b"".join(parts)
        self.bytes_read += len(data)
        return data

    def _stop(self, why: str, partial: int) -> None:
        self.error = why
        rest = 0
        while self.read_rest and (chunk := self.f.read(1 << 20)):
            rest += len(chunk)
        self.unread_bytes = partial + rest
        self.bytes_read += rest

    # -- pcap --------------------------------------------------------------
    def _pcap(self, order: str, ticks: int, linktype: int):
        rec = struct.Struct(order + "IIII")
        scale = 1_000_000_000 // ticks
        read = self._read
        while True:
            self.at = self.base + self.bytes_read
            rh = read(16)
            if not rh:
                return
            if len(rh) < 16:
                self._stop(f"record header cut short after {self.records} records", len(rh))
                return
            sec, frac, incl, orig = rec.unpack(rh)
            if incl > _MAX_RECORD:
                self._stop(f"record {self.records + 1}: implausible captured length {incl}", 16)
                return
            data = read(incl)
            if len(data) < incl:
                self._stop(f"record {self.records + 1} cut short: {len(data)} of {incl} bytes",
                           16 + len(data))
                return
            self.records += 1
            self.data_at = self.at + 16
            yield sec * 1_000_000_000 + frac * scale, linktype, data, orig

    # -- pcapng ------------------------------------------------------------
    def _pcapng(self, first: bytes):
        """Blocks from the file object's position; ``first``: bytes of the first
        block already read.  The section's byte order and interfaces are
        :attr:`order` and :attr:`interfaces` (preset them to start mid-section)."""
        order = self.order
        interfaces = self.interfaces
        pending = first
        read = self._read
        while True:
            self.at = self.base + self.bytes_read - len(pending)
            head = pending + read(8 - len(pending))
            pending = b""
            if not head:
                return
            if len(head) < 8:
                self._stop(f"block header cut short after {self.records} packets", len(head))
                return
            if head[:4] == PCAPNG_MAGIC:
                bom = read(4)
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                else:
                    self._stop(f"section header with bad byte-order magic {bom.hex()}", 8 + len(bom))
                    return
                (length,) = struct.unpack(order + "I", head[4:8])
                if length < 28 or length % 4 or length > _MAX_RECORD:
                    self._stop(f"section header with bad length {length}", 12)
                    return
                body = read(length - 12)
                if len(body) < length - 12:
                    self._stop("section header cut short", 12 + len(body))
                    return
                interfaces = self.interfaces = []
                self.order = order
                continue
            btype, length = struct.unpack(order + "II", head)
            if length < 12 or length % 4 or length > _MAX_RECORD:
                self._stop(f"block type {btype:#x} with bad length {length}", 8)
                return
            body = read(length - 8)
            if len(body) < length - 8:
                self._stop(f"block type {btype:#x} cut short: {8 + len(body)} of {length} bytes",
                           8 + len(body))
                return
            body = body[:-4]  # trailing copy of the length
            if btype == 1:  # interface description
                if len(body) < 8:
                    self._stop("interface block too short", 0)
                    return
                linktype = struct.unpack_from(order + "H", body, 0)[0]
                ticks, offset = _idb_options(body[8:], order)
                interfaces.append((linktype, ticks, offset))
            elif btype in (6, 2):  # enhanced packet / obsolete packet
                if len(body) < 20:
                    self._stop(f"packet block too short ({len(body)} bytes)", 0)
                    return
                if btype == 6:
                    iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", body, 0)
                else:
                    iface, _drops, hi, lo, cap, orig = struct.unpack_from(order + "HHIIII", body, 0)
                if iface >= len(interfaces) or 20 + cap > len(body):
                    self._stop(f"packet block for unknown interface {iface} or with bad length {cap}", 0)
                    return
                linktype, ticks, offset = interfaces[iface]
                raw = (hi << 32) | lo
                ts = (raw * 1_000_000_000) // ticks + offset * 1_000_000_000
                if not 0 <= ts <= TS_MAX:
                    ts = None
                    self.bad_timestamps += 1
                self.records += 1
                self.data_at = self.at + 28
                yield ts, linktype, bytes(body[20:20 + cap]), orig
            elif btype == 3:  # simple packet: interface 0, no time stamp
                if not interfaces or len(body) < 4:
                    self._stop("simple packet block without an interface", 0)
                    return
                (orig,) = struct.unpack_from(order + "I", body, 0)
                cap = min(orig, len(body) - 4)
                self.records += 1
                self.data_at = self.at + 12
                yield None, interfaces[0][0], bytes(body[4:4 + cap]), orig
            # other blocks (statistics, name resolution, custom...) carry no packets


def _idb_options(opts: bytes, order: str) -> tuple[int, int]:
    ticks, offset = 1_000_000, 0
    pos = 0
    while pos + 4 <= len(opts):
        code, length = struct.unpack_from(order + "HH", opts, pos)
        if code == 0 or pos + 4 + length > len(opts):
            break  # the end, or an option that runs past its block: no more options to trust
        value = opts[pos + 4:pos + 4 + length]
        if code == 9 and length >= 1:  # if_tsresol
            r = value[0]
            ticks = 2 ** (r & 0x7F) if r & 0x80 else 10 ** r
        elif code == 14 and length >= 8:  # if_tsoffset, seconds
            (offset,) = struct.unpack(order + "q", value[:8])
        pos += 4 + length + (-length % 4)
    return ticks or 1_000_000, offset


# --------------------------------------------------------------------------
# link, network and transport layers
# --------------------------------------------------------------------------

_ip_cache: dict = {}


def _addr4(b: bytes) -> str:
    s = _ip_cache.get(b)
    if s is None:
        s = f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"
        if len(_ip_cache) < 65536:
            _ip_cache[b] = s
    return s


def _addr6(b: bytes) -> str:
    s = _ip_cache.get(b)
    if s is None:
        s = str(ipaddress.IPv6Address(b))
        if len(_ip_cache) < 65536:
            _ip_cache[b] = s
    return s


_tcp = struct.Struct(">HHIIBB")
# Linux cooked captures: header length, offset of the protocol (ethertype) field
_COOKED = {LINKTYPE_LINUX_SLL: (16, 14), LINKTYPE_LINUX_SLL2: (20, 0)}


def decode_tcp(linktype: int, data: bytes) -> TcpSegment | str:
    """A :class:`TcpSegment`, or one of the reasons ``"unsupported_link"``,
    ``"not_ip"``, ``"not_tcp"``, ``"ip_fragment"``, ``"malformed"``."""
    pos = 0
    if linktype == LINKTYPE_ETHERNET:
        if len(data) < 14:
            return "malformed"
        etype = (data[12] << 8) | data[13]
        pos = 14
        while etype in _VLAN_TAGS:
            if len(data) < pos + 4:
                return "malformed"
            etype = (data[pos + 2] << 8) | data[pos + 3]
            pos += 4
    elif linktype in _COOKED:
        pos, at = _COOKED[linktype]
        if len(data) < pos:
            return "malformed"
        etype = (data[at] << 8) | data[at + 1]
    elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(data) < 4:
            return "malformed"
        # DLT_NULL is in the capturing host's byte order; accept either.
        le = struct.unpack_from("<I", data, 0)[0]
        be = struct.unpack_from(">I", data, 0)[0]
        fam = be if linktype == LINKTYPE_LOOP else (le if le < 256 else be)
        etype = ETHERTYPE_IPV4 if fam == 2 else ETHERTYPE_IPV6 if fam in _AF_INET6 else -1
        pos = 4
    elif linktype in _RAW_LINKTYPES:
        if not data:
            return "malformed"
        v = data[0] >> 4
        etype = ETHERTYPE_IPV4 if v == 4 else ETHERTYPE_IPV6 if v == 6 else -1
    else:
        return "unsupported_link"

    if etype == ETHERTYPE_IPV4:
        if len(data) < pos + 20:
            return "malformed"
        vihl = data[pos]
        ihl = (vihl & 0x0F) * 4
        if vihl >> 4 != 4 or ihl < 20 or len(data) < pos + ihl:
            return "malformed"
        total = (data[pos + 2] << 8) | data[pos + 3]
        frag = ((data[pos + 6] << 8) | data[pos + 7]) & 0x3FFF  # MF flag + offset
        proto = data[pos + 9]
        src = _addr4(data[pos + 12:pos + 16])
        dst = _addr4(data[pos + 16:pos + 20])
        if total < ihl:
            # TCP segmentation offload captures show total length 0
            total = len(data) - pos if total == 0 else -1
            if total < 0:
                return "malformed"
        l4 = pos + ihl
        l4_len = total - ihl
        if proto != 6:
            return "not_tcp"
        if frag:
            return "ip_fragment"
    elif etype == ETHERTYPE_IPV6:
        if len(data) < pos + 40:
            return "malformed"
        if data[pos] >> 4 != 6:
            return "malformed"
        plen = (data[pos + 4] << 8) | data[pos + 5]
        nxt = data[pos + 6]
        src = _addr6(data[pos + 8:pos + 24])
        dst = _addr6(data[pos + 24:pos + 40])
        l4 = pos + 40
        l4_len = plen if plen else len(data) - l4  # jumbogram / offload: use what is there
        for _ in range(8):  # extension headers, bounded
            if nxt == 44:
                return "ip_fragment"
            if nxt not in (0, 43, 60, 51):
                break
            if len(data) < l4 + 2:
                return "malformed"
            # the authentication header counts 4-byte units less 2, the others 8-byte units less 1
            ext = (data[l4 + 1] + 2) * 4 if nxt == 51 else (data[l4 + 1] + 1) * 8
            nxt = data[l4]
            l4 += ext
            l4_len -= ext
        if nxt != 6:
            return "not_tcp"
    else:
        return "not_ip"

    if l4_len < 20 or len(data) < l4 + 20:
        return "malformed"
    sport, dport, seq, ack, off, flags = _tcp.unpack_from(data, l4)
    doff = (off >> 4) * 4
    if doff < 20 or doff > l4_len or len(data) < l4 + doff:
        return "malformed"
    start = l4 + doff
    length = l4_len - doff
    payload = data[start:start + length]
    return TcpSegment(src, sport, dst, dport, seq, ack, flags, payload, length, start)
