# Record batches: included at the end of _codec.pyx, so the varint cores,
# byte loads and the Reader/Writer above are used directly.
#
# The v2 batch framing and its per-record loop run here; legacy message sets
# (magic 0/1: old segments and old clients, never bulk traffic now) and the
# codecs are shared Python (kafkaproto._records_legacy, ._compression), as
# are the batch objects and every error message (._records_common), so the
# twin in kafkaproto._records_py raises exactly the same errors.

cimport cython
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.long cimport PyLong_FromLongLong
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)

import time as _time

from crc32c import crc32c as _crc32c

from kafkaproto import _compression
from kafkaproto._records_common import (
    DEFAULT_MAX_DECOMPRESSED_SIZE as _DEFAULT_MAX_DECOMPRESSED,
    Record as _RecordCls,
    RecordBatch as _RecordBatch,
    TruncatedBatch as _TruncatedBatch,
    VARINT_PROBLEMS as _VARINT_PROBLEMS,
    as_blob as _as_blob,
    batch_error as _batch_error,
    codec_number as _codec_number,
    control_record as _control_record,
    crc_error as _crc_error,
    header_pair as _header_pair,
    record_error as _record_error,
    unpack_record as _unpack_record,
)
from kafkaproto._records_legacy import decode_legacy as _decode_legacy, encode_legacy as _encode_legacy

cdef object _decompress = _compression.decompress
cdef object _compress = _compression.compress


# ---------------------------------------------------------------------------
# Record: the shared __slots__ class (kafkaproto._records_common.Record),
# filled here by slot offset: no __init__ call per record, and Python code
# reading r.key gets the interpreter's fast slot path (a Cython property
# takes the slow generic one).

Record = _RecordCls

cdef Py_ssize_t _R_OFFSET, _R_TIMESTAMP, _R_TS_TYPE, _R_ATTRIBUTES, _R_KEY, _R_VALUE, _R_HEADERS, _R_CONTROL


cdef bint _slots_ok() except -1:
    # the slot helpers are the message engine's (_engine.pxi)
    global _R_OFFSET, _R_TIMESTAMP, _R_TS_TYPE, _R_ATTRIBUTES, _R_KEY, _R_VALUE, _R_HEADERS, _R_CONTROL
    _R_OFFSET = _slot_offset(_RecordCls, "offset")
    _R_TIMESTAMP = _slot_offset(_RecordCls, "timestamp")
    _R_TS_TYPE = _slot_offset(_RecordCls, "timestamp_type")
    _R_ATTRIBUTES = _slot_offset(_RecordCls, "attributes")
    _R_KEY = _slot_offset(_RecordCls, "key")
    _R_VALUE = _slot_offset(_RecordCls, "value")
    _R_HEADERS = _slot_offset(_RecordCls, "headers")
    _R_CONTROL = _slot_offset(_RecordCls, "control")
    return min(_R_OFFSET, _R_TIMESTAMP, _R_TS_TYPE, _R_ATTRIBUTES, _R_KEY, _R_VALUE, _R_HEADERS, _R_CONTROL) > 0


cdef bint _SLOTS = _slots_ok()
cdef tuple _NO_ARGS = ()


cdef inline object _new_record(object offset, object timestamp, object ts_type, object attributes, object key,
                               object value, object headers, object control):
    if not _SLOTS:  # an interpreter whose slots are not plain object fields
        return _RecordCls(key, value, headers, timestamp, offset, ts_type, attributes, control)
    rec = kp_new_instance(_RecordCls, _NO_ARGS)
    kp_slot_set(rec, _R_OFFSET, offset)
    kp_slot_set(rec, _R_TIMESTAMP, timestamp)
    kp_slot_set(rec, _R_TS_TYPE, ts_type)
    kp_slot_set(rec, _R_ATTRIBUTES, attributes)
    kp_slot_set(rec, _R_KEY, key)
    kp_slot_set(rec, _R_VALUE, value)
    kp_slot_set(rec, _R_HEADERS, headers)
    kp_slot_set(rec, _R_CONTROL, control)
    return rec


