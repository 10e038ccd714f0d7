# cython: language_level=3, boundscheck=False, wraparound=False
"""DumpLogSegments' lines for the batches and records of a window (``kafkaproto.log._text``); twin: ``_text_py``.

The batch lines come made (Arrow's string kernels build them, a few per
window); each is followed by its records' lines, written here in one pass
into one buffer: the numbers in decimal, keys and values as Java's UTF-8
decoder shows them (valid UTF-8 as is; anything else through Python's
decoder with U+FFFD for the bad sequences).
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize

from kafkaproto._wire cimport kp_utf8_ok

COMPILED = True

cdef int64_t _I32_MAX = 2147483647

# the fixed pieces of a line, as C strings (no Python object in the loop)
cdef const char* S_KEY_FIRST = b"| key: "
cdef const char* S_KEY = b" key: "
cdef const char* S_PAYLOAD_FIRST = b"| payload: "
cdef const char* S_PAYLOAD = b" payload: "
cdef const char* S_COMMA = b","
cdef const char* S_CONTROLTYPE = b" controlType: "
cdef const char* S_COORDINATOREPOCH = b" coordinatorEpoch: "
cdef const char* S_CREATETIME = b" CreateTime: "
cdef const char* S_ENDTXNMARKER = b" endTxnMarker: "
cdef const char* S_HEADERKEYS = b" headerKeys: ["
cdef const char* S_ISVALID_TRUE_CRC = b" isValid: true crc: "
cdef const char* S_KEYSIZE = b" keySize: "
cdef const char* S_LOGAPPENDTIME = b" LogAppendTime: "
cdef const char* S_LPAREN = b"("
cdef const char* S_NL = b"\n"
cdef const char* S_NOTIMESTAMPTYPE = b" NoTimestampType: "
cdef const char* S_NULL = b"null"
cdef const char* S_OFFSET = b"| offset: "
cdef const char* S_RBRACKET = b"]"
cdef const char* S_RPAREN = b")"
cdef const char* S_SEQUENCE = b" sequence: "
cdef const char* S_VALUESIZE = b" valueSize: "

cdef struct Out:
    char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _room(Out* o, Py_ssize_t k) except -1:
    cdef Py_ssize_t cap
    cdef char* grown
    if o.n + k <= o.cap:
        return 0
    cap = max(2 * o.cap, o.n + k + 4096)
    grown = <char*>realloc(o.p, cap)
    if grown == NULL:
        raise MemoryError()
    o.p = grown
    o.cap = cap
    return 0


cdef inline int _put(Out* o, const char* s, Py_ssize_t k) except -1:
    if o.n + k > o.cap:
        _room(o, k)
    memcpy(o.p + o.n, s, k)
    o.n += k
    return 0


cdef inline int _lit(Out* o, bytes s) except -1:
    return _put(o, <const char*>s, len(s))


cdef inline int _int(Out* o, int64_t v) except -1:
    cdef char tmp[24]
    cdef int i = 24
    cdef unsigned long long u
    cdef bint neg = v < 0
    if o.n + 24 > o.cap:
        _room(o, 24)
    u = <unsigned long long>(-(v + 1)) + 1 if neg else <unsigned long long>v
    while True:
        i -= 1
        tmp[i] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            break
    if neg:
        i -= 1
        tmp[i] = 45
    memcpy(o.p + o.n, tmp + i, 24 - i)
    o.n += 24 - i
    return 0


cdef int _text(Out* o, const uint8_t* p, Py_ssize_t k) except -1:
    """Bytes as Java's new String(bytes, UTF_8) shows them."""
    if kp_utf8_ok(p, k):
        return _put(o, <const char*>p, k)
    fixed = (<bytes>PyBytes_FromStringAndSize(<const char*>p, k)).decode("utf-8", "replace").encode("utf-8")
    return _lit(o, fixed)


_CONTROL = {0: b"ABORT", 1: b"COMMIT", 2: b"LEADER_CHANGE", 3: b"SNAPSHOT_HEADER", 4: b"SNAPSHOT_FOOTER",
            5: b"KRAFT_VERSION", 6: b"KRAFT_VOTERS"}


