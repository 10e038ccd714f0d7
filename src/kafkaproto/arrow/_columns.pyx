# cython: language_level=3
"""Column memory of the compiled Arrow decoders (``kafkaproto.arrow._columns``).

Growable C columns and the blocks that carry them to Python; the rows of an
input array.  See _columns.pxd for what each structure holds.
"""

from cpython.buffer cimport (
    PyObject_GetBuffer, PyBuffer_Release, PyObject_CheckBuffer, PyBUF_SIMPLE, PyBUF_C_CONTIGUOUS, PyBUF_FORMAT,
)
from cpython.bytes cimport PyBytes_AS_STRING
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset

COMPILED = True

cdef bytes _FMT_U8 = b"B"
cdef uint8_t EMPTY_BYTE[16]


# ---------------------------------------------------------------------------
# Output memory.  Every table gets fresh buffers; with plain malloc, blocks
# this large are mmap'd and returned to the system when freed, so each batch
# pays a page fault per 4 KiB it writes (more than the decoding itself).
# Freed large blocks are kept for reuse instead, by power-of-two size, up to
# _CACHE_MAX bytes (what jemalloc and mimalloc do for Arrow's own pool).  A
# block that does not fit makes room by letting go of the blocks given back
# longest ago: the cache holds what the last batches used (before, the first
# blocks kept stayed for good, and a batch's largest column, 128 MiB on bulk
# traffic, was mapped and faulted in afresh for every batch).

cdef extern from "pythread.h":
    ctypedef void* PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock()
    int PyThread_acquire_lock(PyThread_type_lock lock, int waitflag) nogil
    void PyThread_release_lock(PyThread_type_lock lock) nogil

cdef enum:
    BIG_SHIFT = 16          # blocks of 64 KiB and more are recycled
    BIG_BUCKETS = 48
    PER_BUCKET = 8

cdef void* _cache[BIG_BUCKETS][PER_BUCKET]
cdef uint64_t _cache_at[BIG_BUCKETS][PER_BUCKET]  # when each kept block was given back
cdef uint64_t _cache_clock = 0
cdef int _cache_n[BIG_BUCKETS]
cdef int64_t _cache_bytes = 0
cdef int64_t _CACHE_MAX = 512 << 20
cdef PyThread_type_lock _cache_lock = PyThread_allocate_lock()
if _cache_lock == NULL:
    raise MemoryError()


cdef inline int _bucket(size_t size) noexcept nogil:
    """The size class of a block: -1 for small blocks (plain malloc)."""
    cdef int b = BIG_SHIFT
    if size < (<size_t>1 << BIG_SHIFT):
        return -1
    while (<size_t>1 << b) < size:
        b += 1
    return b


cdef void* mem_get(size_t size) noexcept nogil:
    global _cache_bytes
    cdef int b = _bucket(size)
    cdef void* p = NULL
    if b < 0:
        return malloc(size if size else 1)
    if b >= BIG_BUCKETS:
        return NULL
    PyThread_acquire_lock(_cache_lock, 1)
    if _cache_n[b]:
        _cache_n[b] -= 1
        p = _cache[b][_cache_n[b]]
        _cache_bytes -= <int64_t>1 << b
    PyThread_release_lock(_cache_lock)
    if p == NULL:
        p = malloc(<size_t>1 << b)
    return p


cdef void* _evict_oldest(int lo, int hi) noexcept nogil:
    """Take the block given back longest ago (of buckets ``lo`` to ``hi - 1``) out of
    the cache, the lock held; NULL if there is none."""
    global _cache_bytes
    cdef int b, k, ob = -1, ok = -1
    cdef uint64_t best = 0
    cdef void* p
    for b in range(lo, hi):
        for k in range(_cache_n[b]):
            if ob < 0 or _cache_at[b][k] < best:
                ob, ok, best = b, k, _cache_at[b][k]
    if ob < 0:
        return NULL
    p = _cache[ob][ok]
    _cache_n[ob] -= 1
    _cache[ob][ok] = _cache[ob][_cache_n[ob]]
    _cache_at[ob][ok] = _cache_at[ob][_cache_n[ob]]
    _cache_bytes -= <int64_t>1 << ob
    return p


