# cython: language_level=3, boundscheck=False, wraparound=False
"""DumpLogSegments' text for the batches of a segment (``kafkaproto.log._text``); twin: ``_text_py``.

The record batches' own walkers (``records/_walk.pxi``: batch headers, v2
records, legacy message sets) run here with a sink that stages each batch's
records; the batch's lines are then written into one growing buffer: the
numbers in decimal, keys and values as Java's ``new String(bytes, UTF_8)``
shows them (:func:`java_string`).  Nothing here imports numpy or pyarrow:
``kafkaproto dump-log`` prints a segment with the interpreter, this module
and the codecs only.

A walk takes the batches of a window of the file that start before a stop,
and returns its text with what it found (:class:`TextWalk`); what to do
about damage (skip a bad batch, find the next readable one) is the
caller's (``log._segwalk``), shared with the Arrow reader.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_READ
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memchr

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_utf8_ok, _uv32, _uv64, _unzig32, _unzig64, _wadd, Cur, cur_init, cur_fail,
    cur_step, Step, MAX_PATH, VARINT_TRUNCATED, P_INDEX, F_PYTHON, F_MEMORY,
)
from kafkaproto._codec cimport crc32_of

from crc32c import crc32c as _crc32c

from kafkaproto.errors import KafkaProtocolError, RecordLimitError
from kafkaproto.records import _compression
from kafkaproto._limits import (
    DEFAULT_MAX_HEADERS_PER_BATCH as _DEFAULT_MAX_BATCH_HEADERS,
    DEFAULT_MAX_HEADERS_PER_RECORD as _DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_RECORDS_PER_BATCH as _DEFAULT_MAX_RECORDS,
    record_caps as _record_caps,
)
from kafkaproto.records._common import (
    batch_error as _batch_error,
    past_int64 as _past_int64,
    CallBudget as _CallBudget,
    batch_limit_error as _batch_limit_error,
    crc_error as _crc_error,
    legacy_failure as _legacy_failure,
    legacy_records_error as _legacy_records_error,
    record_failure as _record_failure,
)

COMPILED = True

cdef object _decompress = _compression.decompress

# what a walk's flags ask for (log._segwalk.TEXT_* are the same numbers)
cdef enum:
    T_DEEP = 1          # a line per record
    T_DATA = 2          # keys and values (print-data-log)
    T_SKIP_META = 4     # record lines without offsets and sizes
    T_CHECK_CRC = 8     # a batch whose CRC does not match is damage (else: isvalid: false)
    T_DECODE = 16       # keys and values through the hook (a decoder, or another encoding)

# why a walk stopped (log._segwalk.STOP_*)
cdef enum:
    S_END = 0           # at the stop, or the window's end on a batch boundary
    S_TRUNC = 1         # the window ends inside the batch at ``end`` (``need``: its bytes)
    S_BAD = 2           # the batch at ``end`` (``need`` bytes) is plausible but not whole: ``error``
    S_FRAMING = 3       # no batch starts at ``end``: ``error``

cdef int64_t _I32_MAX = 2147483647


# ---------------------------------------------------------------------------
# the output: one growing buffer

cdef struct Out:
    char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _room(Out* o, Py_ssize_t k) except -1:
    cdef Py_ssize_t cap
    cdef char* grown
    if o.n + k <= o.cap:
        return 0
    cap = max(2 * o.cap, o.n + k + 65536)
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
    cdef uint64_t u
    cdef bint neg = v < 0
    if o.n + 24 > o.cap:
        _room(o, 24)
    u = <uint64_t>(-(v + 1)) + 1 if neg else <uint64_t>v
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


cdef inline bint _cont(uint8_t b) noexcept nogil:
    return (b & 0xC0) == 0x80


cdef Py_ssize_t _java_utf8(const uint8_t* s, Py_ssize_t n, char* dst) noexcept nogil:
    """Java's ``new String(bytes, UTF_8)``, as UTF-8, into ``dst`` (room for 3 bytes a byte):
    every malformed sequence becomes U+FFFD by the JDK's rule for how many bytes it takes
    (which is not the "maximal subpart" rule of Python's ``errors="replace"``)."""
    cdef Py_ssize_t i = 0, d = 0, rem
    cdef uint8_t b1, b2, b3, b4
    cdef uint32_t c
    while i < n:
        b1 = s[i]
        if b1 < 0x80:
            dst[d] = <char>b1
            d += 1
            i += 1
            continue
        if (b1 >> 5) == 6 and (b1 & 0x1e) != 0:
            if n - i < 2:
                i = n
            elif not _cont(s[i + 1]):
                i += 1
            else:
                dst[d] = <char>b1
                dst[d + 1] = <char>s[i + 1]
                d += 2
                i += 2
                continue
        elif (b1 >> 4) == 14:
            rem = n - i
            if rem < 3:
                if rem > 1 and ((b1 == 0xE0 and (s[i + 1] & 0xE0) == 0x80) or not _cont(s[i + 1])):
                    i += 1
                else:
                    i = n
            else:
                b2 = s[i + 1]
                b3 = s[i + 2]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    i += 1 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 2
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    i += 3
                    if not (0xD800 <= c <= 0xDFFF):
                        dst[d] = <char>b1
                        dst[d + 1] = <char>b2
                        dst[d + 2] = <char>b3
                        d += 3
                        continue
        elif (b1 >> 3) == 30:
            rem = n - i
            if rem < 4:
                if b1 > 0xF4 or (rem > 1 and _mal4_2(b1, s[i + 1])):
                    i += 1
                elif rem > 2 and not _cont(s[i + 2]):
                    i += 2
                else:
                    i = n
            else:
                b2 = s[i + 1]
                b3 = s[i + 2]
                b4 = s[i + 3]
                c = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if _cont(b2) and _cont(b3) and _cont(b4) and 0x10000 <= c <= 0x10FFFF:
                    dst[d] = <char>b1
                    dst[d + 1] = <char>b2
                    dst[d + 2] = <char>b3
                    dst[d + 3] = <char>b4
                    d += 4
                    i += 4
                    continue
                if b1 > 0xF4 or _mal4_2(b1, b2):
                    i += 1
                elif not _cont(b3):
                    i += 2
                else:
                    i += 3
        else:
            i += 1
        # U+FFFD
        dst[d] = <char>0xEF
        dst[d + 1] = <char>0xBF
        dst[d + 2] = <char>0xBD
        d += 3
    return d


cdef inline bint _mal4_2(uint8_t b1, uint8_t b2) noexcept nogil:
    return (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF)) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)


