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
from libc.string cimport memcpy

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_utf8_ok, _uv32, _uv64, _unzig32, _unzig64, _wadd, Cur, cur_init, cur_fail,
    cur_step, VARINT_TRUNCATED, P_INDEX, F_PYTHON, F_MEMORY,
)
from kafkaproto._codec cimport crc32_of
from kafkaproto.arrow._columns cimport (
    Col, Rows, RowsIn, rows_in, row_at, col_new, col_free, col_grow, col_reserve, col_mark_valid, col_mark_null,
    col_vappend, col_vgrow, col_put_null, col_truncate, col_export, C_FIXED, C_VAR, C_STRUCT, C_LIST,
)

import numpy as np

from crc32c import crc32c as _crc32c

from kafkaproto.errors import KafkaProtocolError
from kafkaproto.records import _compression
from kafkaproto.records._common import (
    batch_error as _batch_error,
    crc_error as _crc_error,
    legacy_failure as _legacy_failure,
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


cdef int _reserve_rows(RecCols* rc, int64_t count, int64_t nbytes) noexcept nogil:
    """Room for ``count`` records whose keys and values take at most ``nbytes``
    (the batch's bytes: a record cannot hold more than its batch)."""
    cdef int k
    for k in range(RC_COUNT):
        if rc.c[k] != NULL and k != RC_HEADERS:
            if col_reserve(rc.c[k], count):
                return -1
            if rc.c[k].what == C_VAR and rc.c[k].vlen + nbytes > rc.c[k].vcap and \
                    col_vgrow(rc.c[k], rc.c[k].vlen + nbytes):
                return -1
    return 0


cdef inline int _blob_reserved(Col* c, const uint8_t* p, int32_t n) noexcept nogil:
    """A key or value into a column with room for it already (see _reserve_rows); p NULL: null."""
    if p == NULL:
        c.offs[c.n + 1] = c.vlen
        if col_mark_null(c):
            return -1
    else:
        if n:  # (an empty key or value: a NULL buffer must not meet memcpy)
            memcpy(c.vdata + c.vlen, p, n)
        c.vlen += n
        c.offs[c.n + 1] = c.vlen
        col_mark_valid(c)
    c.n += 1
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


cdef int _store(RecCols* rc, const uint8_t* key, int32_t klen, const uint8_t* value, int32_t vlen, int64_t offset,
                int64_t ts, int32_t ts_type, int32_t header_count) noexcept nogil:
    """One record into the columns (room reserved; its headers are in already)."""
    cdef Col* c
    cdef Col* hcol = rc.c[RC_HEADERS]
    if rc.c[RC_KEY] != NULL and _blob_reserved(rc.c[RC_KEY], key, klen):
        return -1
    if rc.c[RC_VALUE] != NULL and _blob_reserved(rc.c[RC_VALUE], value, vlen):
        return -1
    # (error rows before may have started a validity array: col_mark_valid)
    c = rc.c[RC_OFFSET]
    if c != NULL:
        (<int64_t*>c.data)[c.n] = offset
        col_mark_valid(c)
        c.n += 1
    c = rc.c[RC_TS_TYPE]
    if c != NULL:
        (<int32_t*>c.data)[c.n] = ts_type
        col_mark_valid(c)
        c.n += 1
    c = rc.c[RC_ROW]
    (<int64_t*>c.data)[c.n] = rc.row
    c.n += 1
    c = rc.c[RC_TIMESTAMP]
    if c != NULL:
        if -_US_LIMIT <= ts <= _US_LIMIT:
            (<int64_t*>c.data)[c.n] = ts * 1000
            col_mark_valid(c)
        else:
            (<int64_t*>c.data)[c.n] = 0
            if col_mark_null(c):
                return -1
        c.n += 1
    if hcol != NULL:
        if col_reserve(hcol, 1):
            return -1
        hcol.offs[hcol.n + 1] = hcol.kids[0].n
        if header_count == 0:
            # no headers: null, as Spark's Kafka source shows it (legacy records have none)
            if col_mark_null(hcol):
                return -1
        else:
            col_mark_valid(hcol)
        hcol.n += 1
    return 0


# ---------------------------------------------------------------------------
# the v2 record sink (see records/_walk.pxi)

ctypedef RecCols* RSink


cdef inline int rs_header(Cur* c, RSink s, int32_t j, const uint8_t* kp, int32_t kn, const uint8_t* vp,
                          int32_t vn) noexcept nogil:
    cdef Col* hcol = s.c[RC_HEADERS]
    cdef Col* hstruct
    if hcol == NULL or s.control:
        return 0
    hstruct = hcol.kids[0]
    if _rc_blob(hstruct.kids[0], kp, kn) or _rc_blob(hstruct.kids[1], vp, vn) or col_reserve(hstruct, 1):
        return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)
    col_mark_valid(hstruct)
    hstruct.n += 1
    return 0


