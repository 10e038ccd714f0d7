# cython: language_level=3
"""Compiled record batches (``kafkaproto.records._batches``); twin: ``_batches_py``.

Decoding walks every v2 record once when its batch is read (the one record
walker, ``_walk.pxi``, with a sink that checks and builds nothing but control
records), so every error is raised by ``decode`` itself; the records are then
built when read, by the same walker with a sink that builds one ``Record``.
Legacy message sets (magic 0/1) and the codecs are shared Python
(``_legacy``, ``_compression``), as are the batch objects and the error
messages (``_common``), so the twin raises exactly the same errors.
"""

cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_READ
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcmp, memcpy

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_st16, kp_st32, kp_st64, kp_utf8_ok, _uv32, _uv64, _unzig32, _unzig64, _zig32,
    _zig64, _uvsize, _wadd, Cur, Step, cur_init, cur_fail, cur_step, VARINT_TRUNCATED, P_INDEX, F_PYTHON, MAX_PATH,
)
from kafkaproto._codec cimport Writer, as_int, crc32_of
from kafkaproto._objects cimport (
    drop_items, kp_new_object, kp_new_ref, kp_slot_get, kp_slot_put, slot_offset, take_items, use_slots_dealloc,
)

import time as _time
from operator import index as _index

from crc32c import crc32c as _crc32c

from kafkaproto.errors import EncodeError
from kafkaproto.records import _compression
from kafkaproto.records._common import (
    DEFAULT_MAX_DECOMPRESSED_SIZE as _DEFAULT_MAX_DECOMPRESSED,
    CallBudget as _CallBudget,
    Record as _RecordCls,
    RecordBatch as _RecordBatch,
    TruncatedBatch as _TruncatedBatch,
    as_blob as _as_blob,
    batch_error as _batch_error,
    past_int64 as _past_int64,
    batch_limit_error as _batch_limit_error,
    codec_number as _codec_number,
    control_record as _control_record,
    crc_error as _crc_error,
    header_pair as _header_pair,
    legacy_failure as _legacy_failure,
    legacy_records_error as _legacy_records_error,
    record_failure as _record_failure,
    unpack_record as _unpack_record,
    wrap64 as _wrap64,
)
from kafkaproto.records._legacy import encode_legacy as _encode_legacy
from kafkaproto._limits import (
    DEFAULT_MAX_HEADERS_PER_BATCH as _DEFAULT_MAX_BATCH_HEADERS,
    DEFAULT_MAX_HEADERS_PER_RECORD as _DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_RECORDS_PER_BATCH as _DEFAULT_MAX_RECORDS,
    DEFAULT_MAX_DECOMPRESSED_PER_CALL as _DEFAULT_MAX_CALL_DECOMPRESSED,
    DEFAULT_MAX_HEADERS_PER_CALL as _DEFAULT_MAX_CALL_HEADERS,
    DEFAULT_MAX_RECORDS_PER_CALL as _DEFAULT_MAX_CALL_RECORDS,
    call_caps as _call_caps,
    record_caps as _record_caps,
)

COMPILED = True

cdef object _decompress = _compression.decompress
cdef object _compress = _compression.compress

cdef int64_t I16_MIN = -(1 << 15), I16_MAX = (1 << 15) - 1
cdef int64_t I32_MIN = -(1 << 31), I32_MAX = (1 << 31) - 1
cdef int64_t I64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t I64_MIN = -I64_MAX - 1


# ---------------------------------------------------------------------------
# Record: the shared __slots__ class (kafkaproto.records._common.Record),
# filled here by slot offset: no __init__ call per record, and Python code
# reading r.key gets the interpreter's fast slot path (a Cython property
# takes the slow generic one).

Record = _RecordCls

cdef Py_ssize_t _R_OFFSET = slot_offset(_RecordCls, "offset")
cdef Py_ssize_t _R_TIMESTAMP = slot_offset(_RecordCls, "timestamp")
cdef Py_ssize_t _R_TS_TYPE = slot_offset(_RecordCls, "timestamp_type")
cdef Py_ssize_t _R_ATTRIBUTES = slot_offset(_RecordCls, "attributes")
cdef Py_ssize_t _R_KEY = slot_offset(_RecordCls, "key")
cdef Py_ssize_t _R_VALUE = slot_offset(_RecordCls, "value")
cdef Py_ssize_t _R_HEADERS = slot_offset(_RecordCls, "headers")
cdef Py_ssize_t _R_CONTROL = slot_offset(_RecordCls, "control")
# an interpreter whose slots are not plain object fields builds records through __init__
cdef bint _SLOTS = min(_R_OFFSET, _R_TIMESTAMP, _R_TS_TYPE, _R_ATTRIBUTES, _R_KEY, _R_VALUE, _R_HEADERS,
                       _R_CONTROL) > 0