cdef int _text(Out* o, const uint8_t* p, Py_ssize_t k) except -1:
    """Bytes as Java's new String(bytes, UTF_8) shows them."""
    if kp_utf8_ok(p, k):
        return _put(o, <const char*>p, k)
    if o.n + 3 * k > o.cap:
        _room(o, 3 * k)
    o.n += _java_utf8(p, k, o.p + o.n)
    return 0


def java_string(data) -> bytes:
    """``data`` as Java's ``new String(data, UTF_8)`` reads it, encoded back to UTF-8."""
    cdef const uint8_t[::1] v = memoryview(data).cast("B") if len(data) else b"\0"
    cdef Py_ssize_t n = len(data)
    cdef char* dst
    cdef Py_ssize_t d
    if n == 0:
        return b""
    dst = <char*>malloc(3 * n)
    if dst == NULL:
        raise MemoryError()
    try:
        d = _java_utf8(&v[0], n, dst)
        return PyBytes_FromStringAndSize(dst, d)
    finally:
        free(dst)


# ---------------------------------------------------------------------------
# a batch's records, staged by the walker's sinks

cdef struct TRec:
    int64_t offset
    int64_t ts
    const uint8_t* key      # NULL: null
    int32_t klen
    const uint8_t* value
    int32_t vlen
    int64_t h0              # first header key in the stage's header list
    int32_t hn
    uint32_t crc            # a legacy record's own CRC

