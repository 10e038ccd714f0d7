# cython: language_level=3
"""Request and response headers of a column of frames (``kafkaproto.arrow._headers``); twin: ``_headers_py``.

A flat loop (the tens-of-millions-of-frames-a-second path) over the header
walker of ``kafkaproto/_wire.pxd``, which ``decode_request_header`` uses too;
a failed row keeps its failure record, which becomes its error text.
``request_headers_array`` / ``response_headers_array`` are the whole of
``kafkaproto.arrow.request_headers`` / ``response_headers``: the columns go to
pyarrow through the Arrow C data interface, one import per chunk.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uintptr_t
from libc.stdlib cimport malloc, realloc, free

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, Cur, RequestHead, cur_init, cur_take, cur_skip_tags, cur_request_head, F_OK, F_MEMORY,
    W_INT32,
)
from kafkaproto.arrow._columns cimport (
    Col, Rows, RowsIn, rows_in, row_at, col_new, col_free, col_valid_init, col_vappend, col_export, C_VAR,
    ArrowArray, aa_init, aa_release, col_to_c, aa_errors, aa_fixed, IntsIn, ints_in,
)

import numpy as np
import pyarrow as pa

from kafkaproto.arrow import _build, _common

from kafkaproto.errors import TruncatedError, UnknownApiError, UnsupportedVersionError, failure
from kafkaproto.messages import request_class, response_class

COMPILED = True

cdef enum:
    H_NULL_ROW = 1
    H_SHORT = 2             # (requests) x: the frame's length
    H_UNKNOWN_KEY = 3       # x: the key
    H_VERSION = 4           # x: the key, y: the version
    H_CURSOR = 5
    H_NULL_KEY = 6          # (responses) no api key or version given
    H_MEMORY = 7

cdef struct HeadFail:
    int64_t row
    int kind
    int fail
    int what
    Py_ssize_t at
    int64_t x
    int64_t y

cdef struct HeadFails:
    HeadFail* items
    int64_t n
    int64_t cap


cdef HeadFail* _add(HeadFails* f, int64_t row, int kind, int64_t x, int64_t y) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if f.n == f.cap:
        cap = f.cap * 2 if f.cap else 16
        p = realloc(f.items, cap * sizeof(HeadFail))
        if p == NULL:
            return NULL
        f.items = <HeadFail*>p
        f.cap = cap
    f.items[f.n].row = row
    f.items[f.n].kind = kind
    f.items[f.n].x = x
    f.items[f.n].y = y
    f.n += 1
    return &f.items[f.n - 1]


cdef int _fail(HeadFails* f, int64_t row, int kind, int64_t x, int64_t y, Cur* c) noexcept nogil:
    cdef HeadFail* r = _add(f, row, kind, x, y)
    if r == NULL:
        return -1
    if kind == H_CURSOR:
        r.fail = c.fail
        r.what = c.what
        r.at = c.at
        r.x = c.x
        r.y = c.y
    return 0


cdef object _text(HeadFail* r, bint request):
    """What decode_request_header / decode_response (the header part) raise for the row."""
    if r.kind == H_NULL_ROW:
        return "null frame"
    if r.kind == H_SHORT:
        return str(TruncatedError(f"need 4 bytes, {r.x} left", "request header", 0))
    if r.kind == H_NULL_KEY:
        return "null api key or api version"
    if r.kind == H_UNKNOWN_KEY:
        return str(UnknownApiError(f"api key {r.x} is not known", "request header" if request else "api key",
                                   0 if request else None))
    if r.kind == H_VERSION:
        cls = request_class(r.x) if request else response_class(r.x)
        return str(UnsupportedVersionError(f"{cls.NAME} v{r.y} is not supported (versions {cls.VALID_VERSIONS})",
                                           "request header" if request else cls.NAME, 2 if request else None))
    if r.kind == H_MEMORY:
        raise MemoryError()
    return str(failure(r.fail, r.what, r.at, r.x, r.y))


cdef int _req_headers_loop(const Rows* rows, const int8_t* table, int nkeys, uint8_t* status, int16_t* key,
                           int16_t* ver, int32_t* corr, int32_t* hsize, Col* cid, HeadFails* fails) noexcept nogil:
    cdef int64_t i, n
    cdef const uint8_t* p
    cdef int k, v, h, kind
    cdef Cur c
    cdef RequestHead head
    for i in range(rows.n):
        key[i] = 0
        ver[i] = 0
        corr[i] = 0
        hsize[i] = 0
        cid.n = i
        cid.offs[i + 1] = cid.vlen
        cid.valid[i] = 0
        kind = 0
        k = v = 0
        if not row_at(rows, i, &p, &n):
            kind = H_NULL_ROW
        elif n < 4:
            kind = H_SHORT
        else:
            k = <int16_t>kp_ld16(p)
            v = <int16_t>kp_ld16(p + 2)
            if k < 0 or k >= nkeys or table[k * 64] == -2:
                kind = H_UNKNOWN_KEY
            elif v < 0 or v > 63 or table[k * 64 + v] < 0:
                kind = H_VERSION
            else:
                h = table[k * 64 + v]
                cur_init(&c, p, 0, n)
                if cur_request_head(&c, h, &head) or (h >= 2 and cur_skip_tags(&c)):
                    kind = H_CURSOR
                elif head.client_id_len >= 0 and col_vappend(cid, p + head.client_id_at, head.client_id_len):
                    kind = H_MEMORY
        if kind:
            status[i] = 1
            if _fail(fails, i, kind, n if kind == H_SHORT else k, v, &c) or kind == H_MEMORY:
                return -1
            continue
        status[i] = 0
        key[i] = head.api_key
        ver[i] = head.api_version
        corr[i] = head.correlation_id
        hsize[i] = <int32_t>c.pos
    cid.n = rows.n
    return 0


def arrow_request_headers(arr, int kind, hv_table):
    """→ (status, api_key, api_version, correlation_id, header_size, client_id column, errors)."""
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n
    cdef int8_t[:, ::1] hv = hv_table
    status = np.empty(n, dtype=np.uint8)
    key = np.empty(n, dtype=np.int16)
    ver = np.empty(n, dtype=np.int16)
    corr = np.empty(n, dtype=np.int32)
    hsize = np.empty(n, dtype=np.int32)
    cdef uint8_t[::1] s_ = status
    cdef int16_t[::1] k_ = key
    cdef int16_t[::1] v_ = ver
    cdef int32_t[::1] c_ = corr
    cdef int32_t[::1] h_ = hsize
    cdef Col* cid = col_new(C_VAR, 0, 0, n)
    cdef HeadFails fails
    cdef int rc = 0
    cdef int64_t j
    if cid == NULL or col_valid_init(cid):
        col_free(cid)
        raise MemoryError()
    cdef const int8_t* hvp = &hv[0, 0]
    cdef int nkeys = hv.shape[0]
    fails.items = NULL
    fails.n = fails.cap = 0
    try:
        if n:
            with nogil:
                rc = _req_headers_loop(&rin.r, hvp, nkeys, &s_[0], &k_[0], &v_[0], &c_[0], &h_[0], cid, &fails)
        if rc:
            raise MemoryError()
        errors = {fails.items[j].row: _text(&fails.items[j], True) for j in range(fails.n)}
        col = col_export(cid)
    finally:
        col_free(cid)
        free(fails.items)
    return status, key, ver, corr, hsize, col, errors


cdef int _resp_headers_loop(const Rows* rows, const int8_t* table, int nkeys, const int32_t* keys,
                            const int32_t* vers, const uint8_t* kvalid, uint8_t* status, int32_t* corr,
                            int32_t* hsize, HeadFails* fails) noexcept nogil:
    cdef int64_t i, n
    cdef const uint8_t* p
    cdef int k, v, h, kind
    cdef Cur c
    for i in range(rows.n):
        corr[i] = 0
        hsize[i] = 0
        k = keys[i]
        v = vers[i]
        kind = 0
        if not row_at(rows, i, &p, &n):
            kind = H_NULL_ROW
        elif not kvalid[i]:
            kind = H_NULL_KEY
        elif k < 0 or k >= nkeys or table[k * 64] == -2:
            kind = H_UNKNOWN_KEY
        elif v < 0 or v > 63 or table[k * 64 + v] < 0:
            kind = H_VERSION
        else:
            h = table[k * 64 + v]
            cur_init(&c, p, 0, n)
            if cur_take(&c, 4, W_INT32, -1) < 0 or (h >= 1 and cur_skip_tags(&c)):
                kind = H_CURSOR
        if kind:
            status[i] = 1
            if _fail(fails, i, kind, k, v, &c):
                return -1
            continue
        status[i] = 0
        corr[i] = <int32_t>kp_ld32(p)
        hsize[i] = <int32_t>c.pos
    return 0


def arrow_response_headers(arr, int kind, hv_table, keys, versions, kvalid):
    """→ (status, correlation_id, header_size, errors); keys/versions are int32 arrays, kvalid uint8
    (0: the row's api key or version is null)."""
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n
    cdef int8_t[:, ::1] hv = hv_table
    cdef const int32_t[::1] k_ = keys
    cdef const int32_t[::1] v_ = versions
    cdef const uint8_t[::1] kv_ = kvalid
    status = np.empty(n, dtype=np.uint8)
    corr = np.empty(n, dtype=np.int32)
    hsize = np.empty(n, dtype=np.int32)
    cdef uint8_t[::1] s_ = status
    cdef int32_t[::1] c_ = corr
    cdef int32_t[::1] h_ = hsize
    cdef const int8_t* hvp = &hv[0, 0]
    cdef int nkeys = hv.shape[0]
    cdef HeadFails fails
    cdef int rc = 0
    cdef int64_t j
    fails.items = NULL
    fails.n = fails.cap = 0
    try:
        if n:
            with nogil:
                rc = _resp_headers_loop(&rin.r, hvp, nkeys, &k_[0], &v_[0], &kv_[0], &s_[0], &c_[0], &h_[0], &fails)
        if rc:
            raise MemoryError()
        errors = {fails.items[j].row: _text(&fails.items[j], False) for j in range(fails.n)}
    finally:
        free(fails.items)
    return status, corr, hsize, errors


# ---------------------------------------------------------------------------
# the whole calls

cdef object _import_array = pa.Array._import_from_c
cdef object _chunked = pa.chunked_array
cdef dict _KIND_OF = _build.ARRAY_KIND
cdef dict _INT_TYPES = _build.INT_WIDTH
cdef object _REQ_TYPE = _build.REQUEST_HEADER_TYPE
cdef object _RESP_TYPE = _build.RESPONSE_HEADER_TYPE
cdef object _HV_REQ = _common.header_table(True)
cdef object _HV_RESP = _common.header_table(False)


cdef object _chunk(arr, int kind, bint request, IntsIn kin, IntsIn vin, const uint8_t* ok, int64_t start):
    """One chunk of frames → its header struct array (through the C data interface);
    responses take their api keys and versions from ``kin`` / ``vin`` (rows from ``start``)."""
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n, j
    cdef int8_t[:, ::1] hv = _HV_REQ if request else _HV_RESP
    cdef uint8_t* status = <uint8_t*>malloc(n + 1)
    cdef void* block[4]  # api_key, api_version, correlation_id, header_size: each the node's once handed over
    cdef int16_t* key
    cdef int16_t* ver
    cdef int64_t* at = NULL
    cdef Col* cid = NULL
    cdef HeadFails fails
    cdef ArrowArray aa
    cdef int rc = 0, k, m
    fails.items = NULL
    fails.n = fails.cap = 0
    aa.release = NULL
    block[0] = malloc(n * 2 + 2)
    block[1] = malloc(n * 2 + 2)
    block[2] = malloc(n * 4 + 4)
    block[3] = malloc(n * 4 + 4)
    key = <int16_t*>block[0]
    ver = <int16_t*>block[1]
    try:
        if status == NULL or block[0] == NULL or block[1] == NULL or block[2] == NULL or block[3] == NULL:
            raise MemoryError()
        if request:
            cid = col_new(C_VAR, 0, 0, n)
            if cid == NULL or col_valid_init(cid):
                raise MemoryError()
            with nogil:
                rc = _req_headers_loop(&rin.r, &hv[0, 0], hv.shape[0], status, key, ver, <int32_t*>block[2],
                                       <int32_t*>block[3], cid, &fails)
        else:
            with nogil:
                rc = _resp_headers_loop(&rin.r, &hv[0, 0], hv.shape[0], kin.v + start, vin.v + start, ok + start,
                                        status, <int32_t*>block[2], <int32_t*>block[3], &fails)
                for j in range(n):
                    key[j] = <int16_t>kin.v[start + j]
                    ver[j] = <int16_t>vin.v[start + j]
        if rc:
            raise MemoryError()
        texts = [_text(&fails.items[j], request) for j in range(fails.n)]
        at = <int64_t*>malloc(fails.n * sizeof(int64_t) + 8)
        if at == NULL:
            raise MemoryError()
        for j in range(fails.n):
            at[j] = fails.items[j].row
        if aa_init(&aa, n, 6 if request else 5):
            raise MemoryError()
        # children: api_key, api_version, correlation_id, [client_id,] header_size, error
        m = 0
        for k in range(4):
            if k == 3 and request:
                rc |= col_to_c(cid, aa.children[m])
                m += 1
            rc |= aa_fixed(aa.children[m], n, block[k], status, fails.n)
            block[k] = NULL
            m += 1
        if rc:
            raise MemoryError()
        aa_errors(aa.children[m], n, at, texts)
        return _import_array(<uintptr_t>&aa, _REQ_TYPE if request else _RESP_TYPE)
    finally:
        aa_release(&aa)  # (nothing left to release once pyarrow took it)
        col_free(cid)
        free(fails.items)
        free(status)
        for k in range(4):
            free(block[k])
        free(at)


cdef object _headers(frames, bint request, IntsIn kin, IntsIn vin, const uint8_t* ok):
    """Every chunk of ``frames`` → the header column (chunked in, chunked out)."""
    cdef int64_t start = 0
    typ = _REQ_TYPE if request else _RESP_TYPE
    kind = _KIND_OF.get(type(frames))
    if kind is not None:
        return _chunk(frames, kind, request, kin, vin, ok, 0)
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return _chunked([], type=typ)
    chunks, chunked = _build._chunks(frames)
    out = []
    for arr, kind in chunks:
        out.append(_chunk(arr, kind, request, kin, vin, ok, start))
        start += len(arr)
    return _chunked(out, type=typ) if chunked else out[0]


def request_headers_array(frames):
    """kafkaproto.arrow.request_headers."""
    return _headers(frames, True, None, None, NULL)


def response_headers_array(frames, api_key, api_version):
    """kafkaproto.arrow.response_headers."""
    cdef int64_t n = len(frames), j
    cdef IntsIn kin = ints_in(api_key, n, "api_key", -32768, 32767, _INT_TYPES, _build._int_column)
    cdef IntsIn vin = ints_in(api_version, n, "api_version", -32768, 32767, _INT_TYPES, _build._int_column)
    ok = bytearray(n + 1)
    cdef uint8_t* okp = ok
    for j in range(n):
        okp[j] = kin.ok[j] & vin.ok[j]
    return _headers(frames, False, kin, vin, okp)