if _SLOTS:
    use_slots_dealloc(_RecordCls)


# ---------------------------------------------------------------------------
# The record sinks (see _walk.pxi).  They run inside the walker, declared
# nogil (which only forbids Cython's object handling); the decoder holds the
# GIL throughout, so the C helpers below may call the C API.

cdef extern from *:
    """
    #define KP_KEYS 8
    typedef struct {
        int build;                 /* 0: check a batch (control records only); 1: build one Record */
        PyObject* views;           /* memoryview over the records' buffer (copy=False), else NULL */
        const unsigned char* base; /* start of that buffer */
        long long base_offset, base_ts, max_ts;
        int ts_type;
        PyObject* record_cls;
        PyObject* headers;         /* the record's header list, while built */
        PyObject* record;          /* the built record (a new reference) */
        PyObject* control;         /* build: this record's ControlRecord (borrowed), or None */
        PyObject* controls;        /* check, control batch: list of ControlRecord; else NULL */
        PyObject* control_fn;      /* (key bytes, value bytes, at) -> ControlRecord */
        Py_ssize_t batch_at;       /* passed to control_fn for its errors */
        const unsigned char* kptr[KP_KEYS];  /* header keys repeat from record to record: the str */
        Py_ssize_t klen[KP_KEYS];            /* made for the bytes at header slot j is reused while */
        PyObject* kstr[KP_KEYS];             /* the next record's slot j has the same bytes */
        Py_ssize_t rec_off[8];     /* Record slot offsets */
    } kp_rsink;

    static inline PyObject* kp_rblob(kp_rsink* s, const unsigned char* p, Py_ssize_t n) {
        if (p == NULL) { Py_INCREF(Py_None); return Py_None; }
        if (s->views != NULL) return PySequence_GetSlice(s->views, p - s->base, p - s->base + n);
        return PyBytes_FromStringAndSize((const char*)p, n);
    }
    static inline PyObject* kp_header_key(kp_rsink* s, int j, const unsigned char* p, Py_ssize_t n) {
        if (j < KP_KEYS && s->kstr[j] != NULL && s->klen[j] == n && memcmp(s->kptr[j], p, n) == 0) {
            Py_INCREF(s->kstr[j]);
            return s->kstr[j];
        }
        PyObject* k = PyUnicode_DecodeUTF8((const char*)p, n, NULL);
        if (k != NULL && j < KP_KEYS) {
            Py_XDECREF(s->kstr[j]);
            Py_INCREF(k);
            s->kstr[j] = k; s->kptr[j] = p; s->klen[j] = n;
        }
        return k;
    }
    /* One (key, value) pair onto the record's header list.  Pairs and lists
       hold only str and bytes when built, so they cannot form cycles: left
       untracked, the collector need not walk one list per record. */
    static int kp_add_header(kp_rsink* s, int j, const unsigned char* kp, Py_ssize_t kn,
                             const unsigned char* vp, Py_ssize_t vn) {
        if (s->headers == NULL) {
            if ((s->headers = PyList_New(0)) == NULL) return -1;
        }
        PyObject* k = kp_header_key(s, j, kp, kn);
        if (k == NULL) return -1;
        PyObject* v = kp_rblob(s, vp, vn);
        if (v == NULL) { Py_DECREF(k); return -1; }
        PyObject* pair = PyTuple_Pack(2, k, v);
        Py_DECREF(k); Py_DECREF(v);
        if (pair == NULL) return -1;
        PyObject_GC_UnTrack(pair);
        int r = PyList_Append(s->headers, pair);
        Py_DECREF(pair);
        return r;
    }
    static inline long long kp_wadd(long long a, long long b) {
        return (long long)((unsigned long long)a + (unsigned long long)b);
    }
    static int kp_build_record(kp_rsink* s, int attributes, long long ts_delta, int offset_delta,
                               const unsigned char* kp, Py_ssize_t kn, const unsigned char* vp, Py_ssize_t vn) {
        PyObject* vals[8];
        vals[0] = PyLong_FromLongLong(kp_wadd(s->base_offset, offset_delta));
        vals[1] = PyLong_FromLongLong(s->ts_type ? s->max_ts : kp_wadd(s->base_ts, ts_delta));
        vals[2] = PyLong_FromLong(s->ts_type);
        vals[3] = PyLong_FromLong(attributes);
        vals[4] = kp_rblob(s, kp, kn);
        vals[5] = kp_rblob(s, vp, vn);
        if (s->headers == NULL) s->headers = PyList_New(0);
        vals[6] = s->headers;
        s->headers = NULL;
        Py_INCREF(s->control);
        vals[7] = s->control;
        int ok = 1;
        for (int k = 0; k < 8; k++) if (vals[k] == NULL) ok = 0;
        PyObject* rec = NULL;
        if (ok) {
            if (vals[6] != NULL) PyObject_GC_UnTrack(vals[6]);
            if (s->rec_off[0] > 0) {
                rec = ((PyTypeObject*)s->record_cls)->tp_alloc((PyTypeObject*)s->record_cls, 0);
                if (rec != NULL) {
                    for (int k = 0; k < 8; k++) {
                        *(PyObject**)((char*)rec + s->rec_off[k]) = vals[k];
                        vals[k] = NULL;
                    }
                }
            } else {
                /* Record(key, value, headers, timestamp, offset, timestamp_type, attributes, control) */
                rec = PyObject_CallFunctionObjArgs(s->record_cls, vals[4], vals[5], vals[6], vals[1], vals[0],
                                                   vals[2], vals[3], vals[7], NULL);
            }
        }
        for (int k = 0; k < 8; k++) Py_XDECREF(vals[k]);
        if (rec == NULL) return -1;
        Py_XDECREF(s->record);
        s->record = rec;
        return 0;
    }
    static int kp_add_control(kp_rsink* s, const unsigned char* kp, Py_ssize_t kn, const unsigned char* vp,
                              Py_ssize_t vn) {
        PyObject* key = PyBytes_FromStringAndSize((const char*)kp, kn);
        PyObject* value = vp == NULL ? (Py_INCREF(Py_None), Py_None) : PyBytes_FromStringAndSize((const char*)vp, vn);
        PyObject* at = PyLong_FromSsize_t(s->batch_at);
        PyObject* c = NULL;
        if (key != NULL && value != NULL && at != NULL)
            c = PyObject_CallFunctionObjArgs(s->control_fn, key, value, at, NULL);
        Py_XDECREF(key); Py_XDECREF(value); Py_XDECREF(at);
        if (c == NULL) return -1;
        int r = PyList_Append(s->controls, c);
        Py_DECREF(c);
        return r;
    }
    static void kp_rsink_clear(kp_rsink* s) {
        Py_CLEAR(s->headers);
        Py_CLEAR(s->record);
        for (int j = 0; j < KP_KEYS; j++) Py_CLEAR(s->kstr[j]);
    }
    """
    ctypedef struct kp_rsink:
        int build
        PyObject* views
        const unsigned char* base
        long long base_offset
        long long base_ts
        long long max_ts
        int ts_type
        PyObject* record_cls
        PyObject* headers
        PyObject* record
        PyObject* control
        PyObject* controls
        PyObject* control_fn
        Py_ssize_t batch_at
        PyObject* kstr[8]
        Py_ssize_t rec_off[8]
    int kp_add_header(kp_rsink* s, int j, const unsigned char* kp, Py_ssize_t kn, const unsigned char* vp,
                      Py_ssize_t vn) nogil
    int kp_build_record(kp_rsink* s, int attributes, long long ts_delta, int offset_delta, const unsigned char* kp,
                        Py_ssize_t kn, const unsigned char* vp, Py_ssize_t vn) nogil
    int kp_add_control(kp_rsink* s, const unsigned char* kp, Py_ssize_t kn, const unsigned char* vp,
                       Py_ssize_t vn) nogil
    void kp_rsink_clear(kp_rsink* s) nogil