cdef struct THdr:
    const uint8_t* p
    int32_t n

cdef struct TStage:
    TRec* r
    int64_t n
    int64_t cap
    THdr* h
    int64_t hn
    int64_t hcap
    int64_t base_offset
    int64_t base_ts
    int64_t max_ts
    bint log_append
    bint failed_alloc


cdef int _stage_room(TStage* st, int64_t more) noexcept nogil:
    cdef int64_t cap
    cdef void* grown
    if st.n + more <= st.cap:
        return 0
    cap = max(2 * st.cap, st.n + more, 256)
    grown = realloc(st.r, cap * sizeof(TRec))
    if grown == NULL:
        st.failed_alloc = True
        return -1
    st.r = <TRec*>grown
    st.cap = cap
    return 0


cdef int _hdr_add(TStage* st, const uint8_t* p, int32_t n) noexcept nogil:
    cdef int64_t cap
    cdef void* grown
    if st.hn == st.hcap:
        cap = max(2 * st.hcap, 256)
        grown = realloc(st.h, cap * sizeof(THdr))
        if grown == NULL:
            st.failed_alloc = True
            return -1
        st.h = <THdr*>grown
        st.hcap = cap
    st.h[st.hn].p = p
    st.h[st.hn].n = n
    st.hn += 1
    return 0


ctypedef TStage* RSink

cdef struct RCur:
    int unused          # (records are staged through the sink itself: no cursors)


cdef inline void rs_begin(RSink s, RCur* k) noexcept nogil:
    pass


cdef inline void rs_end(RSink s, RCur* k) noexcept nogil:
    pass


cdef inline int rs_header(Cur* c, RSink s, RCur* k, int32_t j, const uint8_t* kp, int32_t kn, const uint8_t* vp,
                          int32_t vn) noexcept nogil:
    if _hdr_add(s, kp, kn):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    return 0


cdef inline int rs_record(Cur* c, RSink s, RCur* k, int32_t i, bint control, Py_ssize_t start, int attributes,
                          int64_t timestamp_delta, int32_t offset_delta, const uint8_t* key, int32_t key_len,
                          const uint8_t* value, int32_t value_len, int32_t header_count) noexcept nogil:
    cdef TRec* t
    if _stage_room(s, 1):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    t = &s.r[s.n]
    t.offset = _wadd(s.base_offset, offset_delta)
    t.ts = s.max_ts if s.log_append else _wadd(s.base_ts, timestamp_delta)
    t.key = key
    t.klen = key_len
    t.value = value
    t.vlen = value_len
    t.hn = header_count
    t.h0 = s.hn - header_count
    t.crc = 0
    s.n += 1
    return 0


cdef class LSink:
    cdef TStage* st
    cdef object keep    # the decompressed inner messages the staged records point into


cdef int ls_buffer(LSink s, object buf, const uint8_t* base) except -1:
    s.keep = buf
    return 0


cdef int ls_begin(LSink s, int count, Py_ssize_t nbytes) except -1:
    if _stage_room(s.st, count):
        raise MemoryError()
    return 0


cdef int ls_end(LSink s, bint gone) except -1:
    return 0


cdef int ls_record(LSink s, const uint8_t* b, LMsg* m, int64_t offset, int64_t ts, int ts_type) except -1:
    cdef TRec* t
    if _stage_room(s.st, 1):
        raise MemoryError()
    t = &s.st.r[s.st.n]
    t.offset = offset
    t.ts = ts
    t.key = NULL if m.klen < 0 else b + m.kpos
    t.klen = m.klen
    t.value = NULL if m.vlen < 0 else b + m.vpos
    t.vlen = m.vlen
    t.h0 = 0
    t.hn = 0
    t.crc = m.crc
    s.st.n += 1
    return 0


include "kafkaproto/records/_walk.pxi"