cdef void mem_put(void* p, size_t size) noexcept nogil:
    """Give back a block from mem_get(size)."""
    global _cache_bytes, _cache_clock
    cdef int b = _bucket(size)
    if p == NULL:
        return
    if b >= 0 and (<int64_t>1 << b) <= _CACHE_MAX:
        PyThread_acquire_lock(_cache_lock, 1)
        if _cache_n[b] == PER_BUCKET:  # the bucket's oldest block makes room
            free(_evict_oldest(b, b + 1))
        while _cache_bytes + (<int64_t>1 << b) > _CACHE_MAX:
            free(_evict_oldest(BIG_SHIFT, BIG_BUCKETS))
        _cache_clock += 1
        _cache[b][_cache_n[b]] = p
        _cache_at[b][_cache_n[b]] = _cache_clock
        _cache_n[b] += 1
        _cache_bytes += <int64_t>1 << b
        p = NULL
        PyThread_release_lock(_cache_lock)
    free(p)


def _cache_blocks(op, size_t size=0, uintptr_t block=0):
    """The block cache seen from Python, for its tests: ``"get"`` a block of
    ``size`` (its address), ``"put"`` one back, ``"max"`` set the cap to
    ``size`` (the cap before), ``"kept"`` (bytes kept, {block size: blocks})."""
    global _CACHE_MAX
    cdef int64_t old
    if op == "get":
        return <uintptr_t>mem_get(size)
    if op == "put":
        mem_put(<void*>block, size)
        return None
    if op == "max":
        old = _CACHE_MAX
        _CACHE_MAX = <int64_t>size
        return old
    if op == "kept":
        PyThread_acquire_lock(_cache_lock, 1)
        try:
            return _cache_bytes, {1 << b: _cache_n[b] for b in range(BIG_SHIFT, BIG_BUCKETS) if _cache_n[b]}
        finally:
            PyThread_release_lock(_cache_lock)
    raise ValueError(op)


cdef void* mem_resize(void* p, size_t used, size_t old, size_t new) noexcept nogil:
    """A block of ``new`` bytes holding the first ``used`` of ``p`` (a block of ``old``)."""
    cdef int bo = _bucket(old), bn = _bucket(new)
    cdef void* q
    if bo < 0 and bn < 0:
        return realloc(p, new if new else 1)
    if bo == bn:
        return p
    q = mem_get(new)
    if q == NULL:
        return NULL
    if used:
        memcpy(q, p, used)
    mem_put(p, old)
    return q


cdef class CMem:
    """A malloc'd block handed to NumPy / pyarrow through the buffer protocol, free()d with it."""

    def __dealloc__(self):
        if self.alloc >= 0:
            mem_put(self.ptr, self.alloc)
        else:
            free(self.ptr)

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.size
        self.strides[0] = 1
        view.buf = self.ptr
        view.obj = self
        view.len = self.size
        view.readonly = 0
        view.itemsize = 1
        view.format = PyBytes_AS_STRING(_FMT_U8)
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef CMem cmem(void* ptr, Py_ssize_t size, Py_ssize_t alloc=-1):
    """Wrap (and take ownership of) a block: malloc'd (alloc -1) or from mem_get(alloc).
    NULL becomes an empty block."""
    cdef CMem m = CMem.__new__(CMem)
    if ptr == NULL:
        ptr = malloc(16)
        if ptr == NULL:
            raise MemoryError()
        size = 0
        alloc = -1
    m.ptr = <char*>ptr
    m.size = size
    m.alloc = alloc
    return m


cdef inline const uint8_t* _addr(buf):
    return <const uint8_t*><uintptr_t>buf.address


# ---------------------------------------------------------------------------
# input rows: binary (int32 offsets), large_binary (int64) or binary_view