ctypedef kp_rsink* RSink

cdef struct RCur:
    int unused          # (the records are built through the sink itself: no cursors)


cdef inline void rs_begin(RSink s, RCur* k) noexcept nogil:
    pass


cdef inline void rs_end(RSink s, RCur* k) noexcept nogil:
    pass


cdef inline int rs_header(Cur* c, RSink s, RCur* k, int32_t j, const uint8_t* kp, int32_t kn, const uint8_t* vp,
                          int32_t vn) noexcept nogil:
    if s.build and kp_add_header(s, j, kp, kn, vp, vn):
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    return 0


cdef inline int rs_record(Cur* c, RSink s, RCur* k, int32_t i, bint control, Py_ssize_t start, int attributes,
                          int64_t timestamp_delta, int32_t offset_delta, const uint8_t* key, int32_t key_len,
                          const uint8_t* value, int32_t value_len, int32_t header_count) noexcept nogil:
    if s.build:
        if kp_build_record(s, attributes, timestamp_delta, offset_delta, key, key_len, value, value_len):
            return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    elif s.controls != NULL:
        if kp_add_control(s, key, key_len, value, value_len):
            return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    return 0


cdef class LSink:
    """The legacy sink: the Record of one uncompressed top-level message, or
    the buffer of a compressed one's inner messages (built when read)."""
    cdef list records
    cdef bint copy
    cdef object views
    cdef object data
    cdef const uint8_t* base

    def __cinit__(self):
        self.records = []