cdef object _v2_error(Cur* c, object base, Py_ssize_t batch_at, object budget, int64_t batch_cap):
    path = [c.path[k].value for k in range(c.depth - 1, -1, -1)]
    return _record_failure(c.fail, c.what, c.at, c.x, c.y, path, base, batch_at, budget, batch_cap)


# ---------------------------------------------------------------------------
# the lines

cdef const char* _CODECS[8]
_CODECS[0] = b"none"
_CODECS[1] = b"gzip"
_CODECS[2] = b"snappy"
_CODECS[3] = b"lz4"
_CODECS[4] = b"zstd"
_CODECS[5] = b"unknown"
_CODECS[6] = b"unknown"
_CODECS[7] = b"unknown"

cdef const char* S_BASE = b"baseOffset: "
cdef const char* S_LAST = b" lastOffset: "
cdef const char* S_COUNT = b" count: "
cdef const char* S_BSEQ = b" baseSequence: "
cdef const char* S_LSEQ = b" lastSequence: "
cdef const char* S_PID = b" producerId: "
cdef const char* S_PEPOCH = b" producerEpoch: "
cdef const char* S_PLE = b" partitionLeaderEpoch: "
cdef const char* S_TXN = b" isTransactional: "
cdef const char* S_CTL = b" isControl: "
cdef const char* S_DH_EMPTY = b" deleteHorizonMs: OptionalLong.empty"
cdef const char* S_DH = b" deleteHorizonMs: OptionalLong["
cdef const char* S_LOFFSET = b"offset: "
cdef const char* S_POSITION = b" position: "
cdef const char* S_SIZE = b" size: "
cdef const char* S_MAGIC = b" magic: "
cdef const char* S_CODEC = b" compresscodec: "
cdef const char* S_CRC = b" crc: "
cdef const char* S_VALID = b" isvalid: "
cdef const char* S_TRUE = b"true"
cdef const char* S_FALSE = b"false"
cdef const char* S_KEY_FIRST = b"| key: "
cdef const char* S_KEY = b" key: "
cdef const char* S_PAYLOAD_FIRST = b"| payload: "
cdef const char* S_PAYLOAD = b" payload: "
cdef const char* S_CREATETIME = b" CreateTime: "
cdef const char* S_LOGAPPENDTIME = b" LogAppendTime: "
cdef const char* S_NOTIMESTAMPTYPE = b" NoTimestampType: "
cdef const char* S_ENDTXNMARKER = b" endTxnMarker: "
cdef const char* S_ABORT = b"ABORT"
cdef const char* S_COMMIT = b"COMMIT"
cdef const char* S_COORDINATOREPOCH = b" coordinatorEpoch: "
cdef const char* S_HEADERKEYS = b" headerKeys: ["
cdef const char* S_ISVALID_CRC = b" isValid: true crc: "
cdef const char* S_KEYSIZE = b" keySize: "
cdef const char* S_OFFSET = b"| offset: "
cdef const char* S_SEQUENCE = b" sequence: "
cdef const char* S_VALUESIZE = b" valueSize: "


cdef inline int _ts_type(Out* o, int magic, int attrs) except -1:
    if magic == 0:
        return _put(o, S_NOTIMESTAMPTYPE, 18)
    if attrs & 0x08:
        return _put(o, S_LOGAPPENDTIME, 16)
    return _put(o, S_CREATETIME, 13)


cdef inline int64_t _next_seq(int64_t base, int64_t delta) noexcept nogil:
    """Kafka's incrementSequence: past int32's top the sequence wraps to 0."""
    cdef int64_t seq
    if base < 0:
        return -1
    seq = base + delta
    return seq - _I32_MAX - 1 if seq > _I32_MAX else seq