cdef inline int rs_record(Cur* c, RSink s, RecView* r) noexcept nogil:
    if s.control:
        return 0  # checked, and left out as a consumer does
    if _store(s, r.key, r.key_len, r.value, r.value_len, _wadd(s.base_offset, r.offset_delta),
              s.max_ts if s.ts_type else _wadd(s.base_ts, r.timestamp_delta), s.ts_type, r.header_count):
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


cdef int ls_record(LSink s, const uint8_t* b, LMsg* m, int64_t offset, int64_t ts, int ts_type) except -1:
    if _store(s.rc, NULL if m.klen < 0 else b + m.kpos, m.klen, NULL if m.vlen < 0 else b + m.vpos, m.vlen,
              offset, ts, ts_type, 0):
        raise MemoryError()
    return 0


include "kafkaproto/records/_walk.pxi"


# ---------------------------------------------------------------------------
# blobs

cdef object _v2_error(Cur* c, object base, Py_ssize_t batch_at):
    path = [c.path[k].value for k in range(c.depth - 1, -1, -1)]
    return _record_failure(c.fail, c.what, c.at, c.x, c.y, path, base, batch_at)


cdef int _blob(const uint8_t* p, int64_t n, int64_t row, bint check_crc, object limit, RecCols* rc,
               LSink ls) except -1:
    """Every batch of one blob into the columns; raises the blob's error."""
    cdef BatchView v
    cdef Py_ssize_t pos = 0, start, end
    cdef int st
    cdef Cur c
    cdef LMsg w
    cdef Py_buffer view
    cdef const uint8_t* rb
    mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
    rc.row = row
    while True:
        st = _batch_at(p, pos, n, &v)
        if st != BATCH_WHOLE:
            return 0  # the end, or a partial batch at the end: normal in a Fetch response
        if v.magic < 2:
            _legacy_walk(mv, p, n, &v, check_crc, limit, ls, &w)
            pos = v.end
            continue
        region, start, end = _v2_records(&v, mv, check_crc, limit)
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
            with nogil:
                # room for the whole batch up front: keys and values take at most its bytes
                if _reserve_rows(rc, v.count, end - start):
                    st = -2
                else:
                    st = _walk_records(&c, v.count, rc.control, rc)
        finally:
            if region is not None:
                PyBuffer_Release(&view)
        if st == -2 or (st and c.fail == F_MEMORY):
            raise MemoryError()
        if st:
            raise _v2_error(&c, 0 if region is None else None, v.at)
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


def arrow_records(arr, int kind, bint check_crc, max_decompressed_size, want):
    """Decode every records blob of ``arr`` into the Spark-shaped columns.

    ``want``: 7 flags (key, value, offset, timestamp, timestampType, headers,
    row) telling which columns to fill.  Returns ``(status, tree, errors)``:
    status 0 for a blob decoded, else 1 (one row of nulls stands for it, and
    ``errors`` maps the blob's index to records.decode's error text); the
    tree's children are the asked-for columns in that order.
    """
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n, i, blen
    cdef const uint8_t* p
    cdef RecCols rc
    cdef Col* c
    cdef int k, m = 0
    cdef int64_t cap = min(max(arr.nbytes // 64, 64), 1 << 20)
    cdef LSink ls = LSink()
    wanted = [bool(w) for w in want]
    if not wanted[RC_ROW]:
        raise ValueError("the row column is always filled")
    rc.root = col_new(C_STRUCT, 0, sum(wanted), 16)
    if rc.root == NULL:
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
            if not row_at(&rin.r, i, &p, &blen):
                errors[i] = "null records blob"
            else:
                try:
                    _blob(p, blen, i, check_crc, max_decompressed_size, &rc, ls)
                except KafkaProtocolError as exc:
                    errors[i] = str(exc)
            if i in errors:
                status[i] = 1
                # roll the blob's records back; one row of nulls stands for it
                for k in range(RC_COUNT):
                    if rc.c[k] != NULL:
                        col_truncate(rc.c[k], rc.root.n)
                _error_row(&rc, i)
            rc.root.n = rc.c[RC_ROW].n
        tree = col_export(rc.root)
    finally:
        col_free(rc.root)
    return status, tree, errors