cdef int ls_buffer(LSink s, object buf, const uint8_t* base) except -1:
    s.data = buf
    if not s.copy:
        s.views = buf if isinstance(buf, memoryview) else memoryview(buf)
        s.base = base
    return 0


cdef int ls_begin(LSink s, int count, Py_ssize_t nbytes) except -1:
    return 0


cdef int ls_end(LSink s, bint gone) except -1:
    return 0


cdef inline object _lblob(LSink s, const uint8_t* b, Py_ssize_t pos, int32_t n):
    if n < 0:
        return None
    if s.copy:
        return PyBytes_FromStringAndSize(<const char*>(b + pos), n)
    cdef Py_ssize_t at = (b + pos) - s.base
    return s.views[at:at + n]


cdef int ls_record(LSink s, const uint8_t* b, LMsg* m, int64_t offset, int64_t ts, int ts_type) except -1:
    s.records.append(_RecordCls(_lblob(s, b, m.kpos, m.klen), _lblob(s, b, m.vpos, m.vlen), [], ts, offset, ts_type,
                                m.attrs))
    return 0


include "_walk.pxi"


cdef object _decode_legacy(object mv, const uint8_t* b, Py_ssize_t n, BatchView* v, bint check_crc, object limit,
                           bint copy, int32_t max_records, Budget* budget):
    """One top-level legacy message → a RecordBatch (as Kafka's classes present it);
    a compressed one's inner messages are checked now and built when read."""
    cdef LSink s = LSink()
    cdef LMsg w
    cdef int64_t shift = 0
    cdef int count
    s.copy = copy
    ls_buffer(s, mv, b)
    count = _legacy_walk(mv, b, n, v, check_crc, limit, s, &w, max_records, budget, False, &shift)
    if not (w.attrs & 0x07):
        return _RecordBatch(v.at, w.offset, w.size, -1, w.magic, w.crc, w.attrs, 0, w.ts, w.ts, -1, -1, -1, 1,
                            s.records)
    cdef RecordList rl = RecordList.__new__(RecordList)
    rl.data = s.data
    _hold(rl.data, &rl.view, &rl.b, &rl.end)
    rl.has_view = True
    rl.start = 0
    rl.count = count
    rl.views = None if copy else s.views
    rl.legacy = True
    rl.shift = shift
    rl.ts_type = -1 if w.magic == 0 else (1 if w.attrs & 0x08 else 0)
    # log-append time (magic 1): every inner message has the wrapper's
    rl.wrapper_ts = w.magic == 1 and rl.ts_type == 1
    rl.max_ts = w.ts
    rl.index = NULL
    base_offset = _wadd(<int64_t>kp_ld64(rl.b), shift)
    return _RecordBatch(v.at, base_offset, w.size, -1, w.magic, w.crc, w.attrs, _wrap64(w.offset - base_offset), w.ts,
                        w.ts, -1, -1, -1, count, rl)


cdef int _reraise() except -1:
    return -1  # a sink left a Python exception set


