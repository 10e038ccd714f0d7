"""The pure-Python twin of kafkaproto.capture.walker._index: the byte-range
index of pcap files as rows of TCP segment positions."""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["COMPILED", "OFFSET_BITS", "POS_DTYPE", "POS_FIELDS", "connection_key", "index_pcap", "pcap_boundary"]

COMPILED = False

_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file

POS_FIELDS = (("order", "<i8"), ("ts", "<i8"), ("key", "<i8"), ("seq", "<i8"), ("ack", "<i8"), ("length", "<i8"),
              ("at", "<i8"), ("caplen", "<i4"), ("sport", "<u2"), ("dport", "<u2"), ("flags", "<i2"),
              ("family", "u1"), ("pad", "u1"), ("src", "V16"), ("dst", "V16"), ("pad2", "V4"))
POS_DTYPE = np.dtype(list(POS_FIELDS))
OFFSET_BITS = 40
_FNV, _PRIME, _M64 = 14695981039346656037, 1099511628211, (1 << 64) - 1


def connection_key(family: int, a: bytes, ap: int, b: bytes, bp: int) -> int:
    """See the compiled module: FNV-1a over the family and both endpoints, lower first."""
    n = 4 if family == 4 else 16
    a, b = bytes(a[:n]), bytes(b[:n])
    lo, lp, hi, hp = (a, ap, b, bp) if (a, ap) <= (b, bp) else (b, bp, a, ap)
    h = _FNV
    for x in (family, *lo, lp >> 8, lp & 0xFF, *hi, hp >> 8, hp & 0xFF):
        h = ((h ^ x) * _PRIME) & _M64
    h = (h >> 1) | 1
    return h - (1 << 64) if h >= 1 << 63 else h


def index_pcap(buf, start: int, end: int, big_endian: bool, ticks: int, linktype: int, rank: int):
    """See the compiled module; here every record goes to ``others`` (the Python code decodes it)."""
    rec = struct.Struct((">" if big_endian else "<") + "IIII")
    scale = 1_000_000_000 // ticks
    n = len(buf)
    p = start
    others = []
    records = 0
    error = None
    while p < end:
        if n - p < 16:
            if n - p:
                error = f"record header cut short at byte {p}"
            break
        sec, frac, incl, _orig = rec.unpack_from(buf, p)
        if incl > _MAX_RECORD:
            error = f"record at byte {p}: implausible captured length {incl}"
            break
        if n - p - 16 < incl:
            error = f"record at byte {p} cut short: {n - p - 16} of {incl} bytes"
            break
        records += 1
        others.append((p, sec * 1_000_000_000 + frac * scale, p + 16, incl))
        p += 16 + incl
    return np.zeros(0, dtype=POS_DTYPE), others, {}, p, records, error


def pcap_boundary(buf, start: int, end: int, big_endian: bool, ticks: int, max_incl: int, ref_sec: int,
                  confirm: int) -> int:
    """See the compiled module."""
    rec = struct.Struct((">" if big_endian else "<") + "IIII")
    n = len(buf)

    def plausible(q: int, near: int):
        if q > n - 16:
            return None
        sec, frac, incl, orig = rec.unpack_from(buf, q)
        if incl > max_incl or orig < incl or orig > _MAX_RECORD or frac >= ticks:
            return None
        if near >= 0 and abs(sec - near) > 86400:
            return None
        return sec, q + 16 + incl

    for p in range(start, min(end, n)):
        got = plausible(p, ref_sec)
        if got is None:
            continue
        sec, q = got
        ok = True
        for _ in range(confirm):
            if q >= n:
                break  # the file ends exactly after a record, or inside the last one: confirmed
            got = plausible(q, sec)
            if got is None:
                ok = False
                break
            sec, q = got
        if ok:
            return p
    return -1