cdef int _batch_line(Out* o, BatchView* v, LMsg* w, int64_t last_legacy_offset, bint valid) except -1:
    cdef int magic = v.magic
    cdef int attrs = v.attrs if magic == 2 else w.attrs
    if magic == 2:
        _put(o, S_BASE, 12)
        _int(o, v.base_offset)
        _put(o, S_LAST, 13)
        _int(o, _wadd(v.base_offset, v.lod))
        _put(o, S_COUNT, 8)
        _int(o, v.count)
        _put(o, S_BSEQ, 15)
        _int(o, v.bseq)
        _put(o, S_LSEQ, 15)
        _int(o, _next_seq(v.bseq, v.lod))
        _put(o, S_PID, 13)
        _int(o, v.pid)
        _put(o, S_PEPOCH, 16)
        _int(o, v.pepoch)
        _put(o, S_PLE, 23)
        _int(o, v.ple)
        _put(o, S_TXN, 18)
        _put(o, S_TRUE, 4) if attrs & 0x10 else _put(o, S_FALSE, 5)
        _put(o, S_CTL, 12)
        _put(o, S_TRUE, 4) if attrs & 0x20 else _put(o, S_FALSE, 5)
        if attrs & 0x40:
            _put(o, S_DH, 31)
            _int(o, v.base_ts)
            _put(o, b"]", 1)
        else:
            _put(o, S_DH_EMPTY, 36)
    else:
        _put(o, S_LOFFSET, 8)
        _int(o, last_legacy_offset)
    _put(o, S_POSITION, 11)
    _int(o, v.at)
    _ts_type(o, magic, attrs)
    if magic == 2:
        _int(o, v.max_ts)
    else:
        _int(o, w.ts if magic == 1 else -1)
    _put(o, S_SIZE, 7)
    _int(o, 12 + <int64_t>v.size)
    _put(o, S_MAGIC, 8)
    _int(o, magic)
    _put(o, S_CODEC, 16)
    _put(o, _CODECS[attrs & 7], len(_CODECS[attrs & 7]))
    _put(o, S_CRC, 6)
    _int(o, v.crc if magic == 2 else w.crc)
    _put(o, S_VALID, 10)
    _put(o, S_TRUE, 4) if valid else _put(o, S_FALSE, 5)
    _put(o, b"\n", 1)
    return 0