cdef int _hold(object obj, Py_buffer* view, const unsigned char** start, Py_ssize_t* size) except -1:
    """Hold a buffer of ``obj``'s bytes for as long as the holder lives → their
    start and size.  A memoryview's bytes are held through the object it views:
    the collector clears a memoryview found in garbage even while it has
    exports (CPython's memory_clear drops its managed buffer), and releasing
    such an export afterwards crashes.  Decompressed records are memoryviews of
    a NumPy array, and a caller may hand in one of anything."""
    cdef Py_buffer own
    cdef const unsigned char* p
    cdef Py_ssize_t n
    owner = obj.obj if type(obj) is memoryview else None
    if owner is not None and type(owner) is not memoryview:
        PyObject_GetBuffer(obj, &own, PyBUF_SIMPLE)
        p = <const unsigned char*>own.buf
        n = own.len
        PyBuffer_Release(&own)
        try:
            PyObject_GetBuffer(owner, view, PyBUF_SIMPLE)
        except (BufferError, TypeError, ValueError):
            pass  # (an owner not contiguous as a whole: hold the view itself)
        else:
            if p >= <const unsigned char*>view.buf and p + n <= <const unsigned char*>view.buf + view.len:
                start[0] = p
                size[0] = n
                return 0
            PyBuffer_Release(view)
    PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
    start[0] = <const unsigned char*>view.buf
    size[0] = view.len
    return 0


cdef object _failure(Cur* c, object base, Py_ssize_t batch_at, const Budget* budget, int64_t batch_cap):
    """The error for the record walker's failure record."""
    path = [c.path[k].value for k in range(c.depth - 1, -1, -1)]
    return _record_failure(c.fail, c.what, c.at, c.x, c.y, path, base, batch_at, budget_call(budget), batch_cap)


cdef void _sink_init(kp_rsink* s) noexcept:
    memset_sink(s)
    s.record_cls = <PyObject*>_RecordCls
    s.rec_off[0] = _R_OFFSET if _SLOTS else -1
    s.rec_off[1] = _R_TIMESTAMP
    s.rec_off[2] = _R_TS_TYPE
    s.rec_off[3] = _R_ATTRIBUTES
    s.rec_off[4] = _R_KEY
    s.rec_off[5] = _R_VALUE
    s.rec_off[6] = _R_HEADERS
    s.rec_off[7] = _R_CONTROL


cdef extern from "string.h":
    void* memset(void* p, int c, size_t n) nogil


cdef inline void memset_sink(kp_rsink* s) noexcept:
    memset(s, 0, sizeof(kp_rsink))


# ---------------------------------------------------------------------------
# RecordList: the records of a v2 batch, checked, built when read

