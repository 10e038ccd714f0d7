"""Link, IP and TCP headers: one captured packet to a :class:`TcpSegment`
(Ethernet with VLAN tags, Linux cooked SLL and SLL2, BSD/OpenBSD loopback,
raw IP; IPv4 and IPv6) or to the reason it is not one.

The same rule as the compiled walker's packet parsing (``_packets.pxd``),
in Python: the twins use it (:func:`parse_tcp`, positions and raw
addresses), and so does :func:`decode_tcp` (a :class:`TcpSegment` with the
addresses as text).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["ACK", "FIN", "PSH", "RST", "SYN", "TcpSegment", "addr4", "addr6", "decode_tcp", "endpoint_text",
           "parse_tcp"]

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


# --------------------------------------------------------------------------
# link, network and transport layers
# --------------------------------------------------------------------------

_ip_cache: dict = {}


def addr4(b: bytes) -> str:
    s = _ip_cache.get(b)
    if s is None:
        s = f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"
        if len(_ip_cache) < 65536:
            _ip_cache[b] = s
    return s


def addr6(b: bytes) -> str:
    s = _ip_cache.get(b)
    if s is None:
        s = _text6(b)
        if len(_ip_cache) < 65536:
            _ip_cache[b] = s
    return s


def _text6(b: bytes) -> str:
    """RFC 5952: hex groups without leading zeros, the longest run of two or
    more zero groups (the first of equal ones) written ``::`` (what
    ``ipaddress`` writes, but the same on every Python: 3.13 writes IPv4
    mapped addresses its own way)."""
    groups = struct.unpack(">8H", b)
    best, best_len, start, run = -1, 0, -1, 0
    for i, g in enumerate(groups):
        if g == 0:
            if start < 0:
                start = i
            run += 1
            if run > best_len:
                best, best_len = start, run
        else:
            start, run = -1, 0
    text = [f"{g:x}" for g in groups]
    if best_len > 1:
        return ":".join(text[:best]) + "::" + ":".join(text[best + best_len:])
    return ":".join(text)


def endpoint_text(family: int, addr: bytes, port: int) -> str:
    """``ip:port`` (IPv4: ``addr`` 4 raw bytes) or ``[ip]:port`` (IPv6, 16)."""
    return f"{addr4(addr)}:{port}" if family == 4 else f"[{addr6(addr)}]:{port}"


_tcp = struct.Struct(">HHIIBB")
# Linux cooked captures: header length, offset of the protocol (ethertype) field
_COOKED = {LINKTYPE_LINUX_SLL: (16, 14), LINKTYPE_LINUX_SLL2: (20, 0)}


def parse_tcp(linktype: int, data) -> tuple | str:
    """The TCP segment of a packet as positions: ``(family, src_at, dst_at,
    sport, dport, seq, ack, flags, payload_at, length)`` (the addresses are
    ``data[src_at:src_at + 4]`` (IPv4) or 16 bytes (IPv6); ``length``
    payload bytes on the wire, of which ``data[payload_at:]`` holds what was
    captured) -- or one of the reasons ``"unsupported_link"``, ``"not_ip"``,
    ``"not_tcp"``, ``"ip_fragment"``, ``"malformed"``."""
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
        family, src_at, dst_at = 4, pos + 12, pos + 16
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
        family, src_at, dst_at = 6, pos + 8, pos + 24
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
    return family, src_at, dst_at, sport, dport, seq, ack, flags, l4 + doff, l4_len - doff


def decode_tcp(linktype: int, data: bytes) -> TcpSegment | str:
    """A :class:`TcpSegment`, or one of the reasons ``"unsupported_link"``,
    ``"not_ip"``, ``"not_tcp"``, ``"ip_fragment"``, ``"malformed"``."""
    got = parse_tcp(linktype, data)
    if isinstance(got, str):
        return got
    family, src_at, dst_at, sport, dport, seq, ack, flags, start, length = got
    conv, alen = (addr4, 4) if family == 4 else (addr6, 16)
    return TcpSegment(conv(bytes(data[src_at:src_at + alen])), sport, conv(bytes(data[dst_at:dst_at + alen])),
                      dport, seq, ack, flags, bytes(data[start:start + length]), length, start)
