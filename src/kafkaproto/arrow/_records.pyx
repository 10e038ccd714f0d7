# cython: language_level=3
"""Records blobs → the columns of Spark's Kafka source (``kafkaproto.arrow._records``); twin: ``_records_py``.

The record batches' own walkers (``records/_walk.pxi``: batches, v2 records,
legacy message sets) run here with column sinks.  Decompression goes through
kafkaproto.records._compression, once per batch (or legacy wrapper); the
records of a v2 batch are checked and written into the columns in one loop
without the GIL.  Control records are checked and left out, as a Kafka
consumer does.  A blob that fails becomes one row of nulls whose error is the
text records.decode raises for it, taken from the walker's failure record.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_READ
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memcpy, memset

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_utf8_ok, _uv32, _uv64, _unzig32, _unzig64, _wadd, Cur, cur_init, cur_fail,
    cur_step, Step, MAX_PATH, VARINT_TRUNCATED, P_INDEX, F_PYTHON, F_MEMORY,
)
from kafkaproto._codec cimport crc32_of
from kafkaproto.arrow._columns cimport (
    Col, Rows, RowsIn, rows_in, row_at, col_new, col_free, col_grow, col_reserve, col_mark_valid, col_mark_null,
    col_vappend, col_vgrow, col_put_null, col_truncate, col_export, col_valid_init, C_FIXED, C_VAR, C_STRUCT, C_LIST,
)

import numpy as np

from crc32c import crc32c as _crc32c

from kafkaproto.errors import KafkaProtocolError
from kafkaproto.records import _compression
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

cdef enum:
    RC_KEY = 0
    RC_VALUE = 1
    RC_OFFSET = 2
    RC_TIMESTAMP = 3
    RC_TS_TYPE = 4
    RC_HEADERS = 5
    RC_ROW = 6
    RC_COUNT = 7

cdef int64_t _US_LIMIT = 9223372036854775  # |milliseconds| that still fit in int64 microseconds


cdef enum:
    # records staged before they are written out, column by column
    STAGE = 2048

cdef struct Stage:
    const uint8_t* key[STAGE]       # NULL: null
    int32_t klen[STAGE]
    const uint8_t* value[STAGE]
    int32_t vlen[STAGE]
    int64_t offset[STAGE]
    int64_t ts[STAGE]               # milliseconds
    int32_t ts_type[STAGE]
    int32_t headers[STAGE]          # how many (0: null)
    int n
    int64_t kbytes                  # bytes of the staged keys, values
    int64_t vbytes
    int64_t emitted                 # records staged since the call began

cdef struct RecCols:
    Col* root
    Col* c[RC_COUNT]        # NULL: column not asked for (parsed, not stored)
    Stage* stage
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
    int64_t first_off        # offsets of the first and last records staged for the batch
    int64_t last_off
    bint any_off


cdef int _reserve_rows(RecCols* rc, int64_t count, int64_t nbytes) noexcept nogil:
    """Room for ``count`` more records whose keys and values take at most ``nbytes``
    (the batch's bytes: a record cannot hold more than its batch), besides the
    records staged already."""
    cdef int k
    cdef int64_t need
    cdef Stage* st = rc.stage
    for k in range(RC_COUNT):
        if rc.c[k] != NULL and k != RC_HEADERS:
            if col_reserve(rc.c[k], count + st.n):
                return -1
            if rc.c[k].what == C_VAR:
                need = rc.c[k].vlen + nbytes + (st.kbytes if k == RC_KEY else st.vbytes)
                if need > rc.c[k].vcap and col_vgrow(rc.c[k], need):
                    return -1
    return 0


cdef void _blobs(Col* c, const uint8_t** ptr, const int32_t* size, int n) noexcept nogil:
    cdef int i
    cdef int64_t k = c.n, vlen = c.vlen
    cdef int64_t* offs = c.offs
    cdef uint8_t* data = c.vdata
    for i in range(n):
        if ptr[i] != NULL:
            if size[i]:  # (an empty key or value: a NULL buffer must not meet memcpy)
                memcpy(data + vlen, ptr[i], size[i])
            vlen += size[i]
        offs[k + i + 1] = vlen
    c.vlen = vlen


cdef int _validity(Col* c, const uint8_t** ptr, int n) noexcept nogil:
    """Validity of the staged blobs (NULL pointer: null)."""
    cdef int i
    for i in range(n):
        if ptr[i] == NULL:
            if c.valid == NULL and col_valid_init(c):
                return -1
            break
    if c.valid != NULL:
        for i in range(n):
            c.valid[c.n + i] = ptr[i] != NULL
    return 0


cdef int _flush(RecCols* rc) noexcept nogil:
    """Write the staged records out, one column at a time (room was reserved)."""
    cdef Stage* st = rc.stage
    cdef int n = st.n, i
    cdef Col* c
    cdef int64_t* d64
    cdef int32_t* d32
    cdef int64_t ts
    if n == 0:
        return 0
    st.n = 0
    st.kbytes = st.vbytes = 0
    c = rc.c[RC_KEY]
    if c != NULL:
        _blobs(c, st.key, st.klen, n)
        if _validity(c, st.key, n):
            return -1
        c.n += n
    c = rc.c[RC_VALUE]
    if c != NULL:
        _blobs(c, st.value, st.vlen, n)
        if _validity(c, st.value, n):
            return -1
        c.n += n
    c = rc.c[RC_OFFSET]
    if c != NULL:
        d64 = <int64_t*>c.data + c.n
        for i in range(n):
            d64[i] = st.offset[i]
        if c.valid != NULL:
            memset(c.valid + c.n, 1, n)
        c.n += n
    c = rc.c[RC_TS_TYPE]
    if c != NULL:
        d32 = <int32_t*>c.data + c.n
        for i in range(n):
            d32[i] = st.ts_type[i]
        if c.valid != NULL:
            memset(c.valid + c.n, 1, n)
        c.n += n
    c = rc.c[RC_ROW]
    d64 = <int64_t*>c.data + c.n
    for i in range(n):
        d64[i] = rc.row
    c.n += n
    c = rc.c[RC_TIMESTAMP]
    if c != NULL:
        d64 = <int64_t*>c.data + c.n
        for i in range(n):
            ts = st.ts[i]
            if -_US_LIMIT <= ts <= _US_LIMIT:
                d64[i] = ts * 1000
            else:
                # beyond int64 microseconds: null
                d64[i] = 0
                if c.valid == NULL and col_valid_init(c):
                    return -1
        if c.valid != NULL:
            for i in range(n):
                c.valid[c.n + i] = -_US_LIMIT <= st.ts[i] <= _US_LIMIT
        c.n += n
    c = rc.c[RC_HEADERS]
    if c != NULL:
        if col_reserve(c, n):
            return -1
        for i in range(n):
            c.offs[c.n + i + 1] = c.offs[c.n + i] + st.headers[i]
            if st.headers[i] == 0 and c.valid == NULL and col_valid_init(c):
                # no headers: null, as Spark's Kafka source shows it (legacy records have none)
                return -1
        if c.valid != NULL:
            for i in range(n):
                c.valid[c.n + i] = st.headers[i] != 0
        c.n += n
    return 0


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


cdef inline int _stage(RecCols* rc, const uint8_t* key, int32_t klen, const uint8_t* value, int32_t vlen,
                       int64_t offset, int64_t ts, int32_t ts_type, int32_t headers) noexcept nogil:
    cdef Stage* st = rc.stage
    cdef int i = st.n
    st.key[i] = key
    st.klen[i] = klen
    st.value[i] = value
    st.vlen[i] = vlen
    st.offset[i] = offset
    st.ts[i] = ts
    st.ts_type[i] = ts_type
    st.headers[i] = headers
    st.emitted += 1
    if klen > 0:
        st.kbytes += klen
    if vlen > 0:
        st.vbytes += vlen
    st.n = i + 1
    if st.n == STAGE:
        return _flush(rc)
    return 0


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
# the v2 record sink (see records/_walk.pxi): records are staged, then written
# out column by column per batch (tight loops over one column at a time)

ctypedef RecCols* RSink


cdef inline int rs_header(Cur* c, RSink s, int32_t j, const uint8_t* kp, int32_t kn, const uint8_t* vp,
                          int32_t vn) noexcept nogil:
    cdef Col* hcol = s.c[RC_HEADERS]
    cdef Col* hstruct
    if hcol == NULL or (s.control and not s.keep_control):
        return 0
    hstruct = hcol.kids[0]
    if _rc_blob(hstruct.kids[0], kp, kn) or _rc_blob(hstruct.kids[1], vp, vn) or col_reserve(hstruct, 1):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    col_mark_valid(hstruct)
    hstruct.n += 1
    return 0


cdef inline int rs_record(Cur* c, RSink s, RecView* r) noexcept nogil:
    if s.control:
        if r.index == 0:
            # the marker the batch holds, for its batch row (the walker checked its key's and value's sizes)
            s.ctl_type = <int16_t>kp_ld16(r.key + 2)
            if (s.ctl_type == 0 or s.ctl_type == 1) and r.value_len >= 6:
                s.ctl_epoch = <int32_t>kp_ld32(r.value + 2)
        if not s.keep_control:
            return 0  # checked, and left out as a consumer does
    if _stage(s, r.key, r.key_len, r.value, r.value_len, _wadd(s.base_offset, r.offset_delta),
              s.max_ts if s.ts_type == 1 else _wadd(s.base_ts, r.timestamp_delta), s.ts_type, r.header_count):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    return 0


# ---------------------------------------------------------------------------
# the legacy sink

cdef class LSink:
    cdef RecCols* rc


cdef int ls_buffer(LSink s, object buf, const uint8_t* base) except -1:
    return 0


cdef int ls_begin(LSink s, int count, Py_ssize_t nbytes) except -1:
    if _reserve_rows(s.rc, count, nbytes):
        raise MemoryError()
    return 0


cdef int ls_end(LSink s, bint gone) except -1:
    # staged records point into their buffer: out with them before a decompressed one goes
    if gone and _flush(s.rc):
        raise MemoryError()
    return 0


cdef int ls_record(LSink s, const uint8_t* b, LMsg* m, int64_t offset, int64_t ts, int ts_type) except -1:
    if not s.rc.any_off:
        s.rc.first_off = offset
        s.rc.any_off = True
    s.rc.last_off = offset
    if _stage(s.rc, NULL if m.klen < 0 else b + m.kpos, m.klen, NULL if m.vlen < 0 else b + m.vpos, m.vlen,
              offset, ts, ts_type, 0):
        raise MemoryError()
    return 0


include "kafkaproto/records/_walk.pxi"


# ---------------------------------------------------------------------------
# blobs

cdef object _v2_error(Cur* c, object base, Py_ssize_t batch_at, object budget, int64_t batch_cap):
    path = [c.path[k].value for k in range(c.depth - 1, -1, -1)]
    return _record_failure(c.fail, c.what, c.at, c.x, c.y, path, base, batch_at, budget, batch_cap)


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
               int64_t max_batch_headers, bint partial, object budget) except -1:
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
    taken = None
    mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
    rc.row = row
    rc.stage.n = 0
    rc.stage.kbytes = rc.stage.vbytes = 0
    while True:
        if partial:
            # the batches before are out for good: a failure rolls back to here
            if _flush(rc):
                raise MemoryError()
            mark = rc.c[RC_ROW].n
            taken = budget.mark()
        whole = False
        try:
            st = _batch_at(p, pos, n, &v)
            if st != BATCH_WHOLE:
                # the end, or a partial batch at the end: normal in a Fetch response
                if _flush(rc):
                    raise MemoryError()
                if st == BATCH_TRUNCATED and out is not None:
                    out.cut(row, &v)
                return 0
            whole = True
            before = rc.stage.emitted
            rc.ctl_type = -1
            rc.ctl_epoch = -1
            rc.any_off = False
            if v.magic < 2:
                count = _legacy_walk(mv, p, n, &v, check_crc, limit, ls, &w, max_records, budget, True, &shift)
                if out is not None:
                    out.legacy(row, &v, &w, count, rc.stage.emitted - before, rc)
                pos = v.end
                continue
            region, start, end = _v2_records(&v, mv, check_crc, limit, max_records, budget)
            headers_left = budget.headers_left(max_batch_headers)
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
                        st = _walk_records(&c, v.count, rc.control, rc, max_headers, headers_left, &headers)
                        if st == 0 and _flush(rc):
                            st = -2
            finally:
                if region is not None:
                    PyBuffer_Release(&view)
            if st == -2 or (st and c.fail == F_MEMORY):
                raise MemoryError()
            if st:
                raise _v2_error(&c, 0 if region is None else None, v.at, budget, max_batch_headers)
            budget.headers += headers
            if out is not None:
                out.v2(row, &v, rc.stage.emitted - before, rc)
        except KafkaProtocolError as exc:
            if not partial:
                raise
            rc.stage.n = 0
            rc.stage.kbytes = rc.stage.vbytes = 0
            for k in range(RC_COUNT):
                if rc.c[k] != NULL:
                    col_truncate(rc.c[k], mark)
            budget.reset(taken)
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


cdef int64_t _rows_bytes(Rows* r, arr):
    """The bytes of the rows (what arr.nbytes would say of their data, without its cost)."""
    if r.n == 0:
        return 0
    if r.off64 != NULL:
        return r.off64[r.off + r.n] - r.off64[r.off]
    if r.off32 != NULL:
        return r.off32[r.off + r.n] - r.off32[r.off]
    return arr.nbytes


def arrow_records(arr, int kind, bint check_crc, max_decompressed_size, want, bint batches=False,
                  max_records_per_batch=_DEFAULT_MAX_RECORDS, max_headers_per_record=_DEFAULT_MAX_HEADERS,
                  max_headers_per_batch=_DEFAULT_MAX_BATCH_HEADERS, bint partial=False, bint control=False,
                  max_records_per_call=_DEFAULT_MAX_CALL_RECORDS, max_headers_per_call=_DEFAULT_MAX_CALL_HEADERS,
                  max_decompressed_per_call=_DEFAULT_MAX_CALL_DECOMPRESSED, budget=None):
    """Decode every records blob of ``arr`` into the Spark-shaped columns.

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
    CallBudget shared with other calls, the caps then its own): the row that
    would pass one is an error row, and gives back what it took (a partial
    walk stops at the batch that would, as at any bad batch).
    """
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n, i, blen
    cdef const uint8_t* p
    cdef RecCols rc
    cdef Col* c
    cdef int k, m = 0
    cdef int64_t cap = min(max(_rows_bytes(&rin.r, arr) // 64, 64), 1 << 20)
    cdef LSink ls = LSink()
    cdef _BatchRows out = _BatchRows() if batches else None
    cdef Py_ssize_t first
    cdef int32_t max_records, max_headers
    cdef int64_t max_batch_headers
    max_records, max_headers, max_batch_headers = _record_caps(max_records_per_batch, max_headers_per_record,
                                                               max_headers_per_batch)
    if partial and not batches:
        raise ValueError("a partial walk reports its failures among the batches: pass batches=True")
    if budget is None:
        budget = _CallBudget(*_call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call))
    wanted = [bool(w) for w in want]
    rc.keep_control = control
    rc.stage = <Stage*>malloc(sizeof(Stage))
    if rc.stage == NULL:
        raise MemoryError()
    rc.stage.emitted = 0
    if not wanted[RC_ROW]:
        raise ValueError("the row column is always filled")
    rc.root = col_new(C_STRUCT, 0, sum(wanted), 16)
    if rc.root == NULL:
        free(rc.stage)
        raise MemoryError()
    ls.rc = &rc
    status = np.zeros(n, dtype=np.uint8)
    errors = {}
    try:
        for k in range(RC_COUNT):
            rc.c[k] = NULL
            if not wanted[k]:
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
        for i in range(n):
            first = out.n if out is not None else 0
            taken = budget.mark()
            if not row_at(&rin.r, i, &p, &blen):
                if partial:
                    out.add(i, 0)
                    out.errors[out.n - 1] = "null records blob"
                else:
                    errors[i] = "null records blob"
            else:
                try:
                    _blob(p, blen, i, check_crc, max_decompressed_size, &rc, ls, out, max_records, max_headers,
                          max_batch_headers, partial, budget)
                except KafkaProtocolError as exc:
                    errors[i] = str(exc)
            if i in errors:
                status[i] = 1
                budget.reset(taken)
                if out is not None:
                    out.blob_failed(first)
                # roll the blob's records back; one row of nulls stands for it
                for k in range(RC_COUNT):
                    if rc.c[k] != NULL:
                        col_truncate(rc.c[k], rc.root.n)
                _error_row(&rc, i)
            rc.root.n = rc.c[RC_ROW].n
        tree = col_export(rc.root)
    finally:
        col_free(rc.root)
        free(rc.stage)
    return status, tree, errors, None if out is None else out.export()