cdef class TextWalk:
    """Prints the batches of windows of one segment file as DumpLogSegments does.

    ``flags``: T_* bits (log._segwalk.TEXT_*).  ``hook(kind, offset, key, value)``
    gives the text Python makes: kind -1 a data record's key and value (with
    T_DECODE: a decoder's, or another encoding) → (key text or None, value text
    or None) as bytes; kind 2.. a KRaft control record of that type → its
    text (`` LeaderChange: {...}``).  ``gaps``: offset before → offset after,
    for records whose offsets do not follow (deep iteration only), as Kafka's
    tool lists them; ``last``: the last record's offset so far (-1 at first).
    """

    cdef int flags
    cdef object hook
    cdef int32_t max_records, max_headers
    cdef int64_t max_batch_headers
    cdef object limit
    cdef public object gaps
    cdef public int64_t last
    cdef public int64_t batches
    cdef TStage st
    cdef Out o          # the text of a walk (kept from walk to walk: no fresh pages each time)

    def __cinit__(self):
        self.st.r = NULL
        self.st.h = NULL
        self.st.n = self.st.cap = self.st.hn = self.st.hcap = 0
        self.o.p = NULL
        self.o.n = self.o.cap = 0

    def __init__(self, int flags, hook=None, *, max_decompressed_size=_compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
                 max_records_per_batch=_DEFAULT_MAX_RECORDS, max_headers_per_record=_DEFAULT_MAX_HEADERS,
                 max_headers_per_batch=_DEFAULT_MAX_BATCH_HEADERS):
        self.flags = flags
        self.hook = hook
        self.limit = max_decompressed_size
        self.max_records, self.max_headers, self.max_batch_headers = _record_caps(
            max_records_per_batch, max_headers_per_record, max_headers_per_batch)
        self.gaps = {}
        self.last = -1
        self.batches = 0

    def __dealloc__(self):
        free(self.st.r)
        free(self.st.h)
        free(self.o.p)

    def walk(self, buf, Py_ssize_t base, Py_ssize_t start, Py_ssize_t stop, write=None):
        """The batches of ``buf`` (the file's bytes from ``base``) that start in ``[start, stop)``
        → ``(text, end, status, need, batches, first_base, first_last, last_base, last_last, magic,
        error)``: ``end`` where the walk stopped, ``status`` why (S_*), ``need`` the bytes of the
        batch there (S_TRUNC, S_BAD), the base and last offsets of the first and last batches
        printed, the magic of the last and the largest of its records' timestamps, ``error`` what
        is wrong at ``end``
        (S_BAD, S_FRAMING).  With ``write``, the text goes to ``write(view)`` (a view of the walker's
        own buffer, valid during the call) and ``text`` is None."""
        cdef Py_buffer view
        cdef Out* o = &self.o
        cdef BatchView v
        cdef LMsg w
        cdef Cur c
        cdef Step steps[MAX_PATH]
        cdef Py_buffer rview
        cdef const uint8_t* p
        cdef const uint8_t* rb
        cdef Py_ssize_t n, pos, rstart, rend
        cdef Budget budget
        cdef int st, status = S_END, magic = -1
        cdef int64_t need = 0, nb = 0, headers = 0, shift = 0, last_legacy = 0, mark, k
        cdef int64_t first_base = -1, first_last = -1, last_base = -1, last_last = -1, last_ts = -1
        cdef bint valid
        cdef LSink ls = LSink()
        error = None
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        o.n = 0
        try:
            p = <const uint8_t*>view.buf
            n = view.len
            if stop > base + n:
                stop = base + n
            mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
            _room(o, min(max(4 * (stop - start), 4096), 1 << 28))
            ls.st = &self.st
            pos = start - base
            budget_init(&budget, 1 << 62, 1 << 62, 1 << 62)
            while pos + base < stop:
                try:
                    st = _batch_at(p, pos, n, &v)
                except KafkaProtocolError as exc:
                    status, error = S_FRAMING, exc
                    break
                if st == BATCH_END:
                    break
                if st == BATCH_TRUNCATED:
                    status = S_TRUNC
                    need = 61 if v.size < 0 else 12 + <int64_t>v.size
                    break
                self.st.n = 0
                self.st.hn = 0
                self.st.failed_alloc = False
                mark = o.n
                valid = True
                try:
                    if v.magic < 2:
                        _legacy_walk(mv, p, n, &v, self.flags & T_CHECK_CRC, self.limit, ls, &w,
                                     self.max_records, &budget, True, &shift)
                        last_legacy = w.offset
                        v.crc = w.crc
                        if not (self.flags & T_CHECK_CRC):
                            valid = crc32_of(p + pos + 16, v.end - pos - 16) == w.crc
                    else:
                        region = _v2_records(&v, mv, self.flags & T_CHECK_CRC, self.limit, self.max_records,
                                             &budget, &rstart, &rend)
                        if not (self.flags & T_CHECK_CRC):
                            valid = _crc32c(mv[pos + 21:v.end]) == v.crc
                        if region is None:
                            rb = p
                        else:
                            PyObject_GetBuffer(region, &rview, PyBUF_SIMPLE)
                            rb = <const uint8_t*>rview.buf
                        try:
                            self.st.base_offset = v.base_offset
                            self.st.base_ts = v.base_ts
                            self.st.max_ts = v.max_ts
                            self.st.log_append = v.attrs & 0x08
                            cur_init(&c, rb, rstart, rend)
                            c.path = steps
                            if self.flags & T_DEEP and _stage_room(&self.st, v.count):
                                raise MemoryError()
                            st = _walk_records(&c, v.count, v.attrs & 0x20, &self.st, self.max_headers,
                                               self.max_batch_headers, &headers)
                            if st and c.fail == F_MEMORY:
                                raise MemoryError()
                            if st:
                                raise _v2_error(&c, 0 if region is None else None, v.at, budget_call(&budget),
                                                self.max_batch_headers)
                            self._lines(o, &v, &w, last_legacy, valid)
                        finally:
                            if region is not None:
                                PyBuffer_Release(&rview)
                    if v.magic < 2:
                        self._lines(o, &v, &w, last_legacy, valid)
                except KafkaProtocolError as exc:
                    o.n = mark
                    status, error = S_BAD, exc
                    need = 12 + <int64_t>v.size
                    break
                if nb == 0:
                    first_base = v.base_offset if v.magic == 2 else (self.st.r[0].offset if self.st.n else w.offset)
                    first_last = _wadd(v.base_offset, v.lod) if v.magic == 2 else w.offset
                last_base = v.base_offset if v.magic == 2 else (self.st.r[0].offset if self.st.n else w.offset)
                last_last = _wadd(v.base_offset, v.lod) if v.magic == 2 else w.offset
                magic = v.magic
                # the largest of its records' timestamps (what Kafka's tool checks a time index entry against)
                last_ts = -1
                for k in range(self.st.n):
                    if self.st.r[k].ts > last_ts:
                        last_ts = self.st.r[k].ts
                nb += 1
                pos = v.end
            self.batches += nb
            if write is None:
                text = PyBytes_FromStringAndSize(o.p, o.n)
            else:
                text = None
                if o.n:
                    write(PyMemoryView_FromMemory(o.p, o.n, PyBUF_READ))
        finally:
            o.n = 0
            PyBuffer_Release(&view)
        return (text, pos + base, status, need, nb, first_base, first_last, last_base, last_last, magic, last_ts,
                error)

    cdef int _lines(self, Out* o, BatchView* v, LMsg* w, int64_t last_legacy, bint valid) except -1:
        """The batch line, then (deep) a line per staged record."""
        cdef int flags = self.flags
        cdef int magic = v.magic
        cdef int attrs = v.attrs if magic == 2 else w.attrs
        cdef bint ctl = magic == 2 and (attrs & 0x20) != 0
        cdef bint first
        cdef int64_t r, j, k
        cdef int ctype
        cdef TRec* t
        cdef TStage* st = &self.st
        _batch_line(o, v, w, last_legacy, valid)
        if not (flags & T_DEEP):
            return 0
        for r in range(st.n):
            t = &st.r[r]
            if t.offset != self.last + 1:
                self.gaps[self.last] = t.offset
            self.last = t.offset
            first = True
            if not (flags & T_SKIP_META):
                first = False
                _put(o, S_OFFSET, 10)
                _int(o, t.offset)
                _ts_type(o, magic, attrs)
                _int(o, t.ts)
                _put(o, S_KEYSIZE, 10)
                _int(o, t.klen)
                _put(o, S_VALUESIZE, 12)
                _int(o, t.vlen)
                if magic == 2:
                    _put(o, S_SEQUENCE, 11)
                    _int(o, _next_seq(v.bseq, t.offset - v.base_offset))
                    _put(o, S_HEADERKEYS, 14)
                    for j in range(t.hn):
                        if j:
                            _put(o, b",", 1)
                        k = t.h0 + j
                        _text(o, st.h[k].p, st.h[k].n)
                    _put(o, b"]", 1)
                else:
                    _put(o, S_ISVALID_CRC, 20)
                    _int(o, t.crc)
                if ctl:
                    ctype = <int16_t>kp_ld16(t.key + 2)
                    if ctype == 0 or ctype == 1:
                        _put(o, S_ENDTXNMARKER, 15)
                        _put(o, S_ABORT, 5) if ctype == 0 else _put(o, S_COMMIT, 6)
                        _put(o, S_COORDINATOREPOCH, 19)
                        _int(o, <int32_t>kp_ld32(t.value + 2))
                    else:
                        _lit(o, self.hook(ctype, t.offset, _blob(t.key, t.klen), _blob(t.value, t.vlen)))
            if flags & T_DATA and not ctl:
                if flags & T_DECODE:
                    kt, vt = self.hook(-1, t.offset, _blob(t.key, t.klen), _blob(t.value, t.vlen))
                    if kt is not None:
                        _put(o, S_KEY_FIRST, 7) if first else _put(o, S_KEY, 6)
                        first = False
                        _lit(o, kt)
                    if vt is not None:
                        _put(o, S_PAYLOAD_FIRST, 11) if first else _put(o, S_PAYLOAD, 10)
                        _lit(o, vt)
                else:
                    if t.key != NULL:
                        _put(o, S_KEY_FIRST, 7) if first else _put(o, S_KEY, 6)
                        first = False
                        _text(o, t.key, t.klen)
                    if t.value != NULL:
                        _put(o, S_PAYLOAD_FIRST, 11) if first else _put(o, S_PAYLOAD, 10)
                        _text(o, t.value, t.vlen)
            _put(o, b"\n", 1)
        return 0


