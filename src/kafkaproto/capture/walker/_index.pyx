# cython: language_level=3
# The byte-range index: the first stage of reading a capture in byte ranges.
# Every TCP segment of the pcap records that start in a range becomes a
# fixed-size row of positions (where its payload lies in the file, not the
# payload itself), so that what crosses between the stages is small; the
# second stage reads the payloads again, from the file mapped in memory,
# connection by connection (kafkaproto.capture.formats.ranges).

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from kafkaproto.capture.walker._packets cimport (
    _Seg, _cap_parse, _cap_ld32, pcap_record, CAP_MAX_RECORD, R_MALFORMED, R_NOT_IP, R_NOT_TCP, R_FRAGMENT, R_LINK,
    N_REASONS,
)

import numpy as np

COMPILED = True

_REASONS = (None, "malformed", "not_ip", "not_tcp", "ip_fragment", "unsupported_link")

# -- the byte-range index ---------------------------------------------------
# the pcap records that start in a range, as a fixed-size row of positions
# (where its payload lies in the file, not the payload itself), so that what
# crosses between the stages is small; the second stage reads the payloads
# again, from the file mapped in memory, connection by connection.

cdef struct Pos:
    # 104 bytes (widest first): POS_FIELDS names them in order
    int64_t order           # the file's rank << 40 | the record's offset: capture order across files
    int64_t ts              # nanoseconds since the epoch
    int64_t key             # the connection (4-tuple, either direction) hashed; never 0
    int64_t seq
    int64_t ack
    int64_t length          # payload bytes on the wire
    int64_t at              # file offset of the payload's first byte
    int32_t caplen          # payload bytes captured (at most length)
    uint16_t sport
    uint16_t dport
    int16_t flags
    uint8_t family          # 4 or 6
    uint8_t pad
    uint8_t src[16]         # IPv4: the first 4 bytes
    uint8_t dst[16]
    uint8_t pad2[4]

POS_FIELDS = (("order", "<i8"), ("ts", "<i8"), ("key", "<i8"), ("seq", "<i8"), ("ack", "<i8"), ("length", "<i8"),
              ("at", "<i8"), ("caplen", "<i4"), ("sport", "<u2"), ("dport", "<u2"), ("flags", "<i2"),
              ("family", "u1"), ("pad", "u1"), ("src", "V16"), ("dst", "V16"), ("pad2", "V4"))
POS_DTYPE = np.dtype(list(POS_FIELDS))
assert POS_DTYPE.itemsize == sizeof(Pos)
OFFSET_BITS = 40


cdef int64_t _conn_key(int family, const unsigned char* a, uint16_t ap, const unsigned char* b,
                       uint16_t bp) noexcept nogil:
    """The same 63-bit key for both directions of a 4-tuple, in every process
    (FNV-1a over the family and the two endpoints, lower first); never 0."""
    cdef int alen = 4 if family == 4 else 16
    cdef int c = memcmp(a, b, alen)
    cdef const unsigned char* lo
    cdef const unsigned char* hi
    cdef uint16_t lp, hp
    cdef uint64_t h = 14695981039346656037ULL
    cdef int i
    if c < 0 or (c == 0 and ap <= bp):
        lo, lp, hi, hp = a, ap, b, bp
    else:
        lo, lp, hi, hp = b, bp, a, ap
    h = (h ^ <uint64_t>family) * 1099511628211ULL
    for i in range(alen):
        h = (h ^ lo[i]) * 1099511628211ULL
    h = (h ^ (lp >> 8)) * 1099511628211ULL
    h = (h ^ (lp & 0xFF)) * 1099511628211ULL
    for i in range(alen):
        h = (h ^ hi[i]) * 1099511628211ULL
    h = (h ^ (hp >> 8)) * 1099511628211ULL
    h = (h ^ (hp & 0xFF)) * 1099511628211ULL
    return <int64_t>((h >> 1) | 1)


def connection_key(int family, bytes a, int ap, bytes b, int bp):
    """The byte-range index's key of a 4-tuple (raw addresses of 4 or 16 bytes)."""
    return _conn_key(family, <const unsigned char*>PyBytes_AS_STRING(a), <uint16_t>ap,
                     <const unsigned char*>PyBytes_AS_STRING(b), <uint16_t>bp)