# ---------------------------------------------------------------------------
# decode

cdef inline int64_t _wadd(int64_t a, int64_t b) noexcept nogil:
    # Java's long arithmetic: wrap around instead of overflowing.
    return <int64_t>(<uint64_t>a + <uint64_t>b)


cdef object _fail(Py_ssize_t i, str field, str detail, Py_ssize_t at, object base, Py_ssize_t batch_at):
    raise _record_error(i, field, detail, at, base, batch_at)


cdef class _KeyCache:
    # Header keys repeat from record to record: the str made for the bytes at
    # header slot j is reused while the next record's slot j has the same bytes.
    cdef const unsigned char* ptr[8]
    cdef Py_ssize_t size[8]
    cdef list strs

    def __cinit__(self):
        cdef int j
        for j in range(8):
            self.size[j] = -1
            self.ptr[j] = NULL
        self.strs = [None] * 8

    cdef inline object get(self, int32_t j, const unsigned char* p, Py_ssize_t n):
        # raises UnicodeDecodeError on bad UTF-8
        cdef object s
        if j < 8 and self.size[j] == n and memcmp(self.ptr[j], p, n) == 0:
            return self.strs[j]
        s = PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
        if j < 8:
            self.ptr[j] = p
            self.size[j] = n
            self.strs[j] = s
        return s


cdef list _check_v2(const unsigned char* b, Py_ssize_t pos, Py_ssize_t end, int32_t count, int attrs, object base,
                    Py_ssize_t batch_at):
    # Walks b[pos:end] (`count` records) and raises the first error, in the
    # very order the twin finds them; builds nothing but the control records
    # of a control batch (returned; None otherwise).
    cdef list controls = [] if attrs & 0x20 else None
    cdef Py_ssize_t start, rend, at
    cdef int32_t i, j, length, klen, vlen, hcount, hk, hv
    cdef Py_ssize_t kpos = 0, vpos = 0
    cdef uint32_t u = 0
    cdef uint64_t u64 = 0
    cdef int st
    cdef _KeyCache cache = _KeyCache()
    for i in range(count):
        start = pos
        st = _uv32(b, &pos, end, &u)
        if st:
            _fail(i, "length", _VARINT_PROBLEMS[st], start, base, batch_at)
        length = _unzig32(u)
        if length < 0 or length > end - pos:
            _fail(i, "length", f"length {length} outside the {end - pos} bytes left", start, base, batch_at)
        rend = pos + length
        if pos >= rend:
            _fail(i, "attributes", _VARINT_PROBLEMS[1], pos, base, batch_at)
        pos += 1
        at = pos
        st = _uv64(b, &pos, rend, &u64)
        if st:
            _fail(i, "timestamp delta", _VARINT_PROBLEMS[st], at, base, batch_at)
        at = pos
        st = _uv32(b, &pos, rend, &u)
        if st:
            _fail(i, "offset delta", _VARINT_PROBLEMS[st], at, base, batch_at)
        at = pos
        st = _uv32(b, &pos, rend, &u)
        if st:
            _fail(i, "key length", _VARINT_PROBLEMS[st], at, base, batch_at)
        klen = _unzig32(u)
        if klen < -1 or klen > rend - pos:
            _fail(i, "key length", f"key length {klen} invalid with {rend - pos} bytes left", at, base, batch_at)
        kpos = pos
        if klen > 0:
            pos += klen
        at = pos
        st = _uv32(b, &pos, rend, &u)
        if st:
            _fail(i, "value length", _VARINT_PROBLEMS[st], at, base, batch_at)
        vlen = _unzig32(u)
        if vlen < -1 or vlen > rend - pos:
            _fail(i, "value length", f"value length {vlen} invalid with {rend - pos} bytes left", at, base, batch_at)
        vpos = pos
        if vlen > 0:
            pos += vlen
        at = pos
        st = _uv32(b, &pos, rend, &u)
        if st:
            _fail(i, "header count", _VARINT_PROBLEMS[st], at, base, batch_at)
        hcount = _unzig32(u)
        if hcount < 0 or hcount > rend - pos:
            _fail(i, "header count", f"header count {hcount} invalid with {rend - pos} bytes left", at, base, batch_at)
        for j in range(hcount):
            at = pos
            st = _uv32(b, &pos, rend, &u)
            if st:
                _fail(i, f"headers[{j}].key length", _VARINT_PROBLEMS[st], at, base, batch_at)
            hk = _unzig32(u)
            if hk < 0 or hk > rend - pos:
                _fail(i, f"headers[{j}].key length", f"header key length {hk} invalid with {rend - pos} bytes left",
                      at, base, batch_at)
            try:
                cache.get(j, b + pos, hk)
            except UnicodeDecodeError:
                _fail(i, f"headers[{j}].key", "invalid UTF-8", pos, base, batch_at)
            pos += hk
            at = pos
            st = _uv32(b, &pos, rend, &u)
            if st:
                _fail(i, f"headers[{j}].value length", _VARINT_PROBLEMS[st], at, base, batch_at)
            hv = _unzig32(u)
            if hv < -1 or hv > rend - pos:
                _fail(i, f"headers[{j}].value length", f"header value length {hv} invalid with {rend - pos} bytes left",
                      at, base, batch_at)
            if hv > 0:
                pos += hv
        if pos != rend:
            _fail(i, "length", f"{rend - pos} bytes left after the record's fields", pos, base, batch_at)
        if controls is not None:
            controls.append(_control_record(
                None if klen < 0 else PyBytes_FromStringAndSize(<const char*>(b + kpos), klen),
                None if vlen < 0 else PyBytes_FromStringAndSize(<const char*>(b + vpos), vlen),
                batch_at if base is None else <Py_ssize_t>base + start))
    if pos != end:
        raise _record_error(None, None, f"{end - pos} bytes after the last of {count} records", pos, base, batch_at)
    return controls