cdef inline object _blob(const uint8_t* p, int32_t n):
    if p == NULL:
        return None
    return PyBytes_FromStringAndSize(<const char*>p, n)


# ---------------------------------------------------------------------------
# finding the next readable batch after damage

cdef bint _plausible(const uint8_t* p, Py_ssize_t at, Py_ssize_t n, int64_t size_left, int64_t after,
                     int magic) noexcept nogil:
    """Whether a whole batch of ``magic`` whose checksum matches starts at ``at`` (its bytes all in
    ``p[0:n]``), with offsets above ``after``; ``size_left``: the file's bytes from ``at`` on."""
    cdef int32_t size = <int32_t>kp_ld32(p + at + 8)
    cdef int64_t base = <int64_t>kp_ld64(p + at)
    cdef int32_t lod, count
    if size < (49 if magic == 2 else (22 if magic == 1 else 14)) or size > size_left - 12 or at + 12 + size > n:
        return False
    if magic == 2:
        lod = <int32_t>kp_ld32(p + at + 23)
        count = <int32_t>kp_ld32(p + at + 57)
        if base <= after or lod < 0 or count < 0 or count > size or (kp_ld16(p + at + 21) & 7) > 4:
            return False
        return True
    # legacy: a message's offset is its last (a compressed wrapper's) or its own
    return base > after