cdef class RowsIn:
    """Holds a pyarrow array's buffers alive while a loop reads them."""

    def __dealloc__(self):
        free(self.vb)


cdef RowsIn rows_in(arr, int kind):
    cdef RowsIn h = RowsIn.__new__(RowsIn)
    cdef Py_ssize_t k, nb
    bufs = arr.buffers()
    h.keep = (arr, bufs)
    h.r.n = len(arr)
    h.r.off = arr.offset
    h.r.valid = NULL
    if bufs[0] is not None and arr.null_count:
        h.r.valid = _addr(bufs[0])
    h.r.off32 = NULL
    h.r.off64 = NULL
    h.r.data = EMPTY_BYTE
    h.r.views = NULL
    h.r.vbufs = NULL
    if kind == IN_VIEW:
        h.r.views = _addr(bufs[1]) if bufs[1] is not None else EMPTY_BYTE
        nb = len(bufs) - 2
        h.vb = <const uint8_t**>malloc((nb + 1) * sizeof(uint8_t*))
        if h.vb == NULL:
            raise MemoryError()
        for k in range(nb):
            h.vb[k] = _addr(bufs[2 + k]) if bufs[2 + k] is not None else EMPTY_BYTE
        h.r.vbufs = h.vb
        return h
    if bufs[2] is not None:
        h.r.data = _addr(bufs[2])
    if bufs[1] is None:
        # only an empty array comes without offsets
        if h.r.n:
            raise ValueError("binary array without offsets")
        h.r.off64 = <const int64_t*>EMPTY_BYTE
    elif kind == IN_LARGE:
        h.r.off64 = <const int64_t*>_addr(bufs[1])
    else:
        h.r.off32 = <const int32_t*>_addr(bufs[1])
    return h


cdef int64_t rows_bytes(const Rows* r) noexcept nogil:
    """The bytes of the rows' values (arr.nbytes counts whole buffers: a view
    array's rows may point into a far larger one)."""
    cdef int64_t i, total = 0
    cdef int32_t L
    if r.n == 0:
        return 0
    if r.off64 != NULL:
        return r.off64[r.off + r.n] - r.off64[r.off]
    if r.off32 != NULL:
        return r.off32[r.off + r.n] - r.off32[r.off]
    for i in range(r.n):
        memcpy(&L, r.views + 16 * (i + r.off), 4)
        total += L
    return total


# ---------------------------------------------------------------------------
# growable output columns

cdef void col_free(Col* c) noexcept nogil:
    cdef int k
    if c == NULL:
        return
    for k in range(c.nkids):
        col_free(c.kids[k])
    free(c.kids)
    mem_put(c.valid, c.cap)
    mem_put(c.data, c.cap * c.width)
    mem_put(c.offs, (c.cap + 1) * 8)
    mem_put(c.vdata, c.vcap)
    free(c)


cdef Col* col_new(int what, int width, int nkids, int64_t cap) noexcept nogil:
    cdef Col* c = <Col*>calloc(1, sizeof(Col))
    if c == NULL:
        return NULL
    if cap < 16:
        cap = 16
    c.what = what
    c.width = width
    c.cap = cap
    c.nkids = nkids
    if nkids:
        c.kids = <Col**>calloc(nkids, sizeof(Col*))
    if what == C_FIXED:
        c.data = <uint8_t*>mem_get(cap * width)
    if what == C_VAR or what == C_LIST:
        c.offs = <int64_t*>mem_get((cap + 1) * 8)
        if c.offs != NULL:
            c.offs[0] = 0
    if what == C_VAR:
        c.vcap = 256
        c.vdata = <uint8_t*>mem_get(c.vcap)
    if ((nkids and c.kids == NULL) or (what == C_FIXED and c.data == NULL)
            or ((what == C_VAR or what == C_LIST) and c.offs == NULL) or (what == C_VAR and c.vdata == NULL)):
        col_free(c)
        return NULL
    return c