@cython.no_gc_clear  # __dealloc__ releases the buffer of `data` before `data` goes (a cycle's clear would not)
cdef class RecordList:
    """The records of a v2 batch, made when read.

    Decoding checks every record but builds none: iterating (or indexing)
    builds each :class:`Record` then, so a consumer that drops each record
    before taking the next one works in a small, cache-warm set of objects.
    It is a read-only sequence (``len``, indexing, slicing, iteration,
    equality with a list); ``list(batch.records)`` gives a plain list.
    """

    cdef object data          # holds the buffer the records live in
    cdef Py_buffer view
    cdef bint has_view
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
    # the inner messages of a compressed legacy message (magic 0/1) instead of v2 records
    cdef bint legacy
    cdef int64_t shift        # added to each inner offset
    cdef bint wrapper_ts      # log-append time: every record has the wrapper's (max_ts)

    def __dealloc__(self):
        free(self.index)
        if self.has_view:
            PyBuffer_Release(&self.view)

    def __len__(self):
        return self.count

    def __iter__(self):
        cdef _RecordIter it = _RecordIter.__new__(_RecordIter)
        it.rl = self
        it.pos = self.start
        it.i = 0
        _sink_init(&it.sink)
        self._prepare(&it.sink)
        return it

    cdef void _prepare(self, kp_rsink* s) noexcept:
        s.build = 1
        s.views = <PyObject*>self.views if self.views is not None else NULL
        s.base = self.b
        s.base_offset = self.base_offset
        s.base_ts = self.base_ts
        s.max_ts = self.max_ts
        s.ts_type = self.ts_type

    cdef object _blob(self, Py_ssize_t pos, int32_t n):
        if n < 0:
            return None
        if self.views is None:
            return PyBytes_FromStringAndSize(<const char*>(self.b + pos), n)
        return self.views[pos:pos + n]

    cdef object _build_legacy(self, Py_ssize_t* ppos):
        # the inner message at ppos[0] (checked when the wrapper was read), and move past it
        cdef Cur c
        cdef LMsg m
        cur_init(&c, self.b, 0, self.end)
        _legacy_msg(&c, ppos[0], False, &m)
        ppos[0] += 12 + m.size
        return _RecordCls(self._blob(m.kpos, m.klen), self._blob(m.vpos, m.vlen), [],
                          self.max_ts if self.wrapper_ts else m.ts, _wadd(m.offset, self.shift), self.ts_type, m.attrs)

    cdef object _build(self, kp_rsink* s, Py_ssize_t* ppos, int32_t i):
        # the record at ppos[0] (checked when the batch was read), and move past it
        cdef Cur c
        if self.legacy:
            return self._build_legacy(ppos)
        cur_init(&c, self.b, ppos[0], self.end)
        cdef object control = None if self.controls is None else self.controls[i]
        cdef int64_t seen = 0
        cdef RCur k
        s.control = <PyObject*>control
        # (checked against the caps when the batch was read)
        if _walk_record(&c, i, False, s, &k, 0x7FFFFFFF, &seen, 0x7FFFFFFFFFFFFFFF, False):
            kp_rsink_clear(s)
            if c.fail == F_PYTHON:
                _reraise()
            raise AssertionError("a checked record failed its second walk")  # pragma: no cover
        ppos[0] = c.pos
        rec = <object>s.record
        kp_rsink_clear_record(s)
        return rec

    def __getitem__(self, item):
        cdef Py_ssize_t i, pos
        cdef int32_t k
        cdef uint32_t u = 0
        cdef kp_rsink s
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
                if self.legacy:
                    pos += 12 + <int32_t>kp_ld32(self.b + pos + 8)
                    continue
                _uv32(self.b, &pos, self.end, &u)
                pos += _unzig32(u)
        pos = self.index[i]
        _sink_init(&s)
        self._prepare(&s)
        try:
            return self._build(&s, &pos, <int32_t>i)
        finally:
            kp_rsink_clear(&s)

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


cdef extern from *:
    """
    static inline void kp_rsink_clear_record(kp_rsink* s) { Py_CLEAR(s->record); }
    """
    void kp_rsink_clear_record(kp_rsink* s) nogil


cdef class _RecordIter:
    cdef RecordList rl
    cdef Py_ssize_t pos
    cdef int32_t i
    cdef kp_rsink sink

    def __dealloc__(self):
        kp_rsink_clear(&self.sink)

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.rl.count:
            raise StopIteration
        rec = self.rl._build(&self.sink, &self.pos, self.i)
        self.i += 1
        return rec

    def __length_hint__(self):
        return self.rl.count - self.i


# ---------------------------------------------------------------------------
# batches

cdef object _decode_v2(object data, BatchView* v, object mv, bint check_crc, object limit, bint copy,
                       int32_t max_records, int32_t max_headers, int64_t max_batch_headers, Budget* budget):
    cdef RecordList rl = RecordList.__new__(RecordList)
    cdef int64_t headers = 0
    cdef Py_ssize_t start, end
    region = _v2_records(v, mv, check_crc, limit, max_records, budget, &start, &end)
    # the records hold on to the buffer they live in: the blob, or the decompressed records
    rl.data = data if region is None else region
    cdef Py_ssize_t held
    _hold(rl.data, &rl.view, &rl.b, &held)
    rl.has_view = True
    rl.start = start
    rl.end = end
    rl.views = None if copy else (mv if region is None else memoryview(region))
    base = 0 if region is None else None
    # check every record now, so that decode() raises every error
    cdef Cur c
    cdef Step steps[MAX_PATH]
    cdef kp_rsink s
    _sink_init(&s)
    cdef bint control = v.attrs & 0x20
    if control:
        rl.controls = []
        s.controls = <PyObject*>rl.controls
        s.control_fn = <PyObject*>_control_record
        s.batch_at = v.at  # (the walker checked what control_record checks: it cannot fail here)
    s.base_offset = v.base_offset  # (the walker checks each record's offset against it)
    cur_init(&c, rl.b, rl.start, rl.end)
    c.path = steps
    if _walk_records(&c, v.count, control, &s, max_headers, budget_headers_left(budget, max_batch_headers), &headers):
        kp_rsink_clear(&s)
        if c.fail == F_PYTHON:
            _reraise()
        raise _failure(&c, base, v.at, budget, max_batch_headers)
    budget.headers += headers
    rl.count = v.count
    rl.base_offset = v.base_offset
    rl.base_ts = v.base_ts
    rl.max_ts = v.max_ts
    rl.ts_type = 1 if v.attrs & 0x08 else 0
    rl.index = NULL
    return _RecordBatch(v.at, v.base_offset, v.size, v.ple, 2, v.crc, v.attrs, v.lod, v.base_ts, v.max_ts, v.pid,
                        v.pepoch, v.bseq, v.count, rl)