def find_batch(buf, Py_ssize_t base, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t size, int64_t after, int magic):
    """The first position in ``[start, stop)`` of the file where a batch of ``magic`` starts that
    is whole, checks out (size, offsets above ``after``, CRC) and lies in ``buf`` (the file's
    bytes from ``base``; ``size``: the file's) → ``(0, position)``; ``(1, p)``: none before
    ``p`` (the buffer's end: go on from there); ``(2, p)``: a candidate at ``p`` runs past the
    buffer (read from there)."""
    cdef Py_buffer view
    cdef const uint8_t* p
    cdef Py_ssize_t n, at, q, hi
    cdef int32_t bsize
    cdef const void* hit
    cdef uint32_t crc
    cdef uint8_t want = <uint8_t>magic
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        p = <const uint8_t*>view.buf
        n = view.len
        at = start - base
        hi = min(stop - base, n - 17)
        while at < hi:
            # the magic byte sits 16 bytes into a batch
            hit = memchr(p + at + 16, want, hi - at)
            if hit == NULL:
                break
            at = <const uint8_t*>hit - p - 16
            if at + 61 > n:
                return (2, at + base)
            bsize = <int32_t>kp_ld32(p + at + 8)
            if 14 <= bsize <= size - (at + base) - 12 and at + 12 + bsize > n:
                return (2, at + base)
            if _plausible(p, at, n, size - (at + base), after, magic):
                if magic == 2:
                    crc = _crc32c(PyMemoryView_FromMemory(<char*>p + at + 21, 12 + bsize - 21, PyBUF_READ))
                    if crc == kp_ld32(p + at + 17):
                        return (0, at + base)
                elif crc32_of(p + at + 16, 12 + bsize - 16) == kp_ld32(p + at + 12):
                    return (0, at + base)
            at += 1
        return (1, base + max(at, hi))
    finally:
        PyBuffer_Release(&view)
