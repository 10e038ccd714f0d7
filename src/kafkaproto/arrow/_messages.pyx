# cython: language_level=3
"""Frames of one message class → Arrow columns (``kafkaproto.arrow._messages``); twin: ``_messages_py``.

The message engine's programs run here with a column sink: the one walker of
message bodies (``messages/_walk.pxi``) fills one column per field of the
class (every version's fields: a field a row's version lacks is null), row
after row, without the GIL.  A row that fails is rolled back to nulls; its
failure record (what, where, the field path) becomes the row's error text,
the one the object decoders raise, without decoding it a second time.

``messages_array`` is the whole of ``kafkaproto.arrow.messages``: arguments
read in C, every chunk walked, the columns handed to pyarrow through the
Arrow C data interface (one import per chunk).  A row whose header size the
caller gives is decoded from there: its header is not read again.
"""

from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_u64_to_f64, kp_utf8_ok, MAX_STR, Cur, Step, RequestHead, cur_init, cur_fail,
    cur_step, cur_take, cur_uv32, cur_length, cur_count, cur_tags_begin, cur_tag_next, cur_skip_tags,
    cur_request_head, MAX_PATH, F_OK, F_NEED, F_LIMIT, F_UTF8, F_TAG_SIZE, F_MEMORY, P_FIELD, P_INDEX,
    W_INT8, W_INT16, W_INT32, W_INT64, W_UINT16, W_UINT32, W_FLOAT64, W_BOOL, W_UUID, W_STRING,
    W_COMPACT_STRING, W_BYTES, W_COMPACT_BYTES, W_ARRAY_LENGTH, W_COMPACT_ARRAY_LENGTH, W_UVARINT,
    W_TAGGED_FIELD,
)
from kafkaproto.arrow._columns cimport (
    Col, Rows, RowsIn, rows_in, row_at, col_new, col_free, col_grow, col_reserve, col_mark_valid, col_mark_null,
    col_vappend, col_put_null, col_truncate, col_set_vhint, col_export, C_FIXED, C_VAR, C_STRUCT, C_LIST,
    ArrowArray, aa_init, aa_release, col_to_c, aa_errors, aa_fixed, IntsIn, ints_in, rows_bytes,
)
from kafkaproto.messages._engine cimport (
    Node, Op, Plan, path_error, K_BOOL, K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64, K_UUID,
    K_STRING, K_BYTES, K_RECORDS, K_STRUCT, K_ARRAY, D_NULL, D_VALUE, D_LIST, D_STRUCT,
)

import numpy as np
import pyarrow as pa

from kafkaproto import protocol as _protocol
from kafkaproto.errors import TruncatedError, UnknownApiError, UnsupportedVersionError
# the engine whose plans this loop runs (it includes the engine's walker, messages/_walk.pxi)
from kafkaproto.messages import _engine as ENGINE, request_class, version_plans
from kafkaproto.arrow import _build, _common

COMPILED = True

cdef uint8_t _ZERO16[16]

# KIP-511's fallback, as kafkaproto.protocol states it (decode_response_body)
cdef int _KIP511_KEY = _protocol.KIP511_API_KEY
cdef int _KIP511_VERSION = _protocol.KIP511_VERSION
cdef int _KIP511_ERROR = _protocol.KIP511_ERROR


# ---------------------------------------------------------------------------
# the column sink (see messages/_walk.pxi)

ctypedef Col* Dst


cdef inline int _oom(Cur* c) noexcept nogil:
    return cur_fail(c, F_MEMORY, 0, c.pos, 0, 0)


cdef inline Dst sk_field(Dst me, Op* op) noexcept nogil:
    return me.kids[op.col]


cdef inline Dst sk_item(Dst arr, int64_t i) noexcept nogil:
    return arr  # elements are appended in order


cdef inline int sk_int(Cur* c, Dst d, int kind, int64_t v) noexcept nogil:
    cdef uint8_t* p
    if d.n == d.cap and col_grow(d, d.n + 1):
        return _oom(c)
    p = d.data + d.n * d.width
    if d.width == 4:
        (<int32_t*>p)[0] = <int32_t>v
    elif d.width == 2:
        (<int16_t*>p)[0] = <int16_t>v
    elif d.width == 8:
        (<int64_t*>p)[0] = v
    else:
        p[0] = <uint8_t>v
    col_mark_valid(d)
    d.n += 1
    return 0