@cython.no_gc_clear  # as RecordList: the buffer of `data` is released before `data` goes
cdef class _Batches:
    """Iterator over the batches of a records blob (see decode_record_batches)."""

    cdef object data
    cdef Py_buffer view
    cdef bint has_view
    cdef const unsigned char* b   # the blob's bytes (held through ``view``)
    cdef Py_ssize_t n
    cdef object mv
    cdef Py_ssize_t pos
    cdef bint check_crc
    cdef bint copy
    cdef bint done
    cdef object limit
    cdef int32_t max_records
    cdef int32_t max_headers
    cdef int64_t max_batch_headers
    cdef Budget budget
    cdef object call          # a CallBudget shared with other calls (kept up to date), or None

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    def __iter__(self):
        return self

    def __next__(self):
        cdef BatchView v
        cdef int st
        if self.done:
            raise StopIteration
        self.done = True  # until the batch decoded cleanly
        st = _batch_at(self.b, self.pos, self.n, &v)
        if st == BATCH_END:
            raise StopIteration
        if st == BATCH_TRUNCATED:
            if v.size < 0:
                return _TruncatedBatch(v.at, v.available, None, v.base_offset if v.available >= 8 else None)
            return _TruncatedBatch(v.at, v.available, <int64_t>v.size + 12, v.base_offset)
        if self.call is not None:
            budget_load(&self.budget, self.call)
        try:
            if v.magic == 2:
                batch = _decode_v2(self.data, &v, self.mv, self.check_crc, self.limit, self.copy, self.max_records,
                                   self.max_headers, self.max_batch_headers, &self.budget)
            else:
                batch = _decode_legacy(self.mv, self.b, self.n, &v, self.check_crc,
                                       self.limit, self.copy, self.max_records, &self.budget)
        finally:
            if self.call is not None:
                budget_store(&self.budget, self.call)
        self.done = False
        self.pos = v.end
        return batch


def decode_record_batches(blob, check_crc=True, max_decompressed_size=_DEFAULT_MAX_DECOMPRESSED, copy=True,
                          max_records_per_batch=_DEFAULT_MAX_RECORDS, max_headers_per_record=_DEFAULT_MAX_HEADERS,
                          max_headers_per_batch=_DEFAULT_MAX_BATCH_HEADERS,
                          max_records_per_call=_DEFAULT_MAX_CALL_RECORDS,
                          max_headers_per_call=_DEFAULT_MAX_CALL_HEADERS,
                          max_decompressed_per_call=_DEFAULT_MAX_CALL_DECOMPRESSED, budget=None):
    """Iterate the batches of a records blob (a Produce/Fetch ``records`` field, a log segment).

    Yields :class:`RecordBatch` objects; a partial batch at the end is yielded
    as a :class:`TruncatedBatch` (Kafka allows it in Fetch responses).  Any
    other malformation raises a :class:`~kafkaproto.errors.KafkaProtocolError`
    subclass with its byte offset; a batch past ``max_records_per_batch`` or
    ``max_headers_per_batch``, a record past ``max_headers_per_record``, or
    the batches together past a ``max_*_per_call`` cap, raise
    RecordLimitError.  ``copy=False`` makes keys and values memoryviews over
    the blob (uncompressed) or over the decompressed buffer.  ``budget``: a
    CallBudget shared with other blobs (the per-call caps are then its own).
    """
    max_records, max_headers, max_batch_headers = _record_caps(max_records_per_batch, max_headers_per_record,
                                                               max_headers_per_batch)
    cdef _Batches it = _Batches.__new__(_Batches)
    if budget is None:
        call_records, call_headers, call_decompressed = _call_caps(max_records_per_call, max_headers_per_call,
                                                                   max_decompressed_per_call)
        budget_init(&it.budget, call_records, call_headers, call_decompressed)
    else:
        budget_load(&it.budget, budget)
    it.call = budget
    it.max_records = max_records
    it.max_headers = max_headers
    it.max_batch_headers = max_batch_headers
    if copy and type(blob) is not bytes:
        # Records are built when read: snapshot a buffer the caller may reuse.
        blob = bytes(blob)
    _hold(blob, &it.view, &it.b, &it.n)
    it.has_view = True
    it.data = blob
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

