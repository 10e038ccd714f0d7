# cython: language_level=3
"""Records blobs → the columns of Spark's Kafka source (``kafkaproto.arrow._records``); twin: ``_records_py``.

The record batches' own walkers (``records/_walk.pxi``: batches, v2 records,
legacy message sets) run here with column sinks.  Decompression goes through
kafkaproto.records.walk.decompress, once per batch (or legacy wrapper); the
records of a v2 batch are checked and written into the columns in one loop
without the GIL.  Control records are checked and left out, as a Kafka
consumer does.  A blob that fails becomes one row of nulls whose error is the
text records.decode raises for it, taken from the walker's failure record.

``records_table`` is the whole of ``kafkaproto.arrow.records``: the caps
checked and the call's budget kept in C, every chunk of the column walked,
and the finished columns (topic, partition and error included) handed to
pyarrow through the Arrow C data interface, one record batch per chunk: no
Python per column, per batch or per row.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_READ
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, calloc, free, realloc
from libc.string cimport memcpy, memset

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_utf8_ok, _uv32, _uv64, _unzig32, _unzig64, _wadd, Cur, cur_init, cur_fail,
    cur_step, Step, MAX_PATH, VARINT_TRUNCATED, P_INDEX, F_PYTHON, F_MEMORY,
)
from kafkaproto._codec cimport crc32_of
from kafkaproto.arrow._columns cimport (
    Col, Rows, RowsIn, rows_in, row_at, col_new, col_free, col_grow, col_reserve, col_mark_valid, col_mark_null,
    col_vappend, col_vgrow, col_put_null, col_truncate, col_export, col_valid_init, C_FIXED, C_VAR, C_STRUCT, C_LIST,
    ArrowArray, aa_init, aa_release, aa_set, col_to_c, aa_nulls, aa_strings, IN_LARGE, rows_bytes,
)

import numpy as np
import pyarrow as pa

from crc32c import crc32c as _crc32c

from kafkaproto.errors import KafkaProtocolError
from kafkaproto._limits import (
    DEFAULT_MAX_HEADERS_PER_BATCH as _DEFAULT_MAX_BATCH_HEADERS,
    DEFAULT_MAX_HEADERS_PER_RECORD as _DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_RECORDS_PER_BATCH as _DEFAULT_MAX_RECORDS,
    DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL as _DEFAULT_MAX_CALL_DECOMPRESSED,
    DEFAULT_ARROW_MAX_HEADERS_PER_CALL as _DEFAULT_MAX_CALL_HEADERS,
    DEFAULT_ARROW_MAX_RECORDS_PER_CALL as _DEFAULT_MAX_CALL_RECORDS,
    call_caps as _call_caps,
    record_caps as _record_caps,
)
from kafkaproto.records.walk import (
    batch_error as _batch_error,
    past_int64 as _past_int64,
    CallBudget as _CallBudget,
    batch_limit_error as _batch_limit_error,
    crc_error as _crc_error,
    legacy_failure as _legacy_failure,
    legacy_records_error as _legacy_records_error,
    record_failure as _record_failure,
)
from kafkaproto.arrow import _build
from kafkaproto.arrow._build import (
    BATCHES_SCHEMA as _BATCHES_SCHEMA,
    RECORDS_SCHEMA as _RECORDS_SCHEMA,
    _chunks,
    _pass_through,
)
from kafkaproto.records.walk import DEFAULT_MAX_DECOMPRESSED_SIZE as _DEFAULT_MAX_DECOMPRESSED, decompress as _decompress_py

COMPILED = True

cdef extern from *:
    """
    /* _put_record (below) goes into the record walk inline, however large the compiler
       finds it: called out of line it cost a fifth of the walk (this names Cython's C
       name of it; were that to change, the declaration would only go unused) */
    #include <stdint.h>
    #include <string.h>
    /* |milliseconds| that still fit in int64 microseconds */
    #define KP_US_LIMIT INT64_C(9223372036854775)
    /* A key or value of at most 32 bytes copied in place (fixed-size moves, all loads
       before the stores): a call to memcpy cost more than the copy itself, and the
       walk's registers spilled around it.  Longer ones go to memcpy. */
    static inline void kp_copy(uint8_t* d, const uint8_t* s, size_t n) {
        uint64_t a, b, c, e;
        uint32_t x, y;
        if (n > 32) {
            memcpy(d, s, n);
        } else if (n > 16) {
            memcpy(&a, s, 8); memcpy(&b, s + 8, 8); memcpy(&c, s + n - 16, 8); memcpy(&e, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + 8, &b, 8); memcpy(d + n - 16, &c, 8); memcpy(d + n - 8, &e, 8);
        } else if (n >= 8) {
            memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + n - 8, &b, 8);
        } else if (n >= 4) {
            memcpy(&x, s, 4); memcpy(&y, s + n - 4, 4);
            memcpy(d, &x, 4); memcpy(d + n - 4, &y, 4);
        } else if (n) {
            d[0] = s[0]; d[n >> 1] = s[n >> 1]; d[n - 1] = s[n - 1];
        }
    }
    #if defined(__GNUC__)
    struct __pyx_t_10kafkaproto_5arrow_8_records_RecCols;
    struct __pyx_t_10kafkaproto_5arrow_8_records_RCur;
    static inline int __pyx_f_10kafkaproto_5arrow_8_records__put_record(
        struct __pyx_t_10kafkaproto_5arrow_8_records_RecCols *, struct __pyx_t_10kafkaproto_5arrow_8_records_RCur *,
        uint8_t const *, int32_t, uint8_t const *, int32_t, int64_t, int64_t, int32_t, int32_t)
        __attribute__((always_inline));
    #endif
    """
    void kp_copy(uint8_t* d, const uint8_t* s, size_t n) nogil
    const int64_t _US_LIMIT "KP_US_LIMIT"

cdef object _decompress = _decompress_py

cdef enum:
    RC_KEY = 0
    RC_VALUE = 1
    RC_OFFSET = 2
    RC_TIMESTAMP = 3
    RC_TS_TYPE = 4
    RC_HEADERS = 5
    RC_ROW = 6
    RC_COUNT = 7



cdef struct RecCols:
    Col* root
    Col* c[RC_COUNT]        # NULL: column not asked for (parsed, not stored)
    # the batch being written
    int64_t row
    int64_t base_offset
    int64_t base_ts
    int64_t max_ts
    int32_t ts_type
    bint control
    bint keep_control        # control records go into the columns too
    int ctl_type             # the batch's first control record: its type (-1: none)
    int64_t ctl_epoch        # and a transaction marker's coordinator epoch (-1: none)
    int64_t n                # records in the columns, with those of the batch being written
    int64_t first_off        # offsets of the first and last records of a legacy batch
    int64_t last_off
    bint any_off
    int64_t in_total         # the bytes of the blobs being walked, and of those up to the current one's end
    int64_t in_at


cdef int _reserve_rows(RecCols* rc, int64_t count, int64_t nbytes) noexcept nogil:
    """Room for ``count`` more records whose keys and values take at most ``nbytes``
    (the batch's bytes: a record cannot hold more than its batch): the records are
    then written without a check of room."""
    cdef int k
    cdef Col* c
    cdef double whole
    for k in range(RC_COUNT):
        c = rc.c[k]
        if c != NULL:
            if col_reserve(c, count):
                return -1
            if c.what == C_VAR and c.vlen + nbytes > c.vcap:
                # a column outgrowing its block takes room for what the blobs so far say
                # the walk will give (compressed batches give more than their bytes: a
                # guess from the input's size alone left it doubling, each step a copy),
                # an eighth more, and never more than four times the input; a block that
                # large refused, the room needed is enough
                if rc.in_at > 0:
                    whole = <double>(c.vlen + nbytes) * rc.in_total / rc.in_at * 1.125
                    c.vhint = <int64_t>min(whole, 4.0 * rc.in_total)
                if col_vgrow(c, c.vlen + nbytes):
                    c.vhint = 0
                    if col_vgrow(c, c.vlen + nbytes):
                        return -1
    return 0


cdef int _null_at(Col* c, int64_t k) noexcept nogil:
    """Slot ``k`` of a column is null (its validity made at the first null: the
    slots before it, from c.n on those of the batch being written, are valid)."""
    if c.valid == NULL:
        if col_valid_init(c):
            return -1
        memset(c.valid + c.n, 1, k - c.n)
    c.valid[k] = 0
    return 0


cdef struct RCur:
    # the columns as the records of a batch are written: a local of the walk (see
    # records/_walk.pxi), so that the copies through the buffers below do not make
    # the compiler read it again after each; NULL buffers: column not asked for
    int64_t k               # the next slot (rc.n)
    int64_t row
    uint8_t* kdata
    int64_t kl              # the key column's vlen
    int64_t* koffs
    uint8_t* kvalid         # NULL until the column's first null
    uint8_t* vdata
    int64_t vl
    int64_t* voffs
    uint8_t* vvalid
    int64_t* off
    uint8_t* ovalid
    int64_t* ts
    uint8_t* tvalid
    int32_t* tst
    uint8_t* tsvalid
    int64_t* hoffs
    uint8_t* hvalid
    int64_t* rows
    int64_t base_offset
    int64_t base_ts         # (max_ts for a LogAppendTime batch: every record has it)
    int64_t ts_mask         # a record's timestamp delta masked with it: 0 for LogAppendTime, else -1
    int32_t ts_type
    bint any_valid          # one of the validities above is not NULL: slots marked valid one by one
    bint skip               # a control batch's records left out


cdef inline void _cur_load(RecCols* rc, RCur* k) noexcept nogil:
    cdef Col* c
    memset(k, 0, sizeof(RCur))  # (the buffers of a column not asked for: NULL)
    k.k = rc.n
    k.row = rc.row
    c = rc.c[RC_KEY]
    if c != NULL:
        k.kdata, k.kl, k.koffs, k.kvalid = c.vdata, c.vlen, c.offs, c.valid
    c = rc.c[RC_VALUE]
    if c != NULL:
        k.vdata, k.vl, k.voffs, k.vvalid = c.vdata, c.vlen, c.offs, c.valid
    c = rc.c[RC_OFFSET]
    if c != NULL:
        k.off, k.ovalid = <int64_t*>c.data, c.valid
    c = rc.c[RC_TIMESTAMP]
    if c != NULL:
        k.ts, k.tvalid = <int64_t*>c.data, c.valid
    c = rc.c[RC_TS_TYPE]
    if c != NULL:
        k.tst, k.tsvalid = <int32_t*>c.data, c.valid
    c = rc.c[RC_HEADERS]
    if c != NULL:
        k.hoffs, k.hvalid = c.offs, c.valid
    k.rows = <int64_t*>rc.c[RC_ROW].data
    k.base_offset = rc.base_offset
    k.base_ts = rc.max_ts if rc.ts_type == 1 else rc.base_ts
    k.ts_mask = 0 if rc.ts_type == 1 else -1
    k.any_valid = (k.kvalid != NULL or k.vvalid != NULL or k.ovalid != NULL or k.tvalid != NULL or
                   k.tsvalid != NULL or k.hvalid != NULL)
    k.ts_type = rc.ts_type
    k.skip = rc.control and not rc.keep_control


cdef inline void _cur_store(RecCols* rc, const RCur* k) noexcept nogil:
    """What the records written changed: the slots taken, the bytes of keys and values."""
    rc.n = k.k
    if k.koffs != NULL:
        rc.c[RC_KEY].vlen = k.kl
    if k.voffs != NULL:
        rc.c[RC_VALUE].vlen = k.vl


cdef uint8_t* _null_in(RecCols* rc, int col, int64_t i) noexcept nogil:
    """Slot ``i`` of column ``col`` null (out of line: the walk's rare path) → the column's
    validity, for the cursor (NULL: out of memory).  Returned, not stored through a
    pointer into the cursor: the cursor's address never leaves the walk, so that the
    compiler keeps its fields as locals (registers, or stack slots no store through the
    columns' buffers can touch)."""
    cdef Col* c = rc.c[col]
    if _null_at(c, i):
        return NULL
    return c.valid


cdef inline int _put_record(RecCols* rc, RCur* k, const uint8_t* key, int32_t klen, const uint8_t* value,
                            int32_t vlen, int64_t offset, int64_t ts, int32_t ts_type, int32_t headers) noexcept nogil:
    """One record into slot k.k of the columns asked for (room reserved; its headers
    are in already).  The columns' counts are brought up to it by _cur_store and _sync.
    A slot is marked valid only in a column that has had a null (k.any_valid: one
    test a record while no column has)."""
    cdef int64_t i = k.k
    if k.koffs != NULL:
        if key != NULL:
            kp_copy(k.kdata + k.kl, key, klen)  # (nothing for an empty one: NULL may not meet memcpy)
            k.kl += klen
        else:
            k.kvalid = _null_in(rc, RC_KEY, i)
            if k.kvalid == NULL:
                return -1
            k.any_valid = True
        k.koffs[i + 1] = k.kl
    if k.voffs != NULL:
        if value != NULL:
            kp_copy(k.vdata + k.vl, value, vlen)
            k.vl += vlen
        else:
            k.vvalid = _null_in(rc, RC_VALUE, i)
            if k.vvalid == NULL:
                return -1
            k.any_valid = True
        k.voffs[i + 1] = k.vl
    if k.off != NULL:
        k.off[i] = offset
    if k.ts != NULL:
        if -_US_LIMIT <= ts <= _US_LIMIT:
            k.ts[i] = ts * 1000
        else:
            # beyond int64 microseconds: null
            k.ts[i] = 0
            k.tvalid = _null_in(rc, RC_TIMESTAMP, i)
            if k.tvalid == NULL:
                return -1
            k.any_valid = True
    if k.tst != NULL:
        k.tst[i] = ts_type
    if k.hoffs != NULL:
        k.hoffs[i + 1] = k.hoffs[i] + headers
        if headers == 0:
            # no headers: null, as Spark's Kafka source shows it (legacy records have none)
            k.hvalid = _null_in(rc, RC_HEADERS, i)
            if k.hvalid == NULL:
                return -1
            k.any_valid = True
    if k.any_valid:
        # (a null slot above is marked again: the same 0)
        if k.kvalid != NULL:
            k.kvalid[i] = key != NULL
        if k.vvalid != NULL:
            k.vvalid[i] = value != NULL
        if k.ovalid != NULL:
            k.ovalid[i] = 1
        if k.tvalid != NULL:
            k.tvalid[i] = -_US_LIMIT <= ts <= _US_LIMIT
        if k.tsvalid != NULL:
            k.tsvalid[i] = 1
        if k.hvalid != NULL:
            k.hvalid[i] = headers != 0
    k.rows[i] = k.row
    k.k = i + 1
    return 0


cdef inline void _sync(RecCols* rc) noexcept nogil:
    """The columns' counts up to the records written (rc.n)."""
    cdef int k
    for k in range(RC_COUNT):
        if rc.c[k] != NULL:
            rc.c[k].n = rc.n


cdef inline void _v2_header(int64_t* r, BatchView* v) noexcept nogil:
    """A v2 batch row's fields from its header (all but its base offset)."""
    r[B_CODEC] = v.attrs & 0x07
    # -1 (not known) past int64: the batch's error row says so, never a wrapped offset
    r[B_LAST_OFFSET] = -1 if (v.lod > 0 and v.base_offset > INT64_MAX - v.lod) or \
        (v.lod < 0 and v.base_offset < INT64_MIN - v.lod) else v.base_offset + v.lod
    r[B_COUNT] = v.count
    r[B_LEADER_EPOCH] = v.ple
    r[B_CRC] = v.crc
    r[B_ATTRIBUTES] = v.attrs
    r[B_BASE_TS] = v.base_ts
    r[B_MAX_TS] = v.max_ts
    r[B_PID] = v.pid
    r[B_PEPOCH] = v.pepoch
    r[B_BSEQ] = v.bseq


cdef inline int _rc_blob(Col* c, const uint8_t* p, int32_t n) noexcept nogil:
    if col_reserve(c, 1):
        return -1
    if p == NULL:
        c.offs[c.n + 1] = c.vlen
        if col_mark_null(c):
            return -1
        c.n += 1
        return 0
    return col_vappend(c, p, n)


# ---------------------------------------------------------------------------
# the v2 record sink (see records/_walk.pxi): each record straight into the columns

ctypedef RecCols* RSink


cdef inline void rs_begin(RSink s, RCur* k) noexcept nogil:
    _cur_load(s, k)


cdef inline void rs_end(RSink s, RCur* k) noexcept nogil:
    _cur_store(s, k)


cdef inline int rs_header(Cur* c, RSink s, RCur* k, int32_t j, const uint8_t* kp, int32_t kn, const uint8_t* vp,
                          int32_t vn) noexcept nogil:
    cdef Col* hstruct
    if k.hoffs == NULL or k.skip:
        return 0
    hstruct = s.c[RC_HEADERS].kids[0]
    if _rc_blob(hstruct.kids[0], kp, kn) or _rc_blob(hstruct.kids[1], vp, vn) or col_reserve(hstruct, 1):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    col_mark_valid(hstruct)
    hstruct.n += 1
    return 0


cdef inline int rs_record(Cur* c, RSink s, RCur* k, int32_t i, bint control, Py_ssize_t start, int attributes,
                          int64_t timestamp_delta, int32_t offset_delta, const uint8_t* key, int32_t key_len,
                          const uint8_t* value, int32_t value_len, int32_t header_count) noexcept nogil:
    if control:
        if i == 0:
            # the marker the batch holds, for its batch row (the walker checked its key's and value's sizes)
            s.ctl_type = <int16_t>kp_ld16(key + 2)
            if (s.ctl_type == 0 or s.ctl_type == 1) and value_len >= 6:
                s.ctl_epoch = <int32_t>kp_ld32(value + 2)
        if k.skip:
            return 0  # checked, and left out as a consumer does
    if _put_record(s, k, key, key_len, value, value_len, _wadd(k.base_offset, offset_delta),
                   _wadd(k.base_ts, timestamp_delta & k.ts_mask), k.ts_type, header_count):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    return 0


# ---------------------------------------------------------------------------
# the legacy sink

cdef class LSink:
    cdef RecCols* rc
    cdef RCur k             # the columns' cursors while a message's records are written


cdef int ls_buffer(LSink s, object buf, const uint8_t* base) except -1:
    return 0


cdef int ls_begin(LSink s, int count, Py_ssize_t nbytes) except -1:
    if _reserve_rows(s.rc, count, nbytes):
        raise MemoryError()
    s.rc.n = s.rc.c[RC_ROW].n
    _cur_load(s.rc, &s.k)
    return 0


cdef int ls_end(LSink s, bint gone) except -1:
    _cur_store(s.rc, &s.k)
    _sync(s.rc)  # (every record was copied into the columns as it came)
    return 0


cdef int ls_record(LSink s, const uint8_t* b, LMsg* m, int64_t offset, int64_t ts, int ts_type) except -1:
    if not s.rc.any_off:
        s.rc.first_off = offset
        s.rc.any_off = True
    s.rc.last_off = offset
    if _put_record(s.rc, &s.k, NULL if m.klen < 0 else b + m.kpos, m.klen, NULL if m.vlen < 0 else b + m.vpos, m.vlen,
                   offset, ts, ts_type, 0):
        raise MemoryError()
    return 0


include "kafkaproto/records/_walk.pxi"


# ---------------------------------------------------------------------------
# blobs

cdef object _v2_error(Cur* c, object base, Py_ssize_t batch_at, const Budget* budget, int64_t batch_cap):
    path = [c.path[k].value for k in range(c.depth - 1, -1, -1)]
    return _record_failure(c.fail, c.what, c.at, c.x, c.y, path, base, batch_at, budget_call(budget), batch_cap)


# the columns of a batch row, in the order of BATCH_FIELDS (kafkaproto.arrow.BATCHES_SCHEMA less error)
cdef enum:
    B_ROW = 0
    B_POSITION = 1
    B_MAGIC = 2
    B_CODEC = 3
    B_BYTES = 4
    B_RECORDS = 5
    B_TRUNCATED = 6
    B_BASE_OFFSET = 7
    B_LAST_OFFSET = 8
    B_COUNT = 9
    B_LEADER_EPOCH = 10
    B_CRC = 11
    B_ATTRIBUTES = 12
    B_BASE_TS = 13
    B_MAX_TS = 14
    B_PID = 15
    B_PEPOCH = 16
    B_BSEQ = 17
    B_CTL_TYPE = 18
    B_CTL_EPOCH = 19
    B_FIELDS = 20

BATCH_FIELDS = ("row", "position", "magic", "codec", "bytes", "records", "truncated", "base_offset", "last_offset",
                "count", "leader_epoch", "crc", "attributes", "base_timestamp", "max_timestamp", "producer_id",
                "producer_epoch", "base_sequence", "control_type", "coordinator_epoch")
_BATCH_TYPES = (np.int64, np.int64, np.int8, np.int8, np.int64, np.int64, np.bool_, np.int64, np.int64, np.int32,
                np.int32, np.int64, np.int16, np.int64, np.int64, np.int64, np.int16, np.int32, np.int16, np.int64)
# their widths in bytes (0: bits)
cdef int _B_WIDTH[B_FIELDS]
for _k, _t in enumerate(_BATCH_TYPES):
    _B_WIDTH[_k] = 0 if _t is np.bool_ else np.dtype(_t).itemsize


cdef int _error_column(ArrowArray* a, int64_t n, dict errors) except -1:
    """The error column of ``n`` rows: ``errors`` (row -> text), null elsewhere."""
    cdef int64_t* rows
    cdef int64_t j
    if not errors:
        if aa_nulls(a, n, 3, 0):
            raise MemoryError()
        return 0
    keys = sorted(errors)
    rows = <int64_t*>malloc(len(keys) * sizeof(int64_t))
    if rows == NULL:
        raise MemoryError()
    try:
        for j in range(len(keys)):
            rows[j] = keys[j]
        aa_strings(a, n, rows, [errors[r] for r in keys])
    finally:
        free(rows)
    return 0


cdef class _BatchRows:
    """One row per batch walked (what the records came in): filled as the blobs are,
    B_FIELDS int64 values a row in one growing C block."""
    cdef int64_t* v
    cdef int64_t n, cap
    cdef dict errors    # batch row -> the error that stopped its blob (partial walks)

    def __cinit__(self):
        self.v = NULL
        self.n = self.cap = 0
        self.errors = {}

    def __dealloc__(self):
        free(self.v)

    cdef int64_t* add(self, int64_t row, int64_t position) except NULL:
        """A new row (every field -1 but its row, position, and 0 records, not truncated)."""
        cdef int64_t* r
        cdef int k
        cdef int64_t cap
        cdef void* grown
        if self.n == self.cap:
            cap = max(64, 2 * self.cap)
            grown = realloc(self.v, cap * B_FIELDS * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self.v = <int64_t*>grown
            self.cap = cap
        r = self.v + self.n * B_FIELDS
        self.n += 1
        for k in range(B_FIELDS):
            r[k] = -1
        r[B_ROW] = row
        r[B_POSITION] = position
        r[B_RECORDS] = 0
        r[B_TRUNCATED] = 0
        return r

    cdef void v2(self, int64_t row, BatchView* v, int64_t records, RecCols* rc):
        cdef int64_t* r = self.add(row, v.at)
        r[B_MAGIC] = 2
        r[B_BYTES] = 12 + <int64_t>v.size
        r[B_RECORDS] = records
        r[B_BASE_OFFSET] = v.base_offset
        _v2_header(r, v)
        r[B_CTL_TYPE] = rc.ctl_type
        r[B_CTL_EPOCH] = rc.ctl_epoch

    cdef void legacy(self, int64_t row, BatchView* v, LMsg* w, int64_t count, int64_t records, RecCols* rc):
        cdef int64_t* r = self.add(row, v.at)
        r[B_MAGIC] = w.magic
        r[B_CODEC] = w.attrs & 0x07
        r[B_BYTES] = 12 + <int64_t>v.size
        r[B_RECORDS] = records
        # as the object decoder: the first record's offset, the wrapper's (its last)
        r[B_BASE_OFFSET] = rc.first_off
        r[B_LAST_OFFSET] = w.offset
        r[B_COUNT] = count
        r[B_CRC] = w.crc
        r[B_ATTRIBUTES] = w.attrs
        r[B_BASE_TS] = w.ts
        r[B_MAX_TS] = w.ts

    cdef void cut(self, int64_t row, BatchView* v):
        """The partial batch at a blob's end."""
        cdef int64_t* r = self.add(row, v.at)
        r[B_BYTES] = v.available
        r[B_TRUNCATED] = 1
        if v.available >= 8:
            r[B_BASE_OFFSET] = v.base_offset

    cdef void failed(self, int64_t row, const uint8_t* p, Py_ssize_t pos, Py_ssize_t n, BatchView* v, bint whole,
                     str error):
        """The batch a partial walk stopped at: what its header says, as far as it was read."""
        cdef int64_t* r = self.add(row, pos)
        cdef int64_t size
        self.errors[self.n - 1] = error
        if n - pos >= 8:
            r[B_BASE_OFFSET] = <int64_t>kp_ld64(p + pos)
        if n - pos >= 12:
            size = <int32_t>kp_ld32(p + pos + 8)
            # its extent, when its size field is plausible (a batch there may follow it)
            if whole or (14 <= size <= n - pos - 12):
                r[B_BYTES] = 12 + size
        if n - pos >= 17:
            r[B_MAGIC] = <int8_t>p[pos + 16]
        if whole and v.magic == 2:
            _v2_header(r, v)

    cdef void blob_failed(self, int64_t first):
        # the blob's records were rolled back: its batches gave none
        cdef int64_t k
        for k in range(first, self.n):
            self.v[k * B_FIELDS + B_RECORDS] = 0

    cdef object to_c(self, ArrowArray* a):
        """The rows as the columns of BATCHES_SCHEMA (a struct node): 0, or raises."""
        cdef int64_t n = self.n, i
        cdef int k, w
        cdef uint8_t* p
        cdef const int64_t* v = self.v
        if aa_init(a, n, B_FIELDS + 1):
            raise MemoryError()
        for k in range(B_FIELDS):
            w = _B_WIDTH[k]
            if aa_init(a.children[k], n, 0):
                raise MemoryError()
            p = <uint8_t*>malloc(((n + 7) >> 3 if w == 0 else n * w) + 1)
            aa_set(a.children[k], 1, p, -1)
            if p == NULL:
                raise MemoryError()
            if w == 8:
                for i in range(n):
                    (<int64_t*>p)[i] = v[i * B_FIELDS + k]
            elif w == 4:
                for i in range(n):
                    (<int32_t*>p)[i] = <int32_t>v[i * B_FIELDS + k]
            elif w == 2:
                for i in range(n):
                    (<int16_t*>p)[i] = <int16_t>v[i * B_FIELDS + k]
            elif w == 1:
                for i in range(n):
                    (<int8_t*>p)[i] = <int8_t>v[i * B_FIELDS + k]
            else:
                memset(p, 0, (n + 7) >> 3)
                for i in range(n):
                    if v[i * B_FIELDS + k]:
                        p[i >> 3] |= 1 << (i & 7)
        _error_column(a.children[B_FIELDS], n, self.errors)
        return 0

    def export(self):
        cdef int64_t k
        block = np.empty((self.n, B_FIELDS), dtype=np.int64)
        cdef int64_t[:, ::1] view = block
        if self.n:
            memcpy(&view[0, 0], self.v, self.n * B_FIELDS * sizeof(int64_t))
        out = {name: block[:, k].astype(typ) for k, (name, typ) in enumerate(zip(BATCH_FIELDS, _BATCH_TYPES))}
        out["error"] = self.errors
        return out


cdef int _blob(const uint8_t* p, int64_t n, int64_t row, bint check_crc, object limit, RecCols* rc,
               LSink ls, _BatchRows out, int32_t max_records, int32_t max_headers,
               int64_t max_batch_headers, bint partial, Budget* budget) except -1:
    """Every batch of one blob into the columns; raises the blob's error (``partial``:
    stops at it instead, keeping the records of the batches before it, and lists
    it among the batches with its error).  What the blob takes of the call's
    ``budget`` is the caller's to give back when it raises; a partial walk gives
    back the failed batch's share itself."""
    cdef BatchView v
    cdef Py_ssize_t pos = 0, start, end
    cdef int st
    cdef Cur c
    cdef Step steps[MAX_PATH]
    cdef LMsg w
    cdef Py_buffer view
    cdef const uint8_t* rb
    cdef int64_t before, mark = 0, count, headers = 0, shift = 0, headers_left
    cdef bint whole
    cdef int k
    cdef Budget taken
    mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
    rc.row = row
    while True:
        if partial:
            # the batches before are out for good: a failure rolls back to here
            mark = rc.c[RC_ROW].n
            taken = budget[0]
        whole = False
        try:
            st = _batch_at(p, pos, n, &v)
            if st != BATCH_WHOLE:
                # the end, or a partial batch at the end: normal in a Fetch response
                if st == BATCH_TRUNCATED and out is not None:
                    out.cut(row, &v)
                return 0
            whole = True
            before = rc.c[RC_ROW].n
            rc.ctl_type = -1
            rc.ctl_epoch = -1
            rc.any_off = False
            if v.magic < 2:
                count = _legacy_walk(mv, p, n, &v, check_crc, limit, ls, &w, max_records, budget, True, &shift)
                if out is not None:
                    out.legacy(row, &v, &w, count, rc.c[RC_ROW].n - before, rc)
                pos = v.end
                continue
            region = _v2_records(&v, mv, check_crc, limit, max_records, budget, &start, &end)
            headers_left = budget_headers_left(budget, max_batch_headers)
            if region is None:
                rb = p
            else:
                PyObject_GetBuffer(region, &view, PyBUF_SIMPLE)
                rb = <const uint8_t*>view.buf
            try:
                rc.base_offset = v.base_offset
                rc.base_ts = v.base_ts
                rc.max_ts = v.max_ts
                rc.ts_type = 1 if v.attrs & 0x08 else 0
                rc.control = v.attrs & 0x20
                cur_init(&c, rb, start, end)
                c.path = steps
                with nogil:
                    # room for the whole batch up front: keys and values take at most its bytes
                    if _reserve_rows(rc, v.count, end - start):
                        st = -2
                    else:
                        rc.n = rc.c[RC_ROW].n
                        st = _walk_records(&c, v.count, rc.control, rc, max_headers, headers_left, &headers)
                        _sync(rc)
            finally:
                if region is not None:
                    PyBuffer_Release(&view)
            if st == -2 or (st and c.fail == F_MEMORY):
                raise MemoryError()
            if st:
                raise _v2_error(&c, 0 if region is None else None, v.at, budget, max_batch_headers)
            budget.headers += headers
            if out is not None:
                out.v2(row, &v, rc.c[RC_ROW].n - before, rc)
        except KafkaProtocolError as exc:
            if not partial:
                raise
            for k in range(RC_COUNT):
                if rc.c[k] != NULL:
                    col_truncate(rc.c[k], mark)
            budget[0] = taken
            out.failed(row, p, pos, n, &v, whole, str(exc))
            return 0
        pos = v.end


cdef int _error_row(RecCols* rc, int64_t row) except -1:
    cdef int k
    for k in range(RC_COUNT):
        if rc.c[k] == NULL:
            continue
        if k == RC_ROW:
            if col_reserve(rc.c[k], 1):
                raise MemoryError()
            (<int64_t*>rc.c[k].data)[rc.c[k].n] = row
            rc.c[k].n += 1
        elif col_put_null(rc.c[k]):
            raise MemoryError()
    return 0


cdef int _cols_new(RecCols* rc, const bint* want, int64_t cap, bint control) except -1:
    """The columns asked for (``want``: one flag per RC_ column; the row column always)."""
    cdef int k, m = 0, nkids = 0
    cdef Col* c
    rc.keep_control = control
    for k in range(RC_COUNT):
        rc.c[k] = NULL
        nkids += want[k] or k == RC_ROW
    rc.root = col_new(C_STRUCT, 0, nkids, 16)
    if rc.root == NULL:
        raise MemoryError()
    for k in range(RC_COUNT):
        if not (want[k] or k == RC_ROW):
            continue
        if k == RC_KEY or k == RC_VALUE:
            c = col_new(C_VAR, 0, 0, cap)
        elif k == RC_HEADERS:
            c = col_new(C_LIST, 0, 1, cap)
        else:
            c = col_new(C_FIXED, 4 if k == RC_TS_TYPE else 8, 0, cap)
        if c == NULL:
            raise MemoryError()
        rc.root.kids[m] = rc.c[k] = c
        m += 1
        if k == RC_HEADERS:
            # list<struct<key: string, value: binary>>
            c.kids[0] = col_new(C_STRUCT, 0, 2, 64)
            if c.kids[0] == NULL:
                raise MemoryError()
            c.kids[0].kids[0] = col_new(C_VAR, 0, 0, 64)
            c.kids[0].kids[1] = col_new(C_VAR, 0, 0, 64)
            if c.kids[0].kids[0] == NULL or c.kids[0].kids[1] == NULL:
                raise MemoryError()
    return 0


cdef int _walk_rows(RowsIn rin, int64_t row0, bint check_crc, object limit, RecCols* rc, _BatchRows out,
                    int32_t max_records, int32_t max_headers, int64_t max_batch_headers, bint partial,
                    Budget* budget, list failed) except -1:
    """Every blob of the rows into the columns (row numbers from ``row0``); a blob that
    fails rolls back and is one row of nulls: (input row, its output row, its error)
    appended to ``failed``."""
    cdef int64_t n = rin.r.n, i, blen
    cdef const uint8_t* p
    cdef Py_ssize_t first
    cdef int k
    cdef Budget taken
    cdef LSink ls = LSink()
    ls.rc = rc
    rc.in_total = rows_bytes(&rin.r)
    rc.in_at = 0
    for i in range(n):
        first = out.n if out is not None else 0
        taken = budget[0]
        error = None
        if not row_at(&rin.r, i, &p, &blen):
            if partial:
                out.add(row0 + i, 0)
                out.errors[out.n - 1] = "null records blob"
            else:
                error = "null records blob"
        else:
            rc.in_at += blen
            try:
                _blob(p, blen, row0 + i, check_crc, limit, rc, ls, out, max_records, max_headers, max_batch_headers,
                      partial, budget)
            except KafkaProtocolError as exc:
                error = str(exc)
        if error is not None:
            budget[0] = taken
            if out is not None:
                out.blob_failed(first)
            # roll the blob's records back; one row of nulls stands for it
            for k in range(RC_COUNT):
                if rc.c[k] != NULL:
                    col_truncate(rc.c[k], rc.root.n)
            failed.append((i, rc.root.n, error))
            _error_row(rc, row0 + i)
        rc.root.n = rc.c[RC_ROW].n
    return 0


def arrow_records(arr, int kind, bint check_crc, max_decompressed_size, want, bint batches=False,
                  max_records_per_batch=_DEFAULT_MAX_RECORDS, max_headers_per_record=_DEFAULT_MAX_HEADERS,
                  max_headers_per_batch=_DEFAULT_MAX_BATCH_HEADERS, bint partial=False, bint control=False,
                  max_records_per_call=_DEFAULT_MAX_CALL_RECORDS, max_headers_per_call=_DEFAULT_MAX_CALL_HEADERS,
                  max_decompressed_per_call=_DEFAULT_MAX_CALL_DECOMPRESSED, budget=None):
    """Decode every records blob of ``arr`` into the Spark-shaped columns, as a column tree.

    ``want``: 7 flags (key, value, offset, timestamp, timestampType, headers,
    row) telling which columns to fill.  Returns ``(status, tree, errors,
    batch rows)``: status 0 for a blob decoded, else 1 (one row of nulls
    stands for it, and ``errors`` maps the blob's index to records.decode's
    error text); the tree's children are the asked-for columns in that
    order; with ``batches``, a dict of arrays with one entry per batch the
    walk went through (row, position, magic, codec, bytes, records it gave,
    truncated: the partial batch at a blob's end, and the header fields of
    BATCH_FIELDS; ``error``: batch row -> error), else None.  ``partial``
    (needs ``batches``): a blob stops at its first bad batch, keeping the
    records before it; that batch is listed with its error and the blob has
    no error row.  ``control``: control records are rows too.  A batch past
    ``max_records_per_batch`` or ``max_headers_per_batch``, or a record past
    ``max_headers_per_record``, is its blob's error (RecordLimitError's text);
    the header caps are checked before a record's headers go into the columns.
    The ``max_*_per_call`` caps count across every row (``budget``: a
    CallBudget shared with other calls, the caps then its own, kept up to
    date): the row that would pass one is an error row, and gives back what
    it took (a partial walk stops at the batch that would, as at any bad
    batch).  (records_table is the same walk, handed to pyarrow whole.)
    """
    cdef RowsIn rin = rows_in(arr, kind)
    cdef RecCols rc
    cdef int k
    cdef bint flags[RC_COUNT]
    cdef int64_t cap = min(max(rows_bytes(&rin.r) // 64, 64), 1 << 20)
    cdef _BatchRows out = _BatchRows() if batches else None
    cdef int32_t max_records, max_headers
    cdef int64_t max_batch_headers
    cdef Budget bud
    max_records, max_headers, max_batch_headers = _record_caps(max_records_per_batch, max_headers_per_record,
                                                               max_headers_per_batch)
    if partial and not batches:
        raise ValueError("a partial walk reports its failures among the batches: pass batches=True")
    if budget is None:
        call_records, call_headers, call_decompressed = _call_caps(max_records_per_call, max_headers_per_call,
                                                                   max_decompressed_per_call)
        budget_init(&bud, call_records, call_headers, call_decompressed)
    else:
        budget_load(&bud, budget)
    wanted = [bool(w) for w in want]
    if not wanted[RC_ROW]:
        raise ValueError("the row column is always filled")
    for k in range(RC_COUNT):
        flags[k] = wanted[k]
    status = np.zeros(rin.r.n, dtype=np.uint8)
    errors = {}
    failed = []
    rc.root = NULL
    try:
        _cols_new(&rc, flags, cap, control)
        try:
            _walk_rows(rin, 0, check_crc, max_decompressed_size, &rc, out, max_records, max_headers,
                       max_batch_headers, partial, &bud, failed)
        finally:
            if budget is not None:
                budget_store(&bud, budget)
        for i, _, error in failed:
            status[i] = 1
            errors[i] = error
        tree = col_export(rc.root)
    finally:
        col_free(rc.root)
    return status, tree, errors, None if out is None else out.export()


# ---------------------------------------------------------------------------
# records_table: the whole of kafkaproto.arrow.records

# RECORDS_SCHEMA's columns in order, and where each comes from
cdef enum:
    S_KEY = 0
    S_VALUE = 1
    S_TOPIC = 2
    S_PARTITION = 3
    S_OFFSET = 4
    S_TIMESTAMP = 5
    S_TS_TYPE = 6
    S_HEADERS = 7
    S_ROW = 8
    S_ERROR = 9
    S_COUNT = 10

cdef int _S_RC[S_COUNT]       # the RC_ column of a schema column (-1: topic, partition, error)
_S_RC[:] = [RC_KEY, RC_VALUE, -1, -1, RC_OFFSET, RC_TIMESTAMP, RC_TS_TYPE, RC_HEADERS, RC_ROW, -1]
cdef dict _S_BIT = {name: 1 << k for k, name in enumerate(_RECORDS_SCHEMA.names)}
cdef int _S_ALL = (1 << S_COUNT) - 1
cdef int _S_ALWAYS = (1 << S_ROW) | (1 << S_ERROR)
cdef dict _SCHEMAS = {}
cdef object _LARGE_STRING = pa.large_string()
cdef object _INT32 = pa.int32()
cdef object _import_batch = pa.RecordBatch._import_from_c
cdef object _from_batches = pa.Table.from_batches
cdef dict _KIND_OF = _build.ARRAY_KIND


cdef object _schema(int mask):
    got = _SCHEMAS.get(mask)
    if got is None:
        got = _SCHEMAS[mask] = pa.schema([f for k, f in enumerate(_RECORDS_SCHEMA) if mask & (1 << k)])
    return got


cdef inline bint _plain(object x, int64_t least, int64_t most, int64_t* out):
    """``x`` is an int within [least, most] (the common case of a cap: nothing to check)."""
    cdef int overflow = 0
    cdef long long v
    if type(x) is not int:
        return False
    v = PyLong_AsLongLongAndOverflow(x, &overflow)
    if overflow or v < least or v > most:
        return False
    out[0] = v
    return True


cdef int _take_strings(ArrowArray* a, object values, const int64_t* rows, int64_t n, int64_t row0) except -1:
    """A large_string column: ``values[rows[i] - row0]`` for each of ``n`` rows."""
    cdef RowsIn src = rows_in(values, IN_LARGE)
    cdef int64_t i, total = 0, len_, at = 0, nulls = 0
    cdef const uint8_t* p
    cdef int64_t* offs
    cdef uint8_t* data
    cdef uint8_t* valid = NULL
    for i in range(n):
        if row_at(&src.r, rows[i] - row0, &p, &len_):
            total += len_
        else:
            nulls += 1
    if aa_init(a, n, 0):
        raise MemoryError()
    a.null_count = nulls
    if nulls:
        valid = <uint8_t*>calloc(((n + 7) >> 3) + 1, 1)
        aa_set(a, 0, valid, -1)
        if valid == NULL:
            raise MemoryError()
    offs = <int64_t*>malloc((n + 1) * 8)
    aa_set(a, 1, offs, -1)
    data = <uint8_t*>malloc(total + 1)
    aa_set(a, 2, data, -1)
    if offs == NULL or data == NULL:
        raise MemoryError()
    offs[0] = 0
    for i in range(n):
        if row_at(&src.r, rows[i] - row0, &p, &len_):
            if len_:
                memcpy(data + at, p, len_)
            at += len_
            if valid != NULL:
                valid[i >> 3] |= 1 << (i & 7)
        offs[i + 1] = at
    return 0


cdef int _take_int32(ArrowArray* a, object values, const int64_t* rows, int64_t n, int64_t row0) except -1:
    """An int32 column: ``values[rows[i] - row0]`` for each of ``n`` rows."""
    cdef int64_t i, j, off = values.offset, nulls = 0
    bufs = values.buffers()
    cdef const uint8_t* src_valid = NULL
    cdef const int32_t* src = NULL
    cdef int32_t* data
    cdef uint8_t* valid = NULL
    if bufs[0] is not None and values.null_count:
        src_valid = <const uint8_t*><uintptr_t>bufs[0].address
    if bufs[1] is not None:
        src = <const int32_t*><uintptr_t>bufs[1].address
    if aa_init(a, n, 0):
        raise MemoryError()
    data = <int32_t*>malloc(n * 4 + 4)
    aa_set(a, 1, data, -1)
    if data == NULL:
        raise MemoryError()
    if src_valid != NULL:
        valid = <uint8_t*>calloc(((n + 7) >> 3) + 1, 1)
        aa_set(a, 0, valid, -1)
        if valid == NULL:
            raise MemoryError()
    for i in range(n):
        j = rows[i] - row0 + off
        if src_valid != NULL and not (src_valid[j >> 3] >> (j & 7)) & 1:
            data[i] = 0
            nulls += 1
        else:
            data[i] = src[j]
            if valid != NULL:
                valid[i >> 3] |= 1 << (i & 7)
    a.null_count = nulls
    return 0


cdef object _records_batch(RecCols* rc, int mask, object schema, object topic, object partition, int64_t row0,
                           list failed):
    """The columns of one chunk → a pyarrow RecordBatch of ``schema`` (through the C data interface)."""
    cdef ArrowArray root
    cdef int64_t n = rc.c[RC_ROW].n, j
    cdef const int64_t* rows = <const int64_t*>rc.c[RC_ROW].data
    cdef int k, m = 0
    cdef int64_t* at
    cdef ArrowArray* kid
    if aa_init(&root, n, len(schema)):
        raise MemoryError()
    try:
        for k in range(S_COUNT):
            if not mask & (1 << k):
                continue
            kid = root.children[m]
            m += 1
            if k == S_TOPIC:
                if topic is None:
                    if aa_nulls(kid, n, 3, 0):
                        raise MemoryError()
                else:
                    _take_strings(kid, topic, rows, n, row0)
            elif k == S_PARTITION:
                if partition is None:
                    if aa_nulls(kid, n, 2, 4):
                        raise MemoryError()
                else:
                    _take_int32(kid, partition, rows, n, row0)
            elif k == S_ERROR:
                if not failed:
                    if aa_nulls(kid, n, 3, 0):
                        raise MemoryError()
                else:
                    at = <int64_t*>malloc(len(failed) * sizeof(int64_t))
                    if at == NULL:
                        raise MemoryError()
                    try:
                        for j in range(len(failed)):
                            at[j] = failed[j][1]
                        aa_strings(kid, n, at, [f[2] for f in failed])
                    finally:
                        free(at)
            elif k != S_ROW:
                if col_to_c(rc.c[_S_RC[k]], kid):
                    raise MemoryError()
        # the row column last: topic and partition read it
        m = 0
        for k in range(S_ROW):
            m += (mask >> k) & 1
        if col_to_c(rc.c[RC_ROW], root.children[m]):
            raise MemoryError()
        return _import_batch(<uintptr_t>&root, schema)
    finally:
        aa_release(&root)  # (nothing left to release once pyarrow took it)


cdef object _batches_batch(_BatchRows out):
    cdef ArrowArray root
    try:
        out.to_c(&root)
        return _import_batch(<uintptr_t>&root, _BATCHES_SCHEMA)
    finally:
        aa_release(&root)


def records_table(blobs, topic=None, partition=None, columns=None, check_crc=True,
                  max_decompressed_size=_DEFAULT_MAX_DECOMPRESSED, batches=False,
                  max_records_per_batch=_DEFAULT_MAX_RECORDS, max_headers_per_record=_DEFAULT_MAX_HEADERS,
                  max_headers_per_batch=_DEFAULT_MAX_BATCH_HEADERS, control=False, partial=False,
                  max_records_per_call=_DEFAULT_MAX_CALL_RECORDS, max_headers_per_call=_DEFAULT_MAX_CALL_HEADERS,
                  max_decompressed_per_call=_DEFAULT_MAX_CALL_DECOMPRESSED):
    """kafkaproto.arrow.records: the table (with ``batches``, the records and the
    batches tables) of a column of records blobs, one walk of every chunk."""
    cdef int64_t max_records = 0, max_headers = 0, max_batch_headers = 0
    cdef int64_t call_records = 0, call_headers = 0, call_decompressed = 0
    cdef int mask, k
    cdef bint flags[RC_COUNT]
    cdef Budget bud
    cdef RecCols rc
    cdef RowsIn rin
    cdef int64_t start = 0, n, cap
    cdef _BatchRows out
    cdef bint want_batches = batches, want_partial = partial
    # the caps, as records.decode checks them (the Python check only for what is not a plain int in range)
    if not (_plain(max_records_per_batch, 1, 0x7FFFFFFF, &max_records)
            and _plain(max_headers_per_record, 0, 0x7FFFFFFF, &max_headers)
            and _plain(max_headers_per_batch, 0, 0x7FFFFFFFFFFFFFFF, &max_batch_headers)):
        max_records, max_headers, max_batch_headers = _record_caps(max_records_per_batch, max_headers_per_record,
                                                                   max_headers_per_batch)
    if not (_plain(max_records_per_call, 0, 0x7FFFFFFFFFFFFFFF, &call_records)
            and _plain(max_headers_per_call, 0, 0x7FFFFFFFFFFFFFFF, &call_headers)
            and _plain(max_decompressed_per_call, 0, 0x7FFFFFFFFFFFFFFF, &call_decompressed)):
        call_records, call_headers, call_decompressed = _call_caps(max_records_per_call, max_headers_per_call,
                                                                   max_decompressed_per_call)
    budget_init(&bud, call_records, call_headers, call_decompressed)
    if columns is None:
        mask = _S_ALL
    else:
        mask = _S_ALWAYS
        unknown = None
        for name in set(columns):
            bit = _S_BIT.get(name)
            if bit is None:
                unknown = [name] if unknown is None else unknown + [name]
            else:
                mask |= <int>bit
        if unknown is not None:
            raise ValueError(f"no such records column: {', '.join(sorted(unknown))}")
    kind = _KIND_OF.get(type(blobs))
    if kind is not None:
        chunks = ((blobs, kind),)
        n = len(blobs)
    else:
        chunks, _ = _chunks(blobs)
        n = sum([len(a) for a, _ in chunks])
    if topic is not None:
        topic = _pass_through(topic, n, _LARGE_STRING, "topic")
    if partition is not None:
        partition = _pass_through(partition, n, _INT32, "partition")
    if want_partial and not want_batches:
        raise ValueError("partial=True reports the failing batch in the batches table: pass batches=True too")
    schema = _schema(mask)
    for k in range(RC_COUNT):
        flags[k] = False
    for k in range(S_COUNT):
        if _S_RC[k] >= 0 and mask & (1 << k):
            flags[_S_RC[k]] = True
    tables = []
    walks = []
    for arr, kind in chunks:
        rin = rows_in(arr, kind)
        cap = min(max(rows_bytes(&rin.r) // 64, 64), 1 << 20)
        out = _BatchRows() if want_batches else None
        failed = []
        rc.root = NULL
        try:
            _cols_new(&rc, flags, cap, control)
            _walk_rows(rin, start, check_crc, max_decompressed_size, &rc, out, <int32_t>max_records,
                       <int32_t>max_headers, max_batch_headers, want_partial, &bud, failed)
            tables.append(_records_batch(&rc, mask, schema, None if topic is None else topic[start:start + rin.r.n],
                                         None if partition is None else partition[start:start + rin.r.n], start,
                                         failed))
        finally:
            col_free(rc.root)
        if want_batches:
            walks.append(_batches_batch(out))
        start += rin.r.n
    table = _from_batches(tables, schema)
    if not want_batches:
        return table
    return table, _from_batches(walks, _BATCHES_SCHEMA)