cdef class RecordList:
    """The records of a v2 batch, made when read.

    Decoding checks every record but builds none: iterating (or indexing)
    builds each :class:`Record` then, so a consumer that drops each record
    before taking the next one works in a small, cache-warm set of objects.
    It is a read-only sequence (``len``, indexing, slicing, iteration,
    equality with a list); ``list(batch.records)`` gives a plain list.
    """

    cdef Reader src           # holds the buffer the records live in
    cdef const unsigned char* b
    cdef Py_ssize_t start
    cdef Py_ssize_t end
    cdef int32_t count
    cdef int64_t base_offset
    cdef int64_t base_ts
    cdef int64_t max_ts
    cdef int ts_type
    cdef object views         # memoryview over b when copy=False, else None
    cdef list controls        # ControlRecord per record of a control batch, else None
    cdef Py_ssize_t* index    # record start positions, built on first indexing

    def __dealloc__(self):
        free(self.index)

    def __len__(self):
        return self.count

    def __iter__(self):
        cdef _RecordIter it = _RecordIter.__new__(_RecordIter)
        it.rl = self
        it.pos = self.start
        it.i = 0
        it.cache = _KeyCache()
        return it

    def __getitem__(self, item):
        cdef Py_ssize_t i, pos
        cdef int32_t k
        cdef uint32_t u = 0
        if isinstance(item, slice):
            return [self[k] for k in range(*item.indices(self.count))]
        i = _index(item)
        if i < 0:
            i += self.count
        if i < 0 or i >= self.count:
            raise IndexError("record index out of range")
        if self.index == NULL:
            self.index = <Py_ssize_t*>malloc((self.count if self.count else 1) * sizeof(Py_ssize_t))
            if self.index == NULL:
                raise MemoryError()
            pos = self.start
            for k in range(self.count):
                self.index[k] = pos
                _uv32(self.b, &pos, self.end, &u)
                pos += _unzig32(u)
        pos = self.index[i]
        return _make_record(self, &pos, <int32_t>i, _KeyCache())

    def __eq__(self, other):
        if isinstance(other, (RecordList, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        raise TypeError("unhashable type: 'RecordList'")

    def __repr__(self):
        return f"<RecordList of {self.count} records>"

    def __reduce__(self):
        return (list, (list(self),))


cdef class _RecordIter:
    cdef RecordList rl
    cdef Py_ssize_t pos
    cdef int32_t i
    cdef _KeyCache cache

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.rl.count:
            raise StopIteration
        rec = _make_record(self.rl, &self.pos, self.i, self.cache)
        self.i += 1
        return rec

    def __length_hint__(self):
        return self.rl.count - self.i


cdef inline object _blob_at(RecordList rl, const unsigned char* b, Py_ssize_t* ppos):
    # a varint length (-1: null) and the bytes after it; already checked
    cdef uint32_t u = 0
    cdef Py_ssize_t pos = ppos[0]
    _uv32(b, &pos, rl.end, &u)
    cdef int32_t n = _unzig32(u)
    if n < 0:
        ppos[0] = pos
        return None
    ppos[0] = pos + n
    if rl.views is None:
        return PyBytes_FromStringAndSize(<const char*>(b + pos), n)
    return rl.views[pos:pos + n]


cdef object _make_record(RecordList rl, Py_ssize_t* ppos, int32_t i, _KeyCache cache):
    # Builds the record at ppos[0] (checked by _check_v2) and moves past it.
    cdef const unsigned char* b = rl.b
    cdef Py_ssize_t pos = ppos[0]
    cdef Py_ssize_t end = rl.end
    cdef uint32_t u = 0
    cdef uint64_t u64 = 0
    cdef int32_t j, hcount, hk
    _uv32(b, &pos, end, &u)
    cdef int attributes = <int8_t>b[pos]
    pos += 1
    _uv64(b, &pos, end, &u64)
    _uv32(b, &pos, end, &u)
    offset = PyLong_FromLongLong(_wadd(rl.base_offset, _unzig32(u)))
    timestamp = PyLong_FromLongLong(rl.max_ts if rl.ts_type else _wadd(rl.base_ts, _unzig64(u64)))
    key = _blob_at(rl, b, &pos)
    value = _blob_at(rl, b, &pos)
    _uv32(b, &pos, end, &u)
    hcount = _unzig32(u)
    cdef list headers = []
    for j in range(hcount):
        _uv32(b, &pos, end, &u)
        hk = _unzig32(u)
        hkey = cache.get(j, b + pos, hk)
        pos += hk
        pair = (hkey, _blob_at(rl, b, &pos))
        PyObject_GC_UnTrack(pair)  # str and bytes inside: never part of a cycle
        headers.append(pair)
    # Nothing in it refers back to it: untracked, the GC need not walk one
    # list per record (a cycle a caller adds later is kept, never freed early).
    PyObject_GC_UnTrack(headers)
    ppos[0] = pos
    return _new_record(offset, timestamp, rl.ts_type, attributes, key, value, headers,
                       None if rl.controls is None else rl.controls[i])


cdef object _decode_v2(Reader r, object mv, Py_ssize_t pos, int32_t size, bint check_crc, object limit, bint copy):
    if size < 49:
        raise _batch_error(f"size {size} below the v2 minimum of 49", pos + 8)
    cdef const unsigned char* p = r.buf + pos
    cdef Py_ssize_t end = pos + 12 + size
    cdef int64_t base_offset = <int64_t>kp_ld64(p)
    cdef int32_t length = <int32_t>kp_ld32(p + 8)
    cdef int32_t ple = <int32_t>kp_ld32(p + 12)
    cdef uint32_t crc = kp_ld32(p + 17)
    cdef int attrs = <int16_t>kp_ld16(p + 21)
    cdef int32_t lod = <int32_t>kp_ld32(p + 23)
    cdef int64_t base_ts = <int64_t>kp_ld64(p + 27)
    cdef int64_t max_ts = <int64_t>kp_ld64(p + 35)
    cdef int64_t pid = <int64_t>kp_ld64(p + 43)
    cdef int pepoch = <int16_t>kp_ld16(p + 51)
    cdef int32_t bseq = <int32_t>kp_ld32(p + 53)
    cdef int32_t count = <int32_t>kp_ld32(p + 57)
    cdef uint32_t computed
    if check_crc:
        computed = _crc32c(mv[pos + 21:end])
        if computed != crc:
            raise _crc_error("CRC32C", crc, computed, pos + 17)
    cdef int codec = attrs & 0x07
    if codec > 4:
        raise _batch_error(f"unknown compression codec {codec}", pos + 21)
    if count < 0:
        raise _batch_error(f"invalid record count {count}", pos + 57)
    cdef RecordList rl = RecordList.__new__(RecordList)
    if codec == 0:
        rl.src = r
        rl.start = pos + 61
        rl.end = end
        rl.views = None if copy else mv
        base = 0
    else:
        data = _decompress(codec, mv[pos + 61:end], 2, limit, pos + 61)
        rl.src = Reader(data)
        rl.start = 0
        rl.end = rl.src._end
        rl.views = None if copy else data
        base = None
    rl.b = rl.src.buf
    if count > rl.end - rl.start:
        raise _batch_error(f"record count {count} larger than the {rl.end - rl.start} bytes of records", pos + 57)
    rl.controls = _check_v2(rl.b, rl.start, rl.end, count, attrs, base, pos)
    rl.count = count
    rl.base_offset = base_offset
    rl.base_ts = base_ts
    rl.max_ts = max_ts
    rl.ts_type = 1 if attrs & 0x08 else 0
    rl.index = NULL
    return _RecordBatch(pos, base_offset, length, ple, 2, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq, count,
                        rl)


cdef class _Batches:
    """Iterator over the batches of a records blob (see decode_record_batches)."""

    cdef Reader r
    cdef object mv
    cdef Py_ssize_t pos
    cdef bint check_crc
    cdef bint copy
    cdef bint done
    cdef object limit

    def __iter__(self):
        return self

    def __next__(self):
        if self.done:
            raise StopIteration
        cdef Py_ssize_t pos = self.pos
        cdef Py_ssize_t n = self.r._end
        cdef Py_ssize_t left = n - pos
        cdef const unsigned char* b = self.r.buf
        cdef int32_t size
        cdef int magic
        if left <= 0:
            self.done = True
            raise StopIteration
        if left < 12:
            self.done = True
            first = None
            if left >= 8:
                first = <int64_t>kp_ld64(b + pos)
            return _TruncatedBatch(pos, left, None, first)
        size = <int32_t>kp_ld32(b + pos + 8)
        if size < 14:
            self.done = True
            raise _batch_error(f"size {size} below the minimum of 14", pos + 8)
        if size > left - 12:
            self.done = True
            return _TruncatedBatch(pos, left, <int64_t>size + 12, <int64_t>kp_ld64(b + pos))  # int32 + 12 would overflow
        magic = b[pos + 16]
        self.done = True  # until the batch decoded cleanly
        if magic == 2:
            batch = _decode_v2(self.r, self.mv, pos, size, self.check_crc, self.limit, self.copy)
        elif magic < 2:
            batch = _decode_legacy(self.mv, pos, size, magic, self.check_crc, self.limit, self.copy, _RecordCls)
        else:
            raise _batch_error(f"unknown magic {<int8_t>magic}", pos + 16)
        self.done = False
        self.pos = pos + size + 12
        return batch


def decode_record_batches(blob, check_crc=True, max_decompressed_size=_DEFAULT_MAX_DECOMPRESSED, copy=True):
    """Iterate the batches of a records blob (a Produce/Fetch ``records`` field, a log segment).

    Yields :class:`RecordBatch` objects; a partial batch at the end is yielded
    as a :class:`TruncatedBatch` (Kafka allows it in Fetch responses).  Any
    other malformation raises a :class:`~kafkaproto.errors.KafkaProtocolError`
    subclass with its byte offset.  ``copy=False`` makes keys and values
    memoryviews over the blob (uncompressed) or over the decompressed buffer.
    """
    cdef _Batches it = _Batches.__new__(_Batches)
    if copy and type(blob) is not bytes:
        # Records are built when read: snapshot a buffer the caller may reuse.
        blob = bytes(blob)
    it.r = Reader(blob)
    mv = memoryview(blob)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    it.mv = mv
    it.pos = 0
    it.check_crc = check_crc
    it.copy = copy
    it.done = False
    it.limit = max_decompressed_size
    return it


# ---------------------------------------------------------------------------
# encode

cdef inline unsigned char* _wv(unsigned char* p, uint64_t u) noexcept nogil:
    while u >= 0x80:
        p[0] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        p += 1
    p[0] = <unsigned char>u
    return p + 1


cdef inline Py_ssize_t _blob_size(Py_ssize_t n) noexcept nogil:
    # a varint length (-1 for null) and the bytes
    if n < 0:
        return 1
    return _uvsize(_zig32(<int32_t>n)) + n


cdef inline unsigned char* _wblob(unsigned char* p, const char* data, Py_ssize_t n) noexcept nogil:
    if n < 0:
        p[0] = 1
        return p + 1
    p = _wv(p, _zig32(<int32_t>n))
    memcpy(p, data, n)
    return p + n


cdef class _HeaderScratch:
    # (pointer, length) of each header key and value of the record being written
    cdef const char** ptr
    cdef Py_ssize_t* size
    cdef Py_ssize_t cap

    def __cinit__(self):
        self.cap = 16
        self.ptr = <const char**>malloc(self.cap * sizeof(char*))
        self.size = <Py_ssize_t*>malloc(self.cap * sizeof(Py_ssize_t))
        if self.ptr == NULL or self.size == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ptr)
        free(self.size)

    cdef int reserve(self, Py_ssize_t n) except -1:
        cdef const char** np_
        cdef Py_ssize_t* ns
        if n <= self.cap:
            return 0
        np_ = <const char**>realloc(self.ptr, n * sizeof(char*))
        if np_ == NULL:
            raise MemoryError()
        self.ptr = np_
        ns = <Py_ssize_t*>realloc(self.size, n * sizeof(Py_ssize_t))
        if ns == NULL:
            raise MemoryError()
        self.size = ns
        self.cap = n
        return 0


cdef str _what(Py_ssize_t i, int kind, Py_ssize_t j):
    if kind == 0:
        return f"records[{i}].key"
    if kind == 1:
        return f"records[{i}].value"
    return f"records[{i}].headers[{j}].value"


cdef inline int _blob_ptr(object v, Py_ssize_t i, int kind, Py_ssize_t j, list keep, const char** ptr,
                          Py_ssize_t* size) except -1:
    # kind: 0 key, 1 value, 2 header value (names the field in errors only)
    if v is None:
        size[0] = -1
        return 0
    if type(v) is not bytes:
        v = _as_blob(v, _what(i, kind, j))
        keep.append(v)
    ptr[0] = PyBytes_AS_STRING(v)
    size[0] = PyBytes_GET_SIZE(v)
    return 0


def encode_record_batch(records, magic=2, codec=0, base_offset=None, partition_leader_epoch=-1, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, transactional=False, control=False, timestamp_type=0,
                        max_timestamp=None, delete_horizon=False, compression_level=None, now=None):
    """Build one batch (``magic=2``) or message set (``magic`` 0/1) → ``bytes``.

    See :func:`kafkaproto.records.encode` for the parameters.
    """
    cdef int c = _codec_number(codec)
    if magic in (0, 1):
        return _encode_legacy(records, magic, c, base_offset, timestamp_type, max_timestamp, compression_level,
                              now, (partition_leader_epoch, producer_id, producer_epoch, base_sequence,
                                    transactional, control, delete_horizon))
    if magic != 2:
        raise EncodeError(f"unknown magic {magic!r} (0, 1 or 2)", "magic")
    if timestamp_type not in (0, 1):
        raise EncodeError(f"timestamp type {timestamp_type!r} is neither 0 (create) nor 1 (log append)",
                          "timestamp type")
    cdef int32_t ple = <int32_t>_as_int(partition_leader_epoch, "partition leader epoch", I32_MIN, I32_MAX)
    cdef int64_t pid = _as_int(producer_id, "producer id", I64_MIN, I64_MAX)
    cdef int16_t pepoch = <int16_t>_as_int(producer_epoch, "producer epoch", I16_MIN, I16_MAX)
    cdef int32_t bseq = <int32_t>_as_int(base_sequence, "base sequence", I32_MIN, I32_MAX)
    cdef int64_t max_given = 0
    if max_timestamp is not None:
        max_given = _as_int(max_timestamp, "max timestamp", I64_MIN, I64_MAX)
    items = records if isinstance(records, (list, tuple)) else list(records)
    cdef Py_ssize_t n = len(items)
    if n == 0:
        raise EncodeError("no records to encode", "records")
    cdef int64_t now_ms = _time.time_ns() // 1000000 if now is None else _as_int(now, "now", I64_MIN, I64_MAX)
    if base_offset is None:
        base_offset = _unpack_record(items[0], 0)[0]
        if base_offset is None:
            base_offset = 0
    cdef int64_t base = _as_int(base_offset, "base offset", I64_MIN, I64_MAX)

    cdef Writer w = Writer(61 + n * 64)
    w._reserve(61)
    cdef _HeaderScratch hs = _HeaderScratch()
    cdef list keep = []
    cdef Py_ssize_t i, j, nh, body, total
    cdef int64_t ts = 0, base_ts = 0, max_ts = 0, off, tdelta
    cdef int64_t delta = -1
    cdef const char* kptr = NULL
    cdef const char* vptr = NULL
    cdef Py_ssize_t klen, vlen
    cdef unsigned char* p
    cdef object item, key, value, headers, ts_obj, off_obj
    for i in range(n):
        item = items[i]
        if type(item) is tuple:
            nt = len(<tuple>item)
            if nt < 2 or nt > 4:
                raise EncodeError(f"a record tuple is (key, value[, headers[, timestamp]]), got {nt} items",
                                  f"records[{i}]")
            key = (<tuple>item)[0]
            value = (<tuple>item)[1]
            headers = (<tuple>item)[2] if nt > 2 else None
            ts_obj = (<tuple>item)[3] if nt > 3 else None
            off_obj = None
        elif type(item) is _RecordCls and _SLOTS:
            key = _get(item, "key", _R_KEY)
            value = _get(item, "value", _R_VALUE)
            headers = _get(item, "headers", _R_HEADERS)
            ts_obj = _get(item, "timestamp", _R_TIMESTAMP)
            off_obj = _get(item, "offset", _R_OFFSET)
        else:
            off_obj, ts_obj, key, value, headers = _unpack_record(item, i)
        ts = now_ms if ts_obj is None else _as_int(ts_obj, "timestamp", I64_MIN, I64_MAX)
        if i == 0:
            base_ts = max_ts = ts
        elif ts > max_ts:
            max_ts = ts
        if off_obj is None:
            delta += 1
        else:
            off = _as_int(off_obj, "offset", I64_MIN, I64_MAX)
            if (off >= 0 and base < 0 and off > I64_MAX + base) or (off < 0 and base > 0 and off < I64_MIN + base) \
                    or off - base < I32_MIN or off - base > I32_MAX:
                raise EncodeError(f"value {(<object>off) - (<object>base)} out of range [{I32_MIN}, {I32_MAX}]",
                                  "offset delta")
            delta = off - base
        if (ts >= 0 and base_ts < 0 and ts > I64_MAX + base_ts) or (ts < 0 and base_ts > 0 and ts < I64_MIN + base_ts):
            raise EncodeError(f"value {(<object>ts) - (<object>base_ts)} out of range [{I64_MIN}, {I64_MAX}]",
                              "timestamp delta")
        tdelta = ts - base_ts
        if keep:
            keep.clear()
        _blob_ptr(key, i, 0, 0, keep, &kptr, &klen)
        _blob_ptr(value, i, 1, 0, keep, &vptr, &vlen)
        body = 1 + _uvsize(_zig64(tdelta)) + _uvsize(_zig32(<int32_t>delta)) + _blob_size(klen) + _blob_size(vlen)
        if headers is None:
            nh = 0
        else:
            if type(headers) is not list and type(headers) is not tuple:
                headers = list(headers)
                keep.append(headers)
            nh = len(headers)
            hs.reserve(2 * nh)
            for j in range(nh):
                pair = headers[j]
                fast = False
                if type(pair) is tuple and len(<tuple>pair) == 2 and type((<tuple>pair)[0]) is str \
                        and (type((<tuple>pair)[1]) is bytes or (<tuple>pair)[1] is None):
                    hk_obj = (<tuple>pair)[0]
                    hv_obj = (<tuple>pair)[1]
                    try:
                        hs.ptr[2 * j] = PyUnicode_AsUTF8AndSize(hk_obj, &hs.size[2 * j])
                        fast = True
                    except UnicodeEncodeError:
                        pass
                if not fast:
                    hk_obj, hv_obj = _header_pair(pair, f"records[{i}].headers[{j}]")
                    keep.append(hk_obj)
                    keep.append(hv_obj)
                    hs.ptr[2 * j] = PyBytes_AS_STRING(hk_obj)
                    hs.size[2 * j] = PyBytes_GET_SIZE(hk_obj)
                _blob_ptr(hv_obj, i, 2, j, keep, &hs.ptr[2 * j + 1], &hs.size[2 * j + 1])
                body += _blob_size(hs.size[2 * j]) + _blob_size(hs.size[2 * j + 1])
        body += _uvsize(_zig32(<int32_t>nh))
        if body > 0x7FFFFFFF:
            raise EncodeError(f"record of {body} bytes: its length does not fit in an int32", f"records[{i}]")
        total = _uvsize(_zig32(<int32_t>body)) + body
        p = w._reserve(total)
        p = _wv(p, _zig32(<int32_t>body))
        p[0] = 0
        p = _wv(p + 1, _zig64(tdelta))
        p = _wv(p, _zig32(<int32_t>delta))
        p = _wblob(p, kptr, klen)
        p = _wblob(p, vptr, vlen)
        p = _wv(p, _zig32(<int32_t>nh))
        for j in range(2 * nh):
            p = _wblob(p, hs.ptr[j], hs.size[j])
    if max_timestamp is not None:
        max_ts = max_given
    cdef int attrs = c | (0x08 if timestamp_type else 0) | (0x10 if transactional else 0) | (0x20 if control else 0) \
        | (0x40 if delete_horizon else 0)
    cdef object packed
    cdef Py_buffer view
    if c:
        packed = _compress(c, PyMemoryView_FromMemory(<char*>w.buf + 61, w.length - 61, PyBUF_READ), 2,
                           compression_level)
        w.length = 61
        w._put_buffer(packed, "records")
    cdef Py_ssize_t size = w.length - 12
    if size > 0x7FFFFFFF:
        raise EncodeError(f"batch of {w.length} bytes: its size does not fit in an int32", "record batch")
    p = w.buf
    kp_st64(p, <uint64_t>base)
    kp_st32(p + 8, <uint32_t>size)
    kp_st32(p + 12, <uint32_t>ple)
    p[16] = 2
    kp_st16(p + 21, <uint16_t>attrs)
    kp_st32(p + 23, <uint32_t><int32_t>delta)
    kp_st64(p + 27, <uint64_t>base_ts)
    kp_st64(p + 35, <uint64_t>max_ts)
    kp_st64(p + 43, <uint64_t>pid)
    kp_st16(p + 51, <uint16_t>pepoch)
    kp_st32(p + 53, <uint32_t>bseq)
    kp_st32(p + 57, <uint32_t>n)
    kp_st32(p + 17, <uint32_t>_crc32c(PyMemoryView_FromMemory(<char*>w.buf + 21, w.length - 21, PyBUF_READ)))
    return w.getvalue()