cdef inline object _slot(object obj, str attr, Py_ssize_t off):
    cdef PyObject* p = kp_slot_get(<PyObject*>obj, off)
    return <object>p if p != NULL else getattr(obj, attr)


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


cdef object _offset_past_int64(int64_t base, int64_t delta, str where):
    # a record without an offset takes the one after the previous record's (the twin's words)
    if delta > I32_MAX:
        return EncodeError(f"value {delta} out of range [{I32_MIN}, {I32_MAX}]", f"{where}.offset delta")
    return EncodeError(f"offset {(<object>base) + delta} (base offset {base} + {delta}) past the int64 maximum "
                       f"{I64_MAX}", f"{where}.offset")


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
    cdef int32_t ple = <int32_t>as_int(partition_leader_epoch, "partition leader epoch", I32_MIN, I32_MAX)
    cdef int64_t pid = as_int(producer_id, "producer id", I64_MIN, I64_MAX)
    cdef int16_t pepoch = <int16_t>as_int(producer_epoch, "producer epoch", I16_MIN, I16_MAX)
    cdef int32_t bseq = <int32_t>as_int(base_sequence, "base sequence", I32_MIN, I32_MAX)
    cdef int64_t max_given = 0
    if max_timestamp is not None:
        max_given = as_int(max_timestamp, "max timestamp", I64_MIN, I64_MAX)
    # one snapshot: the count written is of the records written (another thread may change a list)
    cdef tuple items = tuple(records)
    cdef Py_ssize_t n = len(items)
    if n == 0:
        raise EncodeError("no records to encode", "records")
    cdef int64_t now_ms = _time.time_ns() // 1000000 if now is None else as_int(now, "now", I64_MIN, I64_MAX)
    if base_offset is None:
        base_offset = _unpack_record(items[0], 0)[0]
        if base_offset is None:
            base_offset = 0
    cdef int64_t base = as_int(base_offset, "base offset", I64_MIN, I64_MAX)

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
    cdef PyObject* hsmall[16]
    cdef PyObject** hrefs = hsmall
    cdef Py_ssize_t held = 0
    try:
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
                key = _slot(item, "key", _R_KEY)
                value = _slot(item, "value", _R_VALUE)
                headers = _slot(item, "headers", _R_HEADERS)
                ts_obj = _slot(item, "timestamp", _R_TIMESTAMP)
                off_obj = _slot(item, "offset", _R_OFFSET)
            else:
                off_obj, ts_obj, key, value, headers = _unpack_record(item, i)
            ts = now_ms if ts_obj is None else as_int(ts_obj, "timestamp", I64_MIN, I64_MAX)
            if i == 0:
                base_ts = max_ts = ts
            elif ts > max_ts:
                max_ts = ts
            if off_obj is None:
                delta += 1
                # the record's offset and the batch's last one (base + last offset delta) must be int64s
                if delta > I32_MAX or base > I64_MAX - delta:
                    raise _offset_past_int64(base, delta, f"records[{i}]")
            else:
                off = as_int(off_obj, "offset", I64_MIN, I64_MAX)
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
                # one snapshot of the pairs, held while their bytes are pointed at
                # (another thread, or Python code run below, may change the list)
                nh = held = take_items(headers, hsmall, 16, &hrefs)
                hs.reserve(2 * nh)
                for j in range(nh):
                    pair = <object>hrefs[j]
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
            if held:
                drop_items(hrefs, held, hsmall)
                held = 0
    finally:
        if held:
            drop_items(hrefs, held, hsmall)
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