cdef int col_grow(Col* c, int64_t need) noexcept nogil:
    cdef int64_t cap = c.cap * 2
    cdef void* p
    if cap < need:
        cap = need
    # the sizes stay what _col_free and _col_export compute from c.cap
    if c.valid != NULL:
        p = mem_resize(c.valid, c.n, c.cap, cap)
        if p == NULL:
            return -1
        c.valid = <uint8_t*>p
    if c.what == C_FIXED:
        p = mem_resize(c.data, c.n * c.width, c.cap * c.width, cap * c.width)
        if p == NULL:
            return -1
        c.data = <uint8_t*>p
    elif c.what != C_STRUCT:
        p = mem_resize(c.offs, (c.n + 1) * 8, (c.cap + 1) * 8, (cap + 1) * 8)
        if p == NULL:
            return -1
        c.offs = <int64_t*>p
    c.cap = cap
    return 0


cdef int col_valid_init(Col* c) noexcept nogil:
    """Start tracking validity: every slot so far is valid."""
    c.valid = <uint8_t*>mem_get(c.cap)
    if c.valid == NULL:
        return -1
    memset(c.valid, 1, c.n)
    return 0


cdef int col_vgrow(Col* c, int64_t need) noexcept nogil:
    cdef int64_t cap = c.vcap * 2
    cdef void* p
    if cap < need:
        cap = need
    # Once a column holds a megabyte, jump to the expected total (the input's
    # size): doubling from 256 bytes copied every value once more and touched
    # a fresh block at every step.
    if need > (1 << 20) and c.vhint > cap:
        cap = c.vhint
    p = mem_resize(c.vdata, c.vlen, c.vcap, cap)
    if p == NULL:
        return -1
    c.vdata = <uint8_t*>p
    c.vcap = cap
    return 0


cdef void col_set_vhint(Col* c, int64_t hint) noexcept nogil:
    """Give every var-width column of a tree the expected total of its values."""
    cdef int k
    if c == NULL:
        return
    if c.what == C_VAR:
        c.vhint = hint
    for k in range(c.nkids):
        col_set_vhint(c.kids[k], hint)


cdef int col_put_null(Col* c) noexcept nogil:
    cdef int k
    if col_reserve(c, 1):
        return -1
    if c.what == C_FIXED:
        memset(c.data + c.n * c.width, 0, c.width)
    elif c.what == C_VAR:
        c.offs[c.n + 1] = c.vlen
    elif c.what == C_LIST:
        c.offs[c.n + 1] = c.offs[c.n]
    else:
        for k in range(c.nkids):
            if col_put_null(c.kids[k]):
                return -1
    if col_mark_null(c):
        return -1
    c.n += 1
    return 0


cdef void col_truncate(Col* c, int64_t n) noexcept nogil:
    """Drop everything appended after slot n (rolls back a failed row)."""
    cdef int k
    c.n = n
    if c.what == C_VAR:
        c.vlen = c.offs[n]
    elif c.what == C_LIST:
        col_truncate(c.kids[0], c.offs[n])
    elif c.what == C_STRUCT:
        for k in range(c.nkids):
            col_truncate(c.kids[k], n)


cdef uint8_t* _pack_bits(const uint8_t* v, int64_t n) noexcept nogil:
    """0/1 bytes → an LSB-first bitmap (Arrow's layout for validity and bools)."""
    cdef int64_t nb = (n + 7) >> 3
    cdef int64_t i, j
    cdef uint8_t byte
    cdef uint8_t* out = <uint8_t*>malloc(nb if nb else 1)
    if out == NULL:
        return NULL
    for i in range(n >> 3):
        byte = 0
        for j in range(8):
            byte |= (v[8 * i + j] != 0) << j
        out[i] = byte
    if n & 7:
        byte = 0
        for j in range(n & 7):
            byte |= (v[(n & ~(<int64_t>7)) + j] != 0) << j
        out[nb - 1] = byte
    return out


cdef int64_t _count_nulls(const uint8_t* v, int64_t n) noexcept nogil:
    cdef int64_t i, ones = 0
    for i in range(n):
        ones += v[i]
    return n - ones