cdef inline int sk_float(Cur* c, Dst d, double v) noexcept nogil:
    if d.n == d.cap and col_grow(d, d.n + 1):
        return _oom(c)
    (<double*>(d.data + d.n * 8))[0] = v
    col_mark_valid(d)
    d.n += 1
    return 0


cdef inline int sk_uuid(Cur* c, Dst d, const uint8_t* p) noexcept nogil:
    if d.n == d.cap and col_grow(d, d.n + 1):
        return _oom(c)
    memcpy(d.data + d.n * 16, p, 16)
    col_mark_valid(d)
    d.n += 1
    return 0


cdef inline int sk_str(Cur* c, Dst d, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    if col_reserve(d, 1) or col_vappend(d, p, n):
        return _oom(c)
    return 0


cdef inline int sk_bytes(Cur* c, Dst d, Op* op, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    if col_reserve(d, 1) or col_vappend(d, p, n):
        return _oom(c)
    return 0


cdef inline int sk_null(Cur* c, Dst d) noexcept nogil:
    return _oom(c) if col_put_null(d) else 0


cdef inline int sk_struct_begin(Cur* c, Dst d, Node* nd, Dst* me) noexcept nogil:
    me[0] = d  # the struct's own column: its fields are its children
    return 0


cdef inline int sk_unknown_tag(Cur* c, Dst me, void** unknown, uint32_t tag, const uint8_t* p,
                               Py_ssize_t n) noexcept nogil:
    return 0  # checked and skipped


cdef inline int sk_wire_tag(Cur* c, Dst me, void** wire, uint32_t i, uint32_t count, uint32_t tag) noexcept nogil:
    return 0  # the order of tags is not a column


cdef inline int sk_struct_end(Cur* c, Dst d, Dst me, Node* nd, void* unknown, void* wire) noexcept nogil:
    if col_reserve(d, 1):
        return _oom(c)
    col_mark_valid(d)
    d.n += 1
    return 0


cdef inline void sk_struct_fail(Dst me, void* unknown, void* wire) noexcept nogil:
    pass  # the whole row is rolled back


cdef inline int sk_array_begin(Cur* c, Dst d, Op* op, int64_t n, Dst* arr) noexcept nogil:
    arr[0] = d.kids[0]
    return 0


cdef inline int sk_int32s(Cur* c, Dst arr, const uint8_t* p, int64_t n) noexcept nogil:
    cdef int64_t i
    cdef int32_t* out
    if col_reserve(arr, n):
        return _oom(c)
    out = <int32_t*>arr.data + arr.n
    for i in range(n):
        out[i] = <int32_t>kp_ld32(p + 4 * i)
    if arr.valid != NULL:
        memset(arr.valid + arr.n, 1, n)
    arr.n += n
    return 0


cdef inline int sk_array_end(Cur* c, Dst d, Dst arr, int64_t n) noexcept nogil:
    if col_reserve(d, 1):
        return _oom(c)
    d.offs[d.n + 1] = arr.n
    col_mark_valid(d)
    d.n += 1
    return 0


cdef inline void sk_array_fail(Dst arr, int64_t i, int64_t n) noexcept nogil:
    pass


cdef int _put_default(Op* op, Col* col) noexcept nogil:
    cdef Node* nd
    cdef uint8_t* d
    cdef int k
    if op.dkind == D_NULL:
        return col_put_null(col)
    if col_reserve(col, 1):
        return -1
    if op.dkind == D_LIST:
        col.offs[col.n + 1] = col.offs[col.n]
    elif op.dkind == D_STRUCT:
        nd = op.sub
        for k in range(nd.nf):
            if _put_default(&nd.f[k], col.kids[nd.f[k].col]):
                return -1
        for k in range(nd.nt):
            if _put_default(&nd.t[k], col.kids[nd.t[k].col]):
                return -1
        for k in range(nd.na):
            if col_put_null(col.kids[nd.a[k].col]):
                return -1
    elif op.kind == K_STRING or op.kind == K_BYTES or op.kind == K_RECORDS or op.kind == K_UUID:
        if col.what == C_FIXED:
            memcpy(col.data + col.n * col.width, op.dptr, col.width)
        else:
            return col_vappend(col, op.dptr, op.dlen)
    elif op.kind == K_FLOAT64:
        (<double*>(col.data + col.n * 8))[0] = op.dfloat
    else:
        d = col.data + col.n * col.width
        if col.width == 1:
            d[0] = <uint8_t>op.dint
        elif col.width == 2:
            (<int16_t*>d)[0] = <int16_t>op.dint
        elif col.width == 4:
            (<int32_t*>d)[0] = <int32_t>op.dint
        else:
            (<int64_t*>d)[0] = op.dint
    col_mark_valid(col)
    col.n += 1
    return 0


cdef inline int sk_absent(Cur* c, Dst me, Op* op) noexcept nogil:
    return _oom(c) if col_put_null(me.kids[op.col]) else 0


cdef inline int sk_default(Cur* c, Dst me, Op* op) noexcept nogil:
    return _oom(c) if _put_default(op, me.kids[op.col]) else 0


cdef inline int sk_retag(Cur* c, Dst me, Op* op) noexcept nogil:
    # the later value wins, as in the object decoders: drop the earlier one
    cdef Col* kid = me.kids[op.col]
    col_truncate(kid, kid.n - 1)
    return 0


include "kafkaproto/messages/_walk.pxi"


# ---------------------------------------------------------------------------
# the column tree of a message class

# width of each field kind in its column (0: var-width); unsigned kinds widen
# to the next signed type because Spark has no unsigned integers.
cdef int _kind_width(int kind):
    if kind == K_BOOL or kind == K_INT8:
        return 1
    if kind == K_INT16:
        return 2
    if kind == K_INT32 or kind == K_UINT16:
        return 4
    if kind == K_INT64 or kind == K_UINT32 or kind == K_FLOAT64:
        return 8
    if kind == K_UUID:
        return 16
    return 0


cdef Col* _scalar_col(int kind, int64_t cap) except NULL:
    cdef int w = _kind_width(kind)
    cdef Col* c = col_new(C_FIXED if w else C_VAR, w, 0, cap)
    if c == NULL:
        raise MemoryError()
    c.bits = kind == K_BOOL
    return c


cdef Col* _struct_cols(cls, int64_t cap, int64_t nested) except NULL:
    """The column tree of a struct class: one child per field of any version.

    ``cap`` slots for this level, ``nested`` for the elements of its arrays (a
    guess from the input size: growing by doubling copies, guessing costs
    only address space).
    """
    cdef list fields = list(cls._FIELDS)
    cdef Col* c = col_new(C_STRUCT, 0, len(fields), cap)
    cdef Col* kid
    cdef int k
    if c == NULL:
        raise MemoryError()
    try:
        for k, f in enumerate(fields):
            if f.kind == K_ARRAY:
                kid = col_new(C_LIST, 0, 1, cap)
                if kid == NULL:
                    raise MemoryError()
                c.kids[k] = kid
                if f.elem == K_STRUCT:
                    kid.kids[0] = _struct_cols(f.struct, nested, nested)
                else:
                    kid.kids[0] = _scalar_col(f.elem, nested)
            elif f.kind == K_STRUCT:
                c.kids[k] = _struct_cols(f.struct, cap, nested)
            else:
                c.kids[k] = _scalar_col(f.kind, cap)
    except BaseException:
        col_free(c)
        raise
    return c


# ---------------------------------------------------------------------------
# failed rows: their failure records, kept compactly until the loop is done

cdef enum:
    R_NULL_ROW = 1          # a null frame
    R_SHORT = 2             # fewer than 4 bytes: no api key and version (requests)
    R_API_KEY = 3           # a request of another api key (x: its key)
    R_VERSION = 4           # a version its class lacks (x: the version; y: the request's api key, or for
                            # responses 0 when the version is null)
    R_UNKNOWN_KEY = 7       # a request of an api key no schema has (x: the key)
    R_FIRST = 8             # (in the loop only) the failure kept in `first`
    R_CURSOR = 5            # the cursor's failure: header (version -1) or body (version >= 0)
    R_MEMORY = 6
    R_HSIZE = 9             # a header size given past the frame's end (x: the size, y: the frame's length)

cdef struct RowFail:
    int64_t row
    int kind
    int version             # the body's version (its context), -1 for a header failure
    int fail
    int what
    Py_ssize_t at
    int64_t x
    int64_t y
    int64_t z
    int depth
    Step path[MAX_PATH]

cdef struct Fails:
    RowFail* items
    int64_t n
    int64_t cap


cdef RowFail* _fail_add(Fails* f, int64_t row, int kind) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if f.n == f.cap:
        cap = f.cap * 2 if f.cap else 16
        p = realloc(f.items, cap * sizeof(RowFail))
        if p == NULL:
            return NULL
        f.items = <RowFail*>p
        f.cap = cap
    f.n += 1
    f.items[f.n - 1].row = row
    f.items[f.n - 1].kind = kind
    f.items[f.n - 1].version = -1
    f.items[f.n - 1].depth = 0
    return &f.items[f.n - 1]


cdef void _fail_cursor(RowFail* r, Cur* c, int version) noexcept nogil:
    r.version = version
    r.fail = c.fail
    r.what = c.what
    r.at = c.at
    r.x = c.x
    r.y = c.y
    r.z = c.z
    r.depth = c.depth
    if c.depth:
        memcpy(r.path, c.path, c.depth * sizeof(Step))


cdef object _row_error(RowFail* r, cls):
    """The text decode_request / decode_response raise for this row."""
    cdef Cur c
    if r.kind == R_NULL_ROW:
        return "null frame"
    if r.kind == R_SHORT:
        return str(TruncatedError(f"need 4 bytes, {r.x} left", "request header", 0))
    if r.kind == R_UNKNOWN_KEY:
        return str(UnknownApiError(f"api key {r.x} is not known", "request header", 0))
    if r.kind == R_API_KEY:
        return f"a {request_class(r.x).NAME} (api key {r.x}) in a column of {cls.NAME} (api key {cls.API_KEY})"
    if r.kind == R_VERSION:
        if cls.KIND == "response":
            if not r.y:
                return "null api version"
            return str(UnsupportedVersionError(
                f"{cls.NAME} v{r.x} is not supported (versions {cls.VALID_VERSIONS})", cls.NAME))
        other = request_class(r.y)
        return str(UnsupportedVersionError(
            f"{other.NAME} v{r.x} is not supported (versions {other.VALID_VERSIONS})", "request header", 2))
    if r.kind == R_HSIZE:
        return f"header size {r.x} past the end of a {r.y}-byte frame"
    if r.kind == R_MEMORY:
        raise MemoryError()
    c.path = r.path
    c.fail = r.fail
    c.what = r.what
    c.at = r.at
    c.x = r.x
    c.y = r.y
    c.z = r.z
    c.depth = r.depth
    exc = path_error(&c)
    if r.version >= 0:
        exc.set_context(f"{cls.NAME} v{r.version}")
    return str(exc)


# ---------------------------------------------------------------------------
# the loop

cdef void _rollback(Col* root, int64_t i) noexcept nogil:
    cdef int k
    col_truncate(root, i)
    for k in range(root.nkids):
        col_put_null(root.kids[k])
    root.n = i
    col_mark_valid(root)  # (a struct row of nulls: the row itself stays valid)
    root.n = i + 1


cdef int _msg_loop(const Rows* rows, int api_key, bint request, const int32_t* versions, const uint8_t* vvalid,
                   const int32_t* hsizes, const int8_t* table, int nkeys, Node** roots, Col* root, uint8_t* status,
                   int32_t* trailing, int ec_col, Fails* fails) noexcept nogil:
    # request frames carry their version in the header; response frames (and request
    # frames whose header size is given) take theirs from ``versions``.  hsizes: where
    # each row's body starts (NULL, or -1 for a row: its header is read here).
    cdef int64_t i, n
    cdef const uint8_t* p
    cdef Cur c
    cdef Step steps[MAX_PATH]
    cdef RowFail first
    cdef RequestHead h
    cdef int v, k, kind
    cdef int32_t hs
    cdef Py_ssize_t body
    cdef RowFail* rf
    cdef const int8_t* hv = table + 64 * api_key   # this api key's header versions
    for i in range(rows.n):
        kind = 0
        v = -1
        c.fail = F_OK
        hs = -1 if hsizes == NULL else hsizes[i]
        if not row_at(rows, i, &p, &n):
            kind = R_NULL_ROW
        elif request and (hs < 0 or (vvalid != NULL and not vvalid[i])):
            # the checks of decode_request, in its order: the header (by its own
            # api key's rule), then whether it is this column's api key
            hs = -1
            cur_init(&c, p, 0, n)
            if n < 4:
                kind = R_SHORT
            else:
                k = <int16_t>kp_ld16(p)
                v = <int16_t>kp_ld16(p + 2)
                if k < 0 or k >= nkeys or table[64 * k] == -2:
                    kind = R_UNKNOWN_KEY
                elif v < 0 or v > 63 or table[64 * k + v] < 0:
                    kind = R_VERSION
                elif cur_request_head(&c, table[64 * k + v], &h) or \
                        (table[64 * k + v] >= 2 and cur_skip_tags(&c)):
                    kind = R_CURSOR
                    v = -1
                elif k != api_key:
                    kind = R_API_KEY
        else:
            v = versions[i]
            cur_init(&c, p, 0, n)
            if (vvalid != NULL and not vvalid[i]) or v < 0 or v > 63 or roots[v] == NULL:
                kind = R_VERSION
            elif hs >= 0:
                if hs > n:
                    kind = R_HSIZE
                else:
                    c.pos = hs
            elif cur_take(&c, 4, W_INT32, -1) < 0 or (hv[v] >= 1 and cur_skip_tags(&c)):
                kind = R_CURSOR
                v = -1
        if kind == 0:
            body = c.pos
            c.path = steps
            if _w_struct(&c, roots[v], root):
                kind = R_CURSOR
                if (not request and api_key == _KIP511_KEY and v != _KIP511_VERSION and c.fail != F_MEMORY
                        and roots[_KIP511_VERSION] != NULL):
                    # KIP-511 (kafkaproto.protocol.decode_response_body): the body read in the
                    # fallback layout, taken when it carries the fallback's error code
                    _fail_cursor(&first, &c, v)
                    col_truncate(root, i)
                    cur_init(&c, p, body, n)
                    c.path = steps
                    if _w_struct(&c, roots[_KIP511_VERSION], root) == 0:
                        if (<int16_t*>root.kids[ec_col].data)[i] == _KIP511_ERROR:
                            kind = 0
                        else:
                            kind = R_FIRST  # the version's own failure, as decode_response raises it
                    else:
                        v = _KIP511_VERSION  # the fallback reading's failure
        if c.fail == F_MEMORY:
            kind = R_MEMORY
        trailing[i] = -1 if kind else <int32_t>(n - c.pos)
        if kind:
            status[i] = 1
            col_truncate(root, i)
            _rollback(root, i)
            rf = _fail_add(fails, i, kind)
            if rf == NULL:
                return -1
            if kind == R_SHORT:
                rf.x = n
            elif kind == R_API_KEY or kind == R_UNKNOWN_KEY:
                rf.x = <int16_t>kp_ld16(p)
            elif kind == R_VERSION:
                rf.x = v
                if request:
                    rf.y = <int16_t>kp_ld16(p) if hs < 0 else api_key
                else:
                    rf.y = 0 if (vvalid != NULL and not vvalid[i]) else 1
            elif kind == R_HSIZE:
                rf.x = hs
                rf.y = n
            elif kind == R_CURSOR:
                _fail_cursor(rf, &c, v)
            elif kind == R_FIRST:
                memcpy(rf, &first, sizeof(RowFail))
                rf.row = i
                rf.kind = R_CURSOR
            if kind == R_MEMORY:
                return -1
        else:
            status[i] = 0
    return 0


cdef Node** _roots(plans, Node** roots) except NULL:
    cdef int v
    for v in range(64):
        plan = plans[v] if v < len(plans) else None
        roots[v] = (<Plan?>plan).node() if plan is not None else NULL
    return roots


def arrow_messages(arr, int kind, cls, plans, hv_table, versions=None, vvalid=None, hsizes=None):
    """Decode frames of one message class into the union column tree.

    ``plans``: the class's plan for each version 0..63 (None where it has
    none); ``hv_table``: header versions, int8[api keys, 64] (-1: unsupported
    version, -2: unknown key; see arrow._common.header_table).  ``versions``
    (int32 ndarray) gives each row's version: responses, and requests whose
    ``hsizes`` (int32 ndarray: where the body starts, -1 to read the header)
    are given; other request frames carry theirs.  Returns ``(status uint8
    ndarray, tree, errors, trailing)``: ``errors`` maps each failed row to the
    text the object decoders raise for it; ``trailing`` (int32) is each row's
    bytes after its body, -1 for a failed row.
    """
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n
    cdef int api_key = cls.API_KEY
    cdef bint request = cls.KIND == "request"
    cdef int8_t[:, ::1] hv = hv_table
    cdef const int32_t* vp = NULL
    cdef const uint8_t* vv = NULL
    cdef const int32_t* hp = NULL
    cdef const int32_t[::1] vmem
    cdef const uint8_t[::1] vvmem
    cdef const int32_t[::1] hmem
    cdef Node* roots[64]
    cdef int k
    cdef Fails fails
    _roots(plans, roots)
    if versions is not None:
        vmem = versions
        vp = &vmem[0] if n else <const int32_t*>_ZERO16
        if vvalid is not None:
            vvmem = vvalid
            vv = &vvmem[0] if n else NULL
    elif not request:
        raise TypeError("response frames need their versions")
    if hsizes is not None:
        if versions is None:
            raise TypeError("header sizes need versions")
        hmem = hsizes
        hp = &hmem[0] if n else <const int32_t*>_ZERO16
    status = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] st = status
    cdef uint8_t* stp = &st[0] if n else _ZERO16
    trailing = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] tr = trailing
    cdef int32_t* trp = &tr[0] if n else <int32_t*>_ZERO16
    cdef int64_t nbytes = rows_bytes(&rin.r)
    cdef Col* root = _struct_cols(cls, n, min(max(nbytes // 32, 64), 1 << 16))
    cdef const int8_t* hvp = &hv[0, 0]
    cdef int nkeys = hv.shape[0]
    cdef int ec = cls._ATTRS.index("error_code") if "error_code" in cls._ATTRS else -1
    cdef int rc
    col_set_vhint(root, nbytes)  # no column's values can outgrow the frames
    fails.items = NULL
    fails.n = fails.cap = 0
    try:
        with nogil:
            rc = _msg_loop(&rin.r, api_key, request, vp, vv, hp, hvp, nkeys, roots, root, stp, trp, ec, &fails)
        if rc:
            raise MemoryError()
        errors = {fails.items[k].row: _row_error(&fails.items[k], cls) for k in range(fails.n)}
        tree = col_export(root)
    finally:
        col_free(root)
        free(fails.items)
    return status, tree, errors, trailing


# ---------------------------------------------------------------------------
# messages_array: the whole of kafkaproto.arrow.messages

cdef class _ClassInfo:
    """What a call needs of a message class, worked out once per class."""
    cdef object cls
    cdef object typ             # the struct type (arrow.message_type)
    cdef object plans           # kept alive: roots point into them
    cdef Node* roots[64]
    cdef int ec                 # the error_code field's column, -1: none
    cdef bint request
    cdef int api_key
    cdef object hv              # the header-version table (int8 ndarray) and its rows
    cdef const int8_t* hvp
    cdef int nkeys


cdef dict _INFO = {}
cdef object _import_array = pa.Array._import_from_c
cdef object _chunked = pa.chunked_array
cdef dict _KIND_OF = _build.ARRAY_KIND
cdef dict _INT_TYPES = _build.INT_WIDTH
cdef object _int_column = _build._int_column


cdef _ClassInfo _info(cls):
    cdef _ClassInfo info = _INFO.get(cls)
    cdef int8_t[:, ::1] hv
    if info is not None:
        return info
    info = _ClassInfo.__new__(_ClassInfo)
    info.cls = cls
    info.typ = _build._message_info(cls)[0]
    info.plans = version_plans(cls, ENGINE)
    _roots(info.plans, info.roots)
    info.ec = cls._ATTRS.index("error_code") if "error_code" in cls._ATTRS else -1
    info.request = cls.KIND == "request"
    info.api_key = cls.API_KEY
    info.hv = _common.header_table(info.request)
    hv = info.hv
    info.hvp = &hv[0, 0]
    info.nkeys = hv.shape[0]
    _INFO[cls] = info
    return info


cdef object _message_chunk(arr, int kind, _ClassInfo info, IntsIn vin, IntsIn hin, int64_t start):
    """One chunk of frames → its struct array (through the C data interface)."""
    cdef RowsIn rin = rows_in(arr, kind)
    cdef int64_t n = rin.r.n, k, nfail
    cdef int nf, rc
    cdef const int32_t* vp = NULL
    cdef const uint8_t* vv = NULL
    cdef const int32_t* hp = NULL
    cdef int64_t nbytes = rows_bytes(&rin.r)
    cdef uint8_t* status = <uint8_t*>malloc(n + 1)
    cdef int32_t* trailing = <int32_t*>malloc(n * 4 + 4)
    cdef int64_t* at = NULL
    cdef Col* root = NULL
    cdef Fails fails
    cdef ArrowArray aa
    fails.items = NULL
    fails.n = fails.cap = 0
    aa.release = NULL
    if vin is not None:
        vp = vin.v + start
        vv = vin.ok + start
    if hin is not None:
        hp = hin.v + start
    try:
        if status == NULL or trailing == NULL:
            raise MemoryError()
        root = _struct_cols(info.cls, n, min(max(nbytes // 32, 64), 1 << 16))
        col_set_vhint(root, nbytes)  # no column's values can outgrow the frames
        with nogil:
            rc = _msg_loop(&rin.r, info.api_key, info.request, vp, vv, hp, info.hvp, info.nkeys, info.roots, root,
                           status, trailing, info.ec, &fails)
        if rc:
            raise MemoryError()
        nfail = fails.n
        texts = [_row_error(&fails.items[k], info.cls) for k in range(nfail)]
        at = <int64_t*>malloc(nfail * sizeof(int64_t) + 8)
        if at == NULL:
            raise MemoryError()
        for k in range(nfail):
            at[k] = fails.items[k].row
        nf = root.nkids
        if aa_init(&aa, n, nf + 2):
            raise MemoryError()
        for k in range(nf):
            if col_to_c(root.kids[k], aa.children[k]):
                raise MemoryError()
        rc = aa_fixed(aa.children[nf], n, trailing, status, nfail)
        trailing = NULL  # the node's now
        if rc:
            raise MemoryError()
        aa_errors(aa.children[nf + 1], n, at, texts)
        return _import_array(<uintptr_t>&aa, info.typ)
    finally:
        aa_release(&aa)  # (nothing left to release once pyarrow took it)
        col_free(root)
        free(fails.items)
        free(status)
        free(trailing)
        free(at)


def messages_array(frames, cls, api_version=None, header_size=None):
    """kafkaproto.arrow.messages (for message class ``cls``)."""
    cdef _ClassInfo info = _info(cls)
    cdef IntsIn vin = None, hin = None
    cdef int64_t n, start = 0, i
    kind = _KIND_OF.get(type(frames))
    if kind is None and isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return _chunked([], type=info.typ)
    n = len(frames)
    if header_size is None:
        if not info.request:
            vin = ints_in(api_version, n, "api_version", -32768, 32767, _INT_TYPES, _int_column)
    else:
        if api_version is None:
            raise TypeError("header_size needs api_version: the versions of frames whose headers are not read")
        vin = ints_in(api_version, n, "api_version", -32768, 32767, _INT_TYPES, _int_column)
        hin = ints_in(header_size, n, "header_size", 0, 0x7FFFFFFF, _INT_TYPES, _int_column)
        for i in range(n):
            if not hin.ok[i]:
                hin.v[i] = -1
    if kind is not None:
        return _message_chunk(frames, kind, info, vin, hin, 0)
    chunks, chunked = _build._chunks(frames)
    out = []
    for arr, kind in chunks:
        out.append(_message_chunk(arr, kind, info, vin, hin, start))
        start += len(arr)
    return _chunked(out, type=info.typ) if chunked else out[0]