def dump_lines(const int64_t[::1] counts, const int64_t[::1] bl_offs, const uint8_t[::1] bl_data,
               const int64_t[::1] magic, const int64_t[::1] attrs, const int64_t[::1] base_offset,
               const int64_t[::1] base_seq, const int64_t[::1] ctl_type, const int64_t[::1] ctl_epoch,
               const int64_t[::1] offset, const int64_t[::1] ts_ms, const uint8_t[::1] ts_ok,
               const int64_t[::1] k_offs, const uint8_t[::1] k_data, const uint8_t[::1] k_ok,
               const int64_t[::1] v_offs, const uint8_t[::1] v_data, const uint8_t[::1] v_ok,
               const int64_t[::1] h_offs, const int64_t[::1] hk_offs, const uint8_t[::1] hk_data,
               const int64_t[::1] crcs, bint deep, bint data, bint skip_meta):
    """Every batch line (``bl_*``: one per batch, each ending in a newline), each followed (``deep``)
    by its records' lines → bytes.  Per record: its offset, timestamp (ms; ``ts_ok`` 0: out of
    range), key and value (Arrow offsets, data, validity), header keys (``h_offs``: a list
    column's offsets into ``hk_*``) and, for legacy batches, its own CRC (``crcs``)."""
    cdef Out o
    cdef Py_ssize_t nb = counts.shape[0], b, r = 0, j, end, a, z, n
    cdef int64_t seq, m, at
    cdef bint ctl, first
    cdef const uint8_t* kd = &k_data[0] if k_data.shape[0] else NULL
    cdef const uint8_t* vd = &v_data[0] if v_data.shape[0] else NULL
    cdef const uint8_t* hd = &hk_data[0] if hk_data.shape[0] else NULL
    o.n = 0
    o.cap = bl_offs[nb] - bl_offs[0] + 4096
    if deep:  # the data, the header keys and their commas, and the fixed text of a line (at most 200 bytes)
        n = offset.shape[0]
        o.cap += (k_offs[n] - k_offs[0]) + (v_offs[n] - v_offs[0]) + 200 * n
        o.cap += (hk_offs[hk_offs.shape[0] - 1] - hk_offs[0]) + (h_offs[n] - h_offs[0])
    o.p = <char*>malloc(o.cap)
    if o.p == NULL:
        raise MemoryError()
    try:
        for b in range(nb):
            _put(&o, <const char*>&bl_data[0] + bl_offs[b] - bl_offs[0] if bl_data.shape[0] else NULL,
                 bl_offs[b + 1] - bl_offs[b])
            if not deep:
                continue
            m = magic[b]
            ctl = m >= 2 and (attrs[b] & 0x20) != 0
            end = r + counts[b]
            while r < end:
                first = True
                if not skip_meta:
                    first = False
                    _put(&o, S_OFFSET, 10)
                    _int(&o, offset[r])
                    if m == 0:
                        _put(&o, S_NOTIMESTAMPTYPE, 18)
                    elif attrs[b] & 0x08:
                        _put(&o, S_LOGAPPENDTIME, 16)
                    else:
                        _put(&o, S_CREATETIME, 13)
                    if ts_ok[r]:
                        _int(&o, ts_ms[r])
                    else:
                        _put(&o, S_NULL, 4)
                    _put(&o, S_KEYSIZE, 10)
                    _int(&o, k_offs[r + 1] - k_offs[r] if k_ok[r] else -1)
                    _put(&o, S_VALUESIZE, 12)
                    _int(&o, v_offs[r + 1] - v_offs[r] if v_ok[r] else -1)
                    if m >= 2:
                        _put(&o, S_SEQUENCE, 11)
                        if base_seq[b] < 0:
                            _int(&o, -1)
                        else:
                            seq = base_seq[b] + (offset[r] - base_offset[b])
                            _int(&o, seq - _I32_MAX - 1 if seq > _I32_MAX else seq)
                        _put(&o, S_HEADERKEYS, 14)
                        for j in range(h_offs[r], h_offs[r + 1]):
                            if j > h_offs[r]:
                                _put(&o, S_COMMA, 1)
                            _put(&o, <const char*>hd + hk_offs[j] - hk_offs[0], hk_offs[j + 1] - hk_offs[j])
                        _put(&o, S_RBRACKET, 1)
                    else:
                        _put(&o, S_ISVALID_TRUE_CRC, 20)
                        _int(&o, crcs[r])
                    if ctl:
                        if ctl_type[b] == 0 or ctl_type[b] == 1:
                            _put(&o, S_ENDTXNMARKER, 15)
                            _lit(&o, _CONTROL[ctl_type[b]])
                            _put(&o, S_COORDINATOREPOCH, 19)
                            _int(&o, ctl_epoch[b])
                        else:
                            _put(&o, S_CONTROLTYPE, 14)
                            _lit(&o, _CONTROL.get(ctl_type[b], b"UNKNOWN"))
                            _put(&o, S_LPAREN, 1)
                            _int(&o, ctl_type[b])
                            _put(&o, S_RPAREN, 1)
                if data and not ctl:
                    if k_ok[r]:
                        _put(&o, S_KEY_FIRST, 7) if first else _put(&o, S_KEY, 6)
                        first = False
                        a, z = k_offs[r] - k_offs[0], k_offs[r + 1] - k_offs[0]
                        _text(&o, kd + a, z - a)
                    if v_ok[r]:
                        _put(&o, S_PAYLOAD_FIRST, 11) if first else _put(&o, S_PAYLOAD, 10)
                        a, z = v_offs[r] - v_offs[0], v_offs[r + 1] - v_offs[0]
                        _text(&o, vd + a, z - a)
                _put(&o, S_NL, 1)
                r += 1
        return PyBytes_FromStringAndSize(o.p, o.n)
    finally:
        free(o.p)