cdef object _bits(const uint8_t* v, int64_t n):
    cdef uint8_t* packed = _pack_bits(v, n)
    if packed == NULL:
        raise MemoryError()
    return cmem(packed, (n + 7) >> 3)


cdef object col_export(Col* c):
    """(length, null count, validity bitmap or None, buffers, children); the blocks move to Python."""
    cdef int64_t n = c.n
    cdef int64_t nulls = _count_nulls(c.valid, n) if c.valid != NULL else 0
    cdef int k
    bitmap = _bits(c.valid, n) if nulls else None
    if c.what == C_FIXED:
        bufs = (_bits(c.data, n) if c.bits else cmem(c.data, n * c.width, c.cap * c.width),)
        if not c.bits:
            c.data = NULL
    elif c.what == C_VAR:
        bufs = (cmem(c.offs, (n + 1) * 8, (c.cap + 1) * 8), cmem(c.vdata, c.vlen, c.vcap))
        c.offs = NULL
        c.vdata = NULL
    elif c.what == C_LIST:
        bufs = (cmem(c.offs, (n + 1) * 8, (c.cap + 1) * 8),)
        c.offs = NULL
    else:
        bufs = ()
    kids = tuple([col_export(c.kids[k]) for k in range(c.nkids)])
    return (n, nulls, bitmap, bufs, kids)




# ---------------------------------------------------------------------------
# Columns out through the Arrow C data interface: each ArrowArray node owns
# its buffers (a column's blocks, moved out of it) and its children; its
# release callback gives them back, in whatever thread drops the last
# reference (no GIL needed: mem_put and free only).

cdef struct AAPriv:
    const void* bufs[3]
    void* block[3]
    int64_t alloc[3]        # the mem_get size of block[k], -1: malloc'd / calloc'd, ZEROS: the shared zeros


cdef void aa_release(ArrowArray* a) noexcept nogil:
    cdef int64_t k
    cdef AAPriv* priv = <AAPriv*>a.private_data
    cdef ArrowArray* kid
    if a.release == NULL:
        return
    if a.children != NULL:  # (NULL only when aa_init ran out of memory)
        for k in range(a.n_children):
            kid = a.children[k]
            if kid != NULL:
                if kid.release != NULL:
                    kid.release(kid)
                free(kid)
    free(a.children)
    if priv != NULL:
        for k in range(3):
            if priv.alloc[k] >= 0:
                mem_put(priv.block[k], priv.alloc[k])
            elif priv.alloc[k] == ZEROS:
                _zeros_put(priv.block[k])
            else:
                free(priv.block[k])
        free(priv)
    a.release = NULL


cdef int aa_init(ArrowArray* a, int64_t n, int64_t nkids) noexcept nogil:
    """An empty node of ``n`` slots and ``nkids`` children (made empty too): no
    buffers yet (aa_set), no nulls; released by aa_release."""
    cdef int64_t k
    cdef AAPriv* priv = <AAPriv*>calloc(1, sizeof(AAPriv))
    a.length = n
    a.null_count = 0
    a.offset = 0
    a.n_buffers = 1
    a.n_children = nkids
    a.buffers = NULL if priv == NULL else priv.bufs
    a.children = <ArrowArray**>calloc(nkids if nkids else 1, sizeof(ArrowArray*))
    a.dictionary = NULL
    a.private_data = priv
    a.release = aa_release
    if priv == NULL or a.children == NULL:
        return -1
    for k in range(3):
        priv.alloc[k] = -1
    for k in range(nkids):
        a.children[k] = <ArrowArray*>calloc(1, sizeof(ArrowArray))
        if a.children[k] == NULL:
            return -1
    return 0


cdef void aa_set(ArrowArray* a, int k, void* block, int64_t alloc) noexcept nogil:
    """Buffer ``k`` of the node: ``block``, now the node's (from mem_get(alloc), or malloc'd: -1)."""
    cdef AAPriv* priv = <AAPriv*>a.private_data
    priv.bufs[k] = block
    priv.block[k] = block
    priv.alloc[k] = alloc
    if a.n_buffers < k + 1:
        a.n_buffers = k + 1