def index_pcap(buf, Py_ssize_t start, Py_ssize_t end, bint big_endian, uint64_t ticks, int linktype, int64_t rank):
    """The records of a classic pcap file (``buf``: all of it, e.g. mapped in
    memory) that start at ``start`` (a record boundary) and before ``end``.

    Returns ``(rows, others, reasons, stop, records, error)``: ``rows`` the
    TCP segments as :data:`POS_DTYPE`; ``others`` ``[(record offset, ts, data
    offset, length)]`` of the records the Python code must decode; ``reasons``
    counts of the records that are no TCP segment (decode_tcp's words);
    ``stop`` where reading stopped (the first record at or past ``end``, the
    end of the file, or damage); ``error`` what stopped it early, or None."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b = &view[0] if view.shape[0] else <const unsigned char*>b""
    cdef Py_ssize_t n = view.shape[0], p = start
    cdef uint32_t incl
    cdef uint64_t ts, scale = 1000000000 // ticks
    cdef int64_t counts[N_REASONS]
    cdef int r, k
    cdef _Seg s
    cdef Pos* row
    cdef Py_ssize_t nrows = 0, cap = 0
    cdef int64_t records = 0
    cdef bytearray out = bytearray()
    error = None
    others = []
    for k in range(N_REASONS):
        counts[k] = 0
    while p < end:
        if n - p < 16:
            if n - p:
                error = f"record header cut short at byte {p}"
            break
        if not pcap_record(b + p, big_endian, scale, &ts, &incl):
            error = f"record at byte {p}: implausible captured length {incl}"
            break
        if n - p - 16 < <Py_ssize_t>incl:
            error = f"record at byte {p} cut short: {n - p - 16} of {incl} bytes"
            break
        records += 1
        r = _cap_parse(linktype, b + p + 16, incl, &s)
        if r < 0:
            counts[-r] += 1
        elif r == 0:
            others.append((p, ts, p + 16, incl))
        else:
            if nrows == cap:
                cap = cap * 2 if cap else 4096
                PyByteArray_Resize(out, cap * sizeof(Pos))
            row = (<Pos*>PyByteArray_AS_STRING(out)) + nrows
            nrows += 1
            memset(row, 0, sizeof(Pos))
            row.order = (rank << 40) | p
            row.ts = <int64_t>ts
            row.family = <uint8_t>s.family
            memcpy(row.src, b + p + 16 + s.src_at, 4 if s.family == 4 else 16)
            memcpy(row.dst, b + p + 16 + s.dst_at, 4 if s.family == 4 else 16)
            row.sport = s.sport
            row.dport = s.dport
            row.seq = s.seq
            row.ack = s.ack
            row.flags = s.flags
            row.length = s.length
            row.caplen = <int32_t>s.caplen
            row.at = p + 16 + s.payload_at
            row.key = _conn_key(s.family, row.src, s.sport, row.dst, s.dport)
        p += 16 + incl
    PyByteArray_Resize(out, nrows * sizeof(Pos))
    rows = np.frombuffer(out, dtype=POS_DTYPE) if nrows else np.zeros(0, dtype=POS_DTYPE)
    reasons = {_REASONS[k]: counts[k] for k in range(1, N_REASONS) if counts[k]}
    return rows, others, reasons, p, records, error


def pcap_boundary(buf, Py_ssize_t start, Py_ssize_t end, bint big_endian, uint64_t ticks, int64_t max_incl,
                  int64_t ref_sec, int confirm):
    """The first position in ``[start, end)`` of a pcap file (``buf``: all of
    it) where a record header is plausible (captured length at most
    ``max_incl`` and not above the original length, sub-second part below
    one tick second, time within a day of ``ref_sec`` when it is not
    negative) and the next ``confirm`` headers follow on from it (or the
    file ends exactly, or inside the last of them); -1 when none is."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b = &view[0] if view.shape[0] else <const unsigned char*>b""
    cdef Py_ssize_t n = view.shape[0], p, q
    cdef int i
    cdef int64_t sec, near
    cdef bint ok
    for p in range(start, min(end, n)):
        q = p
        near = ref_sec
        ok = True
        for i in range(confirm + 1):
            if q == n or (i > 0 and q > n):
                break  # the file ends exactly after a record, or inside the last one: confirmed
            if q > n - 16:
                ok = False
                break
            sec = _cap_ld32(b + q, big_endian)
            if _cap_ld32(b + q + 8, big_endian) > <uint64_t>max_incl or \
                    _cap_ld32(b + q + 12, big_endian) < _cap_ld32(b + q + 8, big_endian) or \
                    _cap_ld32(b + q + 12, big_endian) > CAP_MAX_RECORD or \
                    _cap_ld32(b + q + 4, big_endian) >= ticks or \
                    (near >= 0 and (sec - near > 86400 or near - sec > 86400)):
                ok = False
                break
            near = sec
            q += 16 + <Py_ssize_t>_cap_ld32(b + q + 8, big_endian)
        if ok:
            return p
    return -1