cdef int col_to_c(Col* c, ArrowArray* a) noexcept nogil:
    """Move a column (and its children) into ``a``, an uninitialised node; the column
    keeps nothing but what col_free still frees.  0, or -1 out of memory (``a`` is
    then still released by aa_release)."""
    cdef int64_t n = c.n
    cdef int64_t nulls = _count_nulls(c.valid, n) if c.valid != NULL else 0
    cdef int k
    cdef uint8_t* packed
    if aa_init(a, n, c.nkids):
        return -1
    a.null_count = nulls
    if nulls:
        packed = _pack_bits(c.valid, n)
        if packed == NULL:
            return -1
        aa_set(a, 0, packed, -1)
    if c.what == C_FIXED:
        if c.bits:
            packed = _pack_bits(c.data, n)
            if packed == NULL:
                return -1
            aa_set(a, 1, packed, -1)
        else:
            aa_set(a, 1, c.data, c.cap * c.width)
            c.data = NULL
    elif c.what == C_VAR:
        aa_set(a, 1, c.offs, (c.cap + 1) * 8)
        aa_set(a, 2, c.vdata, c.vcap)
        c.offs = NULL
        c.vdata = NULL
    elif c.what == C_LIST:
        aa_set(a, 1, c.offs, (c.cap + 1) * 8)
        c.offs = NULL
    for k in range(c.nkids):
        if col_to_c(c.kids[k], a.children[k]):
            return -1
    return 0


# All-null columns (the error column of a call without errors, the columns a
# call has no values for) all read one shared block of zeros: their validity,
# offsets and slots are zeros, and Arrow's arrays never write to their buffers.
# The block grows to the largest column asked for; a block outgrown is freed
# when the last array reading it is released.  Large blocks are calloc'd pages
# the system maps zeroed: never written, they take no memory.

cdef struct ZBlock:
    int64_t refs            # arrays reading it
    size_t size             # bytes of zeros after the header
    int64_t pad[6]          # (a 64-byte header: the zeros as aligned as calloc's block)

cdef ZBlock* _zeros = NULL

cdef enum:
    ZEROS = -2              # AAPriv.alloc of a buffer that is the shared zeros


cdef void* _zeros_get(size_t size) noexcept nogil:
    """At least ``size`` bytes of zeros (a reference to the shared block: _zeros_put)."""
    global _zeros
    cdef ZBlock* z
    cdef void* p = NULL
    PyThread_acquire_lock(_cache_lock, 1)
    if _zeros == NULL or _zeros.size < size:
        z = <ZBlock*>calloc(1, sizeof(ZBlock) + size)
        if z != NULL:
            z.size = size
            if _zeros != NULL and _zeros.refs == 0:
                free(_zeros)
            _zeros = z
    if _zeros != NULL and _zeros.size >= size:
        _zeros.refs += 1
        p = <void*>(_zeros + 1)
    PyThread_release_lock(_cache_lock)
    return p


cdef void _zeros_put(void* p) noexcept nogil:
    cdef ZBlock* z = (<ZBlock*>p) - 1
    if p == NULL:
        return
    PyThread_acquire_lock(_cache_lock, 1)
    z.refs -= 1
    if z.refs == 0 and z != _zeros:
        free(z)
    PyThread_release_lock(_cache_lock)


cdef int aa_nulls(ArrowArray* a, int64_t n, int nbuf, int width) noexcept nogil:
    """A column of ``n`` nulls: ``nbuf`` 2 (fixed ``width`` bytes a slot) or 3
    (64-bit offsets, no data), every buffer the shared zeros."""
    cdef void* p
    cdef size_t size = (n + 1) * 8 if nbuf == 3 else (n if n else 1) * width
    if aa_init(a, n, 0):
        return -1
    a.null_count = n
    if size < <size_t>((n + 7) >> 3):
        size = (n + 7) >> 3
    p = _zeros_get(size)
    aa_set(a, 0, p, ZEROS)
    if p == NULL:
        return -1
    p = _zeros_get(size)
    aa_set(a, 1, p, ZEROS)
    if p == NULL:
        return -1
    if nbuf == 3:
        p = malloc(1)
        aa_set(a, 2, p, -1)
        if p == NULL:
            return -1
    return 0


cdef int aa_strings(ArrowArray* a, int64_t n, const int64_t* rows, list texts) except -1:
    """A large_string column of ``n`` rows: ``texts[j]`` at row ``rows[j]`` (ascending), null elsewhere."""
    cdef int64_t m = len(texts), j, i = 0, at = 0
    cdef bytes t
    cdef list data = [(<str>x).encode("utf-8") for x in texts]
    cdef int64_t total = sum([len(<bytes>x) for x in data])
    cdef uint8_t* valid
    cdef int64_t* offs
    cdef uint8_t* chars
    if aa_init(a, n, 0):
        raise MemoryError()
    a.null_count = n - m
    valid = <uint8_t*>calloc((n + 7) >> 3 if n else 1, 1)
    aa_set(a, 0, valid, -1)
    offs = <int64_t*>malloc((n + 1) * 8)
    aa_set(a, 1, offs, -1)
    chars = <uint8_t*>malloc(total if total else 1)
    aa_set(a, 2, chars, -1)
    if valid == NULL or offs == NULL or chars == NULL:
        raise MemoryError()
    offs[0] = 0
    for j in range(m):
        while i < rows[j]:
            offs[i + 1] = at
            i += 1
        t = data[j]
        memcpy(chars + at, PyBytes_AS_STRING(t), len(t))
        at += len(t)
        valid[i >> 3] |= 1 << (i & 7)
        offs[i + 1] = at
        i += 1
    while i < n:
        offs[i + 1] = at
        i += 1
    return 0


cdef int aa_errors(ArrowArray* a, int64_t n, const int64_t* rows, list texts) except -1:
    """A decoder's error column: ``texts[j]`` at row ``rows[j]`` (ascending), null elsewhere."""
    if not texts:
        if aa_nulls(a, n, 3, 0):
            raise MemoryError()
        return 0
    return aa_strings(a, n, rows, texts)


cdef int aa_fixed(ArrowArray* a, int64_t n, void* block, const uint8_t* status, int64_t failed) noexcept nogil:
    """A fixed-width column of ``n`` slots in ``block`` (malloc'd: now the node's), null
    where ``status`` is not 0 (``failed`` rows).  0, or -1 out of memory (``a``
    still released by aa_release)."""
    cdef int64_t i
    cdef uint8_t* valid
    if aa_init(a, n, 0):
        free(block)
        return -1
    aa_set(a, 1, block, -1)
    if failed:
        valid = <uint8_t*>calloc((n + 7) >> 3, 1)
        if valid == NULL:
            return -1
        aa_set(a, 0, valid, -1)
        for i in range(n):
            if status[i] == 0:
                valid[i >> 3] |= 1 << (i & 7)
        a.null_count = failed
    return 0


# ---------------------------------------------------------------------------
# int arguments (api keys, versions, header sizes): a value or a column

cdef class IntsIn:
    """Owns the values and validity of one int argument (see _columns.pxd)."""

    def __dealloc__(self):
        free(self.v)
        free(self.ok)


cdef void _read_ints(IntsIn h, const uint8_t* src, const uint8_t* valid, int64_t off, int64_t n, int width,
                     int64_t least, int64_t most) noexcept nogil:
    """n values of ``width`` bytes (negative: unsigned) from ``src`` (from slot ``off``, validity
    bitmap ``valid`` or NULL) into h, -1 outside [least, most]."""
    cdef int64_t i, j, x
    for i in range(n):
        j = i + off
        if valid != NULL and not (valid[j >> 3] >> (j & 7)) & 1:
            h.ok[i] = 0
            h.v[i] = 0
            continue
        h.ok[i] = 1
        if width == 1:
            x = (<const int8_t*>src)[j]
        elif width == 2:
            x = (<const int16_t*>src)[j]
        elif width == 4:
            x = (<const int32_t*>src)[j]
        elif width == 8:
            x = (<const int64_t*>src)[j]
        elif width == -1:
            x = src[j]
        elif width == -2:
            x = (<const uint16_t*>src)[j]
        elif width == -4:
            x = (<const uint32_t*>src)[j]
        else:
            x = -1 if (<const uint64_t*>src)[j] > <uint64_t>most else <int64_t>(<const uint64_t*>src)[j]
        h.v[i] = <int32_t>(x if least <= x <= most else -1)


cdef int _buffer_width(values):
    """The width of a one-dimensional, C-contiguous integer buffer (a numpy array...):
    bytes a value, negative when unsigned; 0 for anything else."""
    cdef Py_buffer view
    cdef bytes fmt
    cdef int w
    if not PyObject_CheckBuffer(values) or isinstance(values, (bytes, bytearray)):
        return 0
    try:
        PyObject_GetBuffer(values, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except (BufferError, TypeError, ValueError):
        return 0
    try:
        if view.ndim != 1 or view.format == NULL:
            return 0
        fmt = view.format
        if fmt[:1] in (b"<", b"=", b"@"):
            fmt = fmt[1:]
        w = view.itemsize
        if len(fmt) != 1 or w not in (1, 2, 4, 8) or fmt not in b"bhilqBHILQ":
            return 0
        return -w if fmt.isupper() else w
    finally:
        PyBuffer_Release(&view)


cdef IntsIn ints_in(values, int64_t n, str what, int64_t least, int64_t most, dict int_types, fallback):
    """``values`` (an int, a pyarrow integer array, a one-dimensional integer buffer such as
    a numpy array: read here; anything else through
    ``fallback(values, n, what)`` → (int32 ndarray, uint8 ndarray), already mapped to
    the range) → n values in [least, most] (-1 outside it) and their validity."""
    cdef IntsIn h = IntsIn.__new__(IntsIn)
    cdef int64_t i, x
    cdef int width
    cdef Py_buffer view
    cdef const uint8_t* src
    cdef const uint8_t* valid = NULL
    cdef const int32_t[::1] fv
    cdef const uint8_t[::1] fo
    h.n = n
    h.v = <int32_t*>malloc(n * 4 + 4)
    h.ok = <uint8_t*>malloc(n + 1)
    if h.v == NULL or h.ok == NULL:
        raise MemoryError()
    if values is None:
        raise TypeError(f"{what} is required")
    if type(values) is int:
        x = values if least <= values <= most else -1
        for i in range(n):
            h.v[i] = <int32_t>x
        memset(h.ok, 1, n)
        return h
    width = int_types.get(type(values), 0)
    if width:
        if len(values) != n:
            raise ValueError(f"{what}: {len(values)} values for {n} frames")
        bufs = values.buffers()
        if values.null_count and bufs[0] is not None:
            valid = <const uint8_t*><uintptr_t>bufs[0].address
        src = <const uint8_t*><uintptr_t>bufs[1].address if bufs[1] is not None else EMPTY_BYTE
        _read_ints(h, src, valid, values.offset, n, width, least, most)
        return h
    width = _buffer_width(values)
    if width:
        PyObject_GetBuffer(values, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
        try:
            if view.len // view.itemsize != n:
                raise ValueError(f"{what}: {view.len // view.itemsize} values for {n} frames")
            _read_ints(h, <const uint8_t*>view.buf, NULL, 0, n, width, least, most)
        finally:
            PyBuffer_Release(&view)
        return h
    got, ok = fallback(values, n, what)
    fv = got
    fo = ok
    if n:
        memcpy(h.v, &fv[0], n * 4)
        memcpy(h.ok, &fo[0], n)
    return h
