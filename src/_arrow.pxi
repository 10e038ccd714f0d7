# Arrow batch decoders, included at the end of _codec.pyx.  Twin:
# kafkaproto/_arrow_py.py (same inputs, same buffers out).
#
# The loops fill plain C buffers without the GIL and hand them over as
# `_CMem` blocks (buffer protocol); kafkaproto/arrow.py wraps them with
# pa.Array.from_buffers, so this module never imports pyarrow and never links
# against Arrow's C++.  A row that fails is rolled back to nulls and marked in
# a status array; the Python layer asks the object decoders for the exact error
# message of those (rare) rows, so both twins report the same text.

from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset
from libc.stdint cimport uintptr_t

cdef extern from *:
    """
    /* Strict UTF-8 check (what Python's decoder accepts): no overlongs, no
       surrogates, nothing above U+10FFFF.  ASCII runs go 8 bytes at a time. */
    static int kp_utf8_ok(const unsigned char *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
        while (i < n) {
            if (i + 8 <= n) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
            }
            unsigned char c = s[i];
            if (c < 0x80) { i++; continue; }
            if (c < 0xC2) return 0;
            if (c < 0xE0) {
                if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
                i += 2; continue;
            }
            if (c < 0xF0) {
                if (i + 2 >= n) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
                if (c == 0xE0 && c1 < 0xA0) return 0;
                if (c == 0xED && c1 >= 0xA0) return 0;
                i += 3; continue;
            }
            if (c < 0xF5) {
                if (i + 3 >= n) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
                if (c == 0xF0 && c1 < 0x90) return 0;
                if (c == 0xF4 && c1 >= 0x90) return 0;
                i += 4; continue;
            }
            return 0;
        }
        return 1;
    }
    """
    int kp_utf8_ok(const unsigned char* s, Py_ssize_t n) nogil


cdef extern from *:
    """
    /* CRC-32 (zlib's: reflected 0xEDB88320, inverted in and out) of legacy
       messages, slicing by 16.  The tables are filled once, at import. */
    static uint32_t kp_crc32_tab[16][256];
    static void kp_crc32_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
            kp_crc32_tab[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = kp_crc32_tab[0][i];
            for (int t = 1; t < 16; t++) {
                c = kp_crc32_tab[0][c & 0xFF] ^ (c >> 8);
                kp_crc32_tab[t][i] = c;
            }
        }
    }
    static inline uint32_t kp_le32(const unsigned char *p) {
        return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    }
    static uint32_t kp_crc32(const unsigned char *p, Py_ssize_t n) {
        const uint32_t (*t)[256] = (const uint32_t (*)[256])kp_crc32_tab;
        uint32_t c = 0xFFFFFFFFu;
        while (n >= 16) {
            uint32_t a = c ^ kp_le32(p), b = kp_le32(p + 4), d = kp_le32(p + 8), e = kp_le32(p + 12);
            c = t[15][a & 0xFF] ^ t[14][(a >> 8) & 0xFF] ^ t[13][(a >> 16) & 0xFF] ^ t[12][a >> 24] ^
                t[11][b & 0xFF] ^ t[10][(b >> 8) & 0xFF] ^ t[9][(b >> 16) & 0xFF] ^ t[8][b >> 24] ^
                t[7][d & 0xFF] ^ t[6][(d >> 8) & 0xFF] ^ t[5][(d >> 16) & 0xFF] ^ t[4][d >> 24] ^
                t[3][e & 0xFF] ^ t[2][(e >> 8) & 0xFF] ^ t[1][(e >> 16) & 0xFF] ^ t[0][e >> 24];
            p += 16;
            n -= 16;
        }
        while (n-- > 0) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        return c ^ 0xFFFFFFFFu;
    }
    """
    void kp_crc32_init() nogil
    uint32_t kp_crc32(const unsigned char* p, Py_ssize_t n) nogil

kp_crc32_init()


def crc32(data):
    """CRC-32 of a buffer, as zlib.crc32 computes it (the legacy messages' checksum; for tests)."""
    cdef Py_buffer view
    cdef uint32_t c
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        c = kp_crc32(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return c


cdef bytes _FMT_U8 = b"B"


# ---------------------------------------------------------------------------
# Output memory.  Every table gets fresh buffers; with plain malloc, blocks
# this large are mmap'd and returned to the system when freed, so each batch
# pays a page fault per 4 KiB it writes (more than the decoding itself).
# Freed large blocks are kept for reuse instead, by power-of-two size, up to
# _CACHE_MAX bytes (what jemalloc and mimalloc do for Arrow's own pool).

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
cdef int _cache_n[BIG_BUCKETS]
cdef int64_t _cache_bytes = 0
cdef int64_t _CACHE_MAX = 256 << 20
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


cdef void* _mem_get(size_t size) noexcept nogil:
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


cdef void _mem_put(void* p, size_t size) noexcept nogil:
    """Give back a block from _mem_get(size)."""
    global _cache_bytes
    cdef int b = _bucket(size)
    if p == NULL:
        return
    if b >= 0:
        PyThread_acquire_lock(_cache_lock, 1)
        if _cache_n[b] < PER_BUCKET and _cache_bytes + (<int64_t>1 << b) <= _CACHE_MAX:
            _cache[b][_cache_n[b]] = p
            _cache_n[b] += 1
            _cache_bytes += <int64_t>1 << b
            p = NULL
        PyThread_release_lock(_cache_lock)
    free(p)


cdef void* _mem_resize(void* p, size_t used, size_t old, size_t new) noexcept nogil:
    """A block of ``new`` bytes holding the first ``used`` of ``p`` (a block of ``old``)."""
    cdef int bo = _bucket(old), bn = _bucket(new)
    cdef void* q
    if bo < 0 and bn < 0:
        return realloc(p, new if new else 1)
    if bo == bn:
        return p
    q = _mem_get(new)
    if q == NULL:
        return NULL
    if used:
        memcpy(q, p, used)
    _mem_put(p, old)
    return q


cdef class _CMem:
    """A malloc'd block handed to NumPy / pyarrow through the buffer protocol, free()d with it."""

    cdef char* ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t alloc    # the _mem_get size, or -1 for a plain malloc'd block
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        if self.alloc >= 0:
            _mem_put(self.ptr, self.alloc)
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


cdef _CMem _cmem(void* ptr, Py_ssize_t size, Py_ssize_t alloc=-1):
    """Wrap (and take ownership of) a block: malloc'd (alloc -1) or from _mem_get(alloc).
    NULL becomes an empty block."""
    cdef _CMem m = _CMem.__new__(_CMem)
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

cdef enum:
    IN_BINARY = 0
    IN_LARGE = 1
    IN_VIEW = 2

cdef uint8_t _EMPTY_BYTE[16]


cdef struct _Rows:
    int64_t n
    int64_t off
    const uint8_t* valid
    const int32_t* off32
    const int64_t* off64
    const uint8_t* data
    const uint8_t* views
    const uint8_t** vbufs


cdef inline bint _row(const _Rows* r, int64_t i, const uint8_t** p, int64_t* n) noexcept nogil:
    """Row i → (pointer, length); False for a null row."""
    cdef int64_t j = i + r.off
    cdef int64_t a
    cdef int32_t L, bi, bo
    cdef const uint8_t* v
    if r.valid != NULL and not ((r.valid[j >> 3] >> (j & 7)) & 1):
        return False
    if r.off64 != NULL:
        a = r.off64[j]
        p[0] = r.data + a
        n[0] = r.off64[j + 1] - a
    elif r.off32 != NULL:
        a = r.off32[j]
        p[0] = r.data + a
        n[0] = r.off32[j + 1] - a
    else:
        v = r.views + 16 * j
        memcpy(&L, v, 4)
        n[0] = L
        if L <= 12:
            p[0] = v + 4
        else:
            memcpy(&bi, v + 8, 4)
            memcpy(&bo, v + 12, 4)
            p[0] = r.vbufs[bi] + bo
    return True


cdef class _RowsIn:
    """Holds a pyarrow array's buffers alive while a loop reads them."""

    cdef _Rows r
    cdef object keep
    cdef const uint8_t** vb

    def __dealloc__(self):
        free(self.vb)


cdef _RowsIn _rows_in(arr, int kind):
    cdef _RowsIn h = _RowsIn.__new__(_RowsIn)
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
    h.r.data = _EMPTY_BYTE
    h.r.views = NULL
    h.r.vbufs = NULL
    if kind == IN_VIEW:
        h.r.views = _addr(bufs[1]) if bufs[1] is not None else _EMPTY_BYTE
        nb = len(bufs) - 2
        h.vb = <const uint8_t**>malloc((nb + 1) * sizeof(uint8_t*))
        if h.vb == NULL:
            raise MemoryError()
        for k in range(nb):
            h.vb[k] = _addr(bufs[2 + k]) if bufs[2 + k] is not None else _EMPTY_BYTE
        h.r.vbufs = h.vb
        return h
    if bufs[2] is not None:
        h.r.data = _addr(bufs[2])
    if bufs[1] is None:
        # only an empty array comes without offsets
        if h.r.n:
            raise ValueError("binary array without offsets")
        h.r.off64 = <const int64_t*>_EMPTY_BYTE
    elif kind == IN_LARGE:
        h.r.off64 = <const int64_t*>_addr(bufs[1])
    else:
        h.r.off32 = <const int32_t*>_addr(bufs[1])
    return h


# ---------------------------------------------------------------------------
# growable output columns

cdef enum:
    C_FIXED = 0
    C_VAR = 1
    C_STRUCT = 2
    C_LIST = 3

cdef struct _Col:
    int what
    int width
    int64_t n
    int64_t cap
    uint8_t* valid      # 0/1 per slot; NULL until the first null (then all earlier slots are 1)
    uint8_t* data
    int64_t* offs
    uint8_t* vdata
    int64_t vlen
    int64_t vcap
    int64_t vhint       # expected total value bytes (0: none); see _vgrow
    _Col** kids
    int nkids
    bint bits           # bool values: bit-packed on export


cdef void _col_free(_Col* c) noexcept nogil:
    cdef int k
    if c == NULL:
        return
    for k in range(c.nkids):
        _col_free(c.kids[k])
    free(c.kids)
    _mem_put(c.valid, c.cap)
    _mem_put(c.data, c.cap * c.width)
    _mem_put(c.offs, (c.cap + 1) * 8)
    _mem_put(c.vdata, c.vcap)
    free(c)


cdef _Col* _col_new(int what, int width, int nkids, int64_t cap) noexcept nogil:
    cdef _Col* c = <_Col*>calloc(1, sizeof(_Col))
    if c == NULL:
        return NULL
    if cap < 16:
        cap = 16
    c.what = what
    c.width = width
    c.cap = cap
    c.nkids = nkids
    if nkids:
        c.kids = <_Col**>calloc(nkids, sizeof(_Col*))
    if what == C_FIXED:
        c.data = <uint8_t*>_mem_get(cap * width)
    if what == C_VAR or what == C_LIST:
        c.offs = <int64_t*>_mem_get((cap + 1) * 8)
        if c.offs != NULL:
            c.offs[0] = 0
    if what == C_VAR:
        c.vcap = 256
        c.vdata = <uint8_t*>_mem_get(c.vcap)
    if ((nkids and c.kids == NULL) or (what == C_FIXED and c.data == NULL)
            or ((what == C_VAR or what == C_LIST) and c.offs == NULL) or (what == C_VAR and c.vdata == NULL)):
        _col_free(c)
        return NULL
    return c


cdef int _grow(_Col* c, int64_t need) noexcept nogil:
    cdef int64_t cap = c.cap * 2
    cdef void* p
    if cap < need:
        cap = need
    # the sizes stay what _col_free and _col_export compute from c.cap
    if c.valid != NULL:
        p = _mem_resize(c.valid, c.n, c.cap, cap)
        if p == NULL:
            return -1
        c.valid = <uint8_t*>p
    if c.what == C_FIXED:
        p = _mem_resize(c.data, c.n * c.width, c.cap * c.width, cap * c.width)
        if p == NULL:
            return -1
        c.data = <uint8_t*>p
    elif c.what != C_STRUCT:
        p = _mem_resize(c.offs, (c.n + 1) * 8, (c.cap + 1) * 8, (cap + 1) * 8)
        if p == NULL:
            return -1
        c.offs = <int64_t*>p
    c.cap = cap
    return 0


cdef int _valid_init(_Col* c) noexcept nogil:
    """Start tracking validity: every slot so far is valid."""
    c.valid = <uint8_t*>_mem_get(c.cap)
    if c.valid == NULL:
        return -1
    memset(c.valid, 1, c.n)
    return 0


cdef inline void _mark_valid(_Col* c) noexcept nogil:
    if c.valid != NULL:
        c.valid[c.n] = 1


cdef inline int _mark_null(_Col* c) noexcept nogil:
    if c.valid == NULL and _valid_init(c):
        return -1
    c.valid[c.n] = 0
    return 0


cdef inline int _reserve(_Col* c, int64_t k) noexcept nogil:
    if c.n + k <= c.cap:
        return 0
    return _grow(c, c.n + k)


cdef int _vgrow(_Col* c, int64_t need) noexcept nogil:
    cdef int64_t cap = c.vcap * 2
    cdef void* p
    if cap < need:
        cap = need
    # Once a column holds a megabyte, jump to the expected total (the input's
    # size): doubling from 256 bytes copied every value once more and touched
    # a fresh block at every step.
    if need > (1 << 20) and c.vhint > cap:
        cap = c.vhint
    p = _mem_resize(c.vdata, c.vlen, c.vcap, cap)
    if p == NULL:
        return -1
    c.vdata = <uint8_t*>p
    c.vcap = cap
    return 0


cdef void _set_vhint(_Col* c, int64_t hint) noexcept nogil:
    """Give every var-width column of a tree the expected total of its values."""
    cdef int k
    if c == NULL:
        return
    if c.what == C_VAR:
        c.vhint = hint
    for k in range(c.nkids):
        _set_vhint(c.kids[k], hint)


cdef inline int _vappend(_Col* c, const uint8_t* src, int64_t n) noexcept nogil:
    """Append one non-null var-width value (the slot is already reserved)."""
    if c.vlen + n > c.vcap and _vgrow(c, c.vlen + n):
        return -1
    if n:  # an empty value may come from, or go to, a NULL buffer: memcpy of it is undefined
        memcpy(c.vdata + c.vlen, src, n)
    c.vlen += n
    c.offs[c.n + 1] = c.vlen
    _mark_valid(c)
    c.n += 1
    return 0


cdef int _put_null(_Col* c) noexcept nogil:
    cdef int k
    if _reserve(c, 1):
        return -1
    if c.what == C_FIXED:
        memset(c.data + c.n * c.width, 0, c.width)
    elif c.what == C_VAR:
        c.offs[c.n + 1] = c.vlen
    elif c.what == C_LIST:
        c.offs[c.n + 1] = c.offs[c.n]
    else:
        for k in range(c.nkids):
            if _put_null(c.kids[k]):
                return -1
    if _mark_null(c):
        return -1
    c.n += 1
    return 0


cdef void _truncate(_Col* c, int64_t n) noexcept nogil:
    """Drop everything appended after slot n (rolls back a failed row)."""
    cdef int k
    c.n = n
    if c.what == C_VAR:
        c.vlen = c.offs[n]
    elif c.what == C_LIST:
        _truncate(c.kids[0], c.offs[n])
    elif c.what == C_STRUCT:
        for k in range(c.nkids):
            _truncate(c.kids[k], n)


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
    return _cmem(packed, (n + 7) >> 3)


cdef object _col_export(_Col* c):
    """(length, null count, validity bitmap or None, buffers, children); the blocks move to Python."""
    cdef int64_t n = c.n
    cdef int64_t nulls = _count_nulls(c.valid, n) if c.valid != NULL else 0
    cdef int k
    bitmap = _bits(c.valid, n) if nulls else None
    if c.what == C_FIXED:
        bufs = (_bits(c.data, n) if c.bits else _cmem(c.data, n * c.width, c.cap * c.width),)
        if not c.bits:
            c.data = NULL
    elif c.what == C_VAR:
        bufs = (_cmem(c.offs, (n + 1) * 8, (c.cap + 1) * 8), _cmem(c.vdata, c.vlen, c.vcap))
        c.offs = NULL
        c.vdata = NULL
    elif c.what == C_LIST:
        bufs = (_cmem(c.offs, (n + 1) * 8, (c.cap + 1) * 8),)
        c.offs = NULL
    else:
        bufs = ()
    kids = tuple([_col_export(c.kids[k]) for k in range(c.nkids)])
    return (n, nulls, bitmap, bufs, kids)


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


cdef _Col* _scalar_col(int kind, int64_t cap) except NULL:
    cdef int w = _kind_width(kind)
    cdef _Col* c = _col_new(C_FIXED if w else C_VAR, w, 0, cap)
    if c == NULL:
        raise MemoryError()
    c.bits = kind == K_BOOL
    return c


cdef _Col* _struct_cols(cls, int64_t cap, int64_t nested) except NULL:
    """The column tree of a struct class: one child per field of any version.

    ``cap`` slots for this level, ``nested`` for the elements of its arrays (a
    guess from the input size: growing by doubling copies, guessing costs
    only address space).
    """
    cdef list fields = list(cls._FIELDS)
    cdef _Col* c = _col_new(C_STRUCT, 0, len(fields), cap)
    cdef _Col* kid
    cdef int k
    if c == NULL:
        raise MemoryError()
    try:
        for k, f in enumerate(fields):
            if f.kind == K_ARRAY:
                kid = _col_new(C_LIST, 0, 1, cap)
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
        _col_free(c)
        raise
    return c


# ---------------------------------------------------------------------------
# per-version message programs (built from the engine's plans)

cdef enum:
    D_NULL = 0
    D_INT = 1
    D_FLOAT = 2
    D_BYTES = 3
    D_LIST = 4
    D_STRUCT = 5

cdef enum:
    E_OK = 0
    E_TRUNCATED = 1
    E_INVALID = 2
    E_MEMORY = 3
    E_NULL_ROW = 4
    E_API_KEY = 5
    E_VERSION = 6

cdef struct _Node

cdef struct _Op:
    int kind
    int elem
    int col
    bint nullable
    bint compact
    bint tagged
    bint fixed
    uint32_t tag
    _Node* sub
    int dkind
    int64_t dint
    double dfloat
    const uint8_t* dptr
    int64_t dlen

cdef struct _Node:
    int nf
    _Op* f
    int nt
    _Op* t
    int na
    int* absent
    bint flexible


cdef class _Program:
    """The plans of one message class, every version, as C structs."""

    cdef object cls
    cdef list keep
    cdef dict nodes
    cdef _Node* roots[64]
    cdef int error_code_col

    def __cinit__(self):
        self.keep = []
        self.nodes = {}
        self.error_code_col = -1

    cdef void* _alloc(self, Py_ssize_t size) except NULL:
        cdef _CMem m = _cmem(calloc(1, size if size > 0 else 1), size)
        self.keep.append(m)
        return m.ptr

    cdef int _fill(self, _Op* op, fp, tuple attrs) except -1:
        op.kind = fp.kind
        op.elem = fp.elem
        op.col = attrs.index(fp.attr)
        op.nullable = fp.nullable
        op.compact = fp.compact
        op.tagged = fp.tagged
        op.fixed = _kind_width(fp.kind) > 0 and fp.kind != K_ARRAY
        op.tag = fp.tag if fp.tagged else 0
        op.sub = self.node(fp.sub) if fp.sub is not None else NULL
        dk = fp.default_kind
        d = fp.default
        if dk == 1:
            op.dkind = D_LIST
        elif dk == 2:
            op.dkind = D_STRUCT
        elif d is None:
            op.dkind = D_NULL
        elif op.kind == K_FLOAT64:
            op.dkind = D_FLOAT
            op.dfloat = float(d)
        elif op.kind in (K_STRING, K_BYTES, K_RECORDS, K_UUID):
            raw = d.encode("utf-8") if isinstance(d, str) else (d.bytes if op.kind == K_UUID else bytes(d))
            self.keep.append(raw)
            op.dkind = D_BYTES
            op.dptr = <const uint8_t*>PyBytes_AS_STRING(raw)
            op.dlen = len(raw)
        elif op.kind == K_ARRAY or op.kind == K_STRUCT:
            raise AssertionError(f"default {d!r} for {fp.attr}")
        else:
            op.dkind = D_INT
            op.dint = int(d)
        return 0

    cdef _Node* node(self, plan) except NULL:
        cached = self.nodes.get(id(plan))
        if cached is not None:
            return <_Node*><uintptr_t>cached[1]
        cdef _Node* nd = <_Node*>self._alloc(sizeof(_Node))
        self.nodes[id(plan)] = (plan, <uintptr_t>nd)
        cdef tuple attrs = plan.cls._ATTRS
        fields = plan.fields
        tagged = plan.tagged
        absent = [a for a in plan.absent if not a.tagged]
        if len(tagged) > 64:
            raise ValueError(f"{plan.name}: more than 64 tagged fields")
        nd.flexible = plan.flexible
        nd.nf = len(fields)
        nd.f = <_Op*>self._alloc(nd.nf * sizeof(_Op))
        for k, fp in enumerate(fields):
            self._fill(&nd.f[k], fp, attrs)
        nd.nt = len(tagged)
        nd.t = <_Op*>self._alloc(nd.nt * sizeof(_Op))
        for k, fp in enumerate(tagged):
            self._fill(&nd.t[k], fp, attrs)
        nd.na = len(absent)
        nd.absent = <int*>self._alloc(nd.na * sizeof(int))
        for k, fp in enumerate(absent):
            nd.absent[k] = attrs.index(fp.attr)
        return nd


cdef dict _PROGRAMS = {}


cdef _Program _program(cls):
    cdef _Program prog = _PROGRAMS.get(cls)
    cdef int v
    if prog is not None:
        return prog
    prog = _Program.__new__(_Program)
    prog.cls = cls
    for v in range(64):
        prog.roots[v] = NULL
        if cls.supports(v):
            prog.roots[v] = prog.node(cls.plan(v))
    if "error_code" in cls._ATTRS:
        prog.error_code_col = cls._ATTRS.index("error_code")
    _PROGRAMS[cls] = prog
    return prog


# ---------------------------------------------------------------------------
# the decoding loop: one struct at a time, straight into the columns

cdef struct _Cur:
    const uint8_t* b
    Py_ssize_t pos
    Py_ssize_t end
    int err


cdef inline int _cur_fail(_Cur* c, int e) noexcept nogil:
    c.err = e
    return -1


cdef inline int _uvar(_Cur* c, uint32_t* out) noexcept nogil:
    cdef Py_ssize_t p = c.pos
    cdef int st = _uv32(c.b, &p, c.end, out)
    if st:
        return _cur_fail(c, E_TRUNCATED if st == 1 else E_INVALID)
    c.pos = p
    return 0


cdef int _put_default(_Op* op, _Col* col) noexcept nogil:
    cdef _Node* nd
    cdef uint8_t* d
    cdef int k
    if op.dkind == D_NULL:
        return _put_null(col)
    if _reserve(col, 1):
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
            if _put_null(col.kids[nd.absent[k]]):
                return -1
    elif op.dkind == D_BYTES:
        if col.what == C_FIXED:
            memcpy(col.data + col.n * col.width, op.dptr, col.width)
        else:
            return _vappend(col, op.dptr, op.dlen)
    elif op.dkind == D_FLOAT:
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
    _mark_valid(col)
    col.n += 1
    return 0


cdef inline bint _is_fixed(int kind) noexcept nogil:
    return kind != K_STRING and kind != K_BYTES and kind != K_RECORDS and kind != K_STRUCT and kind != K_ARRAY


cdef inline int _dec_fixed(_Cur* c, int kind, _Col* col) noexcept nogil:
    """A fixed-width value (ints, bool, float64, uuid) into its column."""
    cdef Py_ssize_t p = c.pos
    cdef Py_ssize_t left = c.end - p
    cdef uint8_t* d
    if col.n == col.cap and _grow(col, col.n + 1):
        return _cur_fail(c, E_MEMORY)
    d = col.data + col.n * col.width
    if kind == K_INT32:
        if left < 4:
            return _cur_fail(c, E_TRUNCATED)
        (<int32_t*>d)[0] = <int32_t>kp_ld32(c.b + p)
        c.pos = p + 4
    elif kind == K_INT16:
        if left < 2:
            return _cur_fail(c, E_TRUNCATED)
        (<int16_t*>d)[0] = <int16_t>kp_ld16(c.b + p)
        c.pos = p + 2
    elif kind == K_INT64:
        if left < 8:
            return _cur_fail(c, E_TRUNCATED)
        (<int64_t*>d)[0] = <int64_t>kp_ld64(c.b + p)
        c.pos = p + 8
    elif kind == K_INT8 or kind == K_BOOL:
        if left < 1:
            return _cur_fail(c, E_TRUNCATED)
        d[0] = c.b[p] if kind == K_INT8 else (c.b[p] != 0)
        c.pos = p + 1
    elif kind == K_UUID:
        if left < 16:
            return _cur_fail(c, E_TRUNCATED)
        memcpy(d, c.b + p, 16)
        c.pos = p + 16
    elif kind == K_UINT16:
        if left < 2:
            return _cur_fail(c, E_TRUNCATED)
        (<int32_t*>d)[0] = kp_ld16(c.b + p)
        c.pos = p + 2
    elif kind == K_UINT32:
        if left < 4:
            return _cur_fail(c, E_TRUNCATED)
        (<int64_t*>d)[0] = kp_ld32(c.b + p)
        c.pos = p + 4
    else:  # K_FLOAT64
        if left < 8:
            return _cur_fail(c, E_TRUNCATED)
        (<double*>d)[0] = kp_u64_to_f64(kp_ld64(c.b + p))
        c.pos = p + 8
    _mark_valid(col)
    col.n += 1
    return 0


cdef int _dec_var(_Cur* c, int kind, _Col* col, bint compact, bint nullable) noexcept nogil:
    """A string, bytes or records value into its column."""
    cdef Py_ssize_t p = c.pos
    cdef int64_t n
    cdef uint32_t u
    if _reserve(col, 1):
        return _cur_fail(c, E_MEMORY)
    if compact:
        if _uvar(c, &u):
            return -1
        n = <int64_t>u - 1
    elif kind == K_STRING:
        if c.end - p < 2:
            return _cur_fail(c, E_TRUNCATED)
        n = <int16_t>kp_ld16(c.b + p)
        c.pos = p + 2
    else:
        if c.end - p < 4:
            return _cur_fail(c, E_TRUNCATED)
        n = <int32_t>kp_ld32(c.b + p)
        c.pos = p + 4
    if n < 0:
        if n == -1 and nullable:
            col.offs[col.n + 1] = col.vlen
            if _mark_null(col):
                return _cur_fail(c, E_MEMORY)
            col.n += 1
            return 0
        return _cur_fail(c, E_INVALID)
    if kind == K_STRING and n > _MAX_STR:
        return _cur_fail(c, E_INVALID)
    if n > c.end - c.pos:
        return _cur_fail(c, E_TRUNCATED)
    if kind == K_STRING and not kp_utf8_ok(c.b + c.pos, n):
        return _cur_fail(c, E_INVALID)
    if _vappend(col, c.b + c.pos, n):
        return _cur_fail(c, E_MEMORY)
    c.pos += n
    return 0


cdef int _dec_value(_Cur* c, int kind, _Col* col, bint compact, bint nullable, _Node* sub, bint tagged) noexcept nogil:
    cdef uint32_t u
    if kind != K_STRUCT:
        if _is_fixed(kind):
            return _dec_fixed(c, kind, col)
        return _dec_var(c, kind, col, compact, nullable)
    if nullable:
        # presence marker: int8 (negative = null), or an unsigned varint when tagged (0 = null)
        if tagged:
            if _uvar(c, &u):
                return -1
            if u == 0:
                return _cur_fail(c, E_MEMORY) if _put_null(col) else 0
        else:
            if c.end - c.pos < 1:
                return _cur_fail(c, E_TRUNCATED)
            c.pos += 1
            if <int8_t>c.b[c.pos - 1] < 0:
                return _cur_fail(c, E_MEMORY) if _put_null(col) else 0
    return _dec_struct(c, sub, col)


cdef inline int _dec_array(_Cur* c, _Op* op, _Col* col) noexcept nogil:
    cdef Py_ssize_t p = c.pos
    cdef int64_t n, i
    cdef uint32_t u
    cdef _Col* kid = col.kids[0]
    cdef int32_t* out
    cdef const uint8_t* src
    cdef int elem = op.elem
    if op.compact:
        if _uvar(c, &u):
            return -1
        n = <int64_t>u - 1
    else:
        if c.end - p < 4:
            return _cur_fail(c, E_TRUNCATED)
        n = <int32_t>kp_ld32(c.b + p)
        c.pos = p + 4
    if n < 0:
        if n == -1 and op.nullable:
            return _cur_fail(c, E_MEMORY) if _put_null(col) else 0
        return _cur_fail(c, E_INVALID)
    # every element takes at least one byte: a count is bounded by what is left
    if n > c.end - c.pos:
        return _cur_fail(c, E_INVALID)
    if elem == K_INT32:
        if 4 * n > c.end - c.pos:
            return _cur_fail(c, E_TRUNCATED)
        if _reserve(kid, n):
            return _cur_fail(c, E_MEMORY)
        out = <int32_t*>kid.data + kid.n
        src = c.b + c.pos
        for i in range(n):
            out[i] = <int32_t>kp_ld32(src + 4 * i)
        if kid.valid != NULL:
            memset(kid.valid + kid.n, 1, n)
        kid.n += n
        c.pos += 4 * n
    elif elem == K_STRUCT:
        for i in range(n):
            if _dec_struct(c, op.sub, kid):
                return -1
    elif _is_fixed(elem):
        for i in range(n):
            if _dec_fixed(c, elem, kid):
                return -1
    else:
        for i in range(n):
            if _dec_var(c, elem, kid, op.compact, False):
                return -1
    if _reserve(col, 1):
        return _cur_fail(c, E_MEMORY)
    col.offs[col.n + 1] = kid.n
    _mark_valid(col)
    col.n += 1
    return 0


cdef inline int _dec_field(_Cur* c, _Op* op, _Col* col) noexcept nogil:
    if op.kind == K_ARRAY:
        return _dec_array(c, op, col)
    return _dec_value(c, op.kind, col, op.compact, op.nullable, op.sub, op.tagged)


cdef int _dec_struct(_Cur* c, _Node* nd, _Col* col) noexcept nogil:
    cdef int k, j
    cdef uint32_t count, tag, size, t
    cdef uint64_t seen = 0
    cdef Py_ssize_t stop, saved
    cdef _Op* op
    for k in range(nd.nf):
        op = &nd.f[k]
        if op.fixed:
            if _dec_fixed(c, op.kind, col.kids[op.col]):
                return -1
        elif _dec_field(c, op, col.kids[op.col]):
            return -1
    for k in range(nd.na):
        if _put_null(col.kids[nd.absent[k]]):
            return _cur_fail(c, E_MEMORY)
    if nd.flexible:
        if _uvar(c, &count):
            return -1
        if count > c.end - c.pos:
            return _cur_fail(c, E_INVALID)
        for t in range(count):
            if _uvar(c, &tag) or _uvar(c, &size):
                return -1
            if size > c.end - c.pos:
                return _cur_fail(c, E_TRUNCATED)
            j = -1
            for k in range(nd.nt):
                if nd.t[k].tag == tag:
                    j = k
                    break
            if j < 0:
                c.pos += size
                continue
            op = &nd.t[j]
            if seen >> j & 1:
                # a known tag twice: the last value wins, as in the object decoders
                # (its column's last slot is the earlier value of this struct)
                _truncate(col.kids[op.col], col.kids[op.col].n - 1)
            seen |= (<uint64_t>1) << j
            stop = c.pos + size
            saved = c.end
            c.end = stop
            if _dec_field(c, op, col.kids[op.col]):
                c.end = saved
                return -1
            c.end = saved
            if c.pos != stop:
                return _cur_fail(c, E_INVALID)
        for k in range(nd.nt):
            if not (seen >> k & 1):
                if _put_default(&nd.t[k], col.kids[nd.t[k].col]):
                    return _cur_fail(c, E_MEMORY)
    if _reserve(col, 1):
        return _cur_fail(c, E_MEMORY)
    _mark_valid(col)
    col.n += 1
    return 0


cdef inline int _skip_tags(_Cur* c) noexcept nogil:
    cdef uint32_t count, tag, size, t
    if _uvar(c, &count):
        return -1
    if count > c.end - c.pos:
        return _cur_fail(c, E_INVALID)
    for t in range(count):
        if _uvar(c, &tag) or _uvar(c, &size):
            return -1
        if size > c.end - c.pos:
            return _cur_fail(c, E_TRUNCATED)
        c.pos += size
    return 0


cdef inline int _skip_client_id(_Cur* c) noexcept nogil:
    cdef int64_t n
    if c.end - c.pos < 2:
        return _cur_fail(c, E_TRUNCATED)
    n = <int16_t>kp_ld16(c.b + c.pos)
    c.pos += 2
    if n < -1:
        return _cur_fail(c, E_INVALID)
    if n > 0:
        if n > c.end - c.pos:
            return _cur_fail(c, E_TRUNCATED)
        if not kp_utf8_ok(c.b + c.pos, n):
            return _cur_fail(c, E_INVALID)
        c.pos += n
    return 0


cdef void _msg_loop(const _Rows* rows, int api_key, const int32_t* versions, const uint8_t* vvalid,
                    const int8_t* hv, _Node** roots, _Col* root, uint8_t* status, int ec_col) noexcept nogil:
    # versions == NULL: request frames (version from the header); else response frames.
    cdef int64_t i, n
    cdef const uint8_t* p
    cdef _Cur c
    cdef int v, h, k
    cdef Py_ssize_t body
    for i in range(rows.n):
        c.err = E_OK
        if not _row(rows, i, &p, &n):
            c.err = E_NULL_ROW
        else:
            c.b = p
            c.end = n
            c.pos = 0
            if versions == NULL:
                if n < 4:
                    c.err = E_TRUNCATED
                elif <int16_t>kp_ld16(p) != api_key:
                    c.err = E_API_KEY
                else:
                    v = <int16_t>kp_ld16(p + 2)
                    if v < 0 or v > 63 or roots[v] == NULL:
                        c.err = E_VERSION
                    else:
                        h = hv[v]
                        c.pos = 4
                        if n < 8:
                            c.err = E_TRUNCATED
                        else:
                            c.pos = 8
                            if h >= 1:
                                _skip_client_id(&c)
                            if h >= 2 and c.err == E_OK:
                                _skip_tags(&c)
            else:
                v = versions[i]
                if (vvalid != NULL and not vvalid[i]) or v < 0 or v > 63 or roots[v] == NULL:
                    c.err = E_VERSION
                elif n < 4:
                    c.err = E_TRUNCATED
                else:
                    c.pos = 4
                    if hv[v] >= 1:
                        _skip_tags(&c)
            if c.err == E_OK:
                body = c.pos
                if _dec_struct(&c, roots[v], root) and versions != NULL and api_key == 18 and v > 0:
                    # KIP-511: a broker answers an ApiVersions version it does not
                    # know with a v0 body carrying UNSUPPORTED_VERSION (35).
                    _truncate(root, i)
                    c.err = E_OK
                    c.pos = body
                    c.end = n
                    if _dec_struct(&c, roots[0], root) == 0 and \
                            (<int16_t*>root.kids[ec_col].data)[i] != 35:
                        c.err = E_INVALID
        if c.err != E_OK:
            status[i] = c.err
            _truncate(root, i)
            for k in range(root.nkids):
                _put_null(root.kids[k])
            root.n = i
            _mark_valid(root)
            root.n = i + 1
        else:
            status[i] = 0


def arrow_messages(arr, int kind, cls, versions=None, vvalid=None):
    """Decode frames of one message class into the union column tree.

    ``versions`` (int32 ndarray, responses only) gives each row's version;
    request frames carry theirs.  Returns ``(status uint8 ndarray, tree)``.
    """
    cdef _RowsIn rin = _rows_in(arr, kind)
    cdef _Program prog = _program(cls)
    cdef int64_t n = rin.r.n
    cdef int api_key = cls.API_KEY
    cdef bint request = cls.KIND == "request"
    cdef int8_t[::1] hv = _header_versions(api_key, request)
    cdef const int32_t* vp = NULL
    cdef const uint8_t* vv = NULL
    cdef int32_t[::1] vmem
    cdef uint8_t[::1] vvmem
    if not request:
        vmem = versions
        vp = &vmem[0] if n else NULL
        if vvalid is not None:
            vvmem = vvalid
            vv = &vvmem[0] if n else NULL
    status = np.empty(n, dtype=np.uint8)
    cdef uint8_t[::1] st = status
    cdef uint8_t* stp = &st[0] if n else _EMPTY_BYTE
    cdef int64_t nbytes = arr.nbytes
    cdef _Col* root = _struct_cols(cls, n, min(max(nbytes // 32, 64), 1 << 16))
    cdef const int8_t* hvp = &hv[0]
    cdef int ec = prog.error_code_col
    if not request and vp == NULL:
        vp = <const int32_t*>_EMPTY_BYTE
    _set_vhint(root, nbytes)  # no column's values can outgrow the frames
    try:
        with nogil:
            _msg_loop(&rin.r, api_key, vp, vv, hvp, prog.roots, root, stp, ec)
        if (status == E_MEMORY).any():
            raise MemoryError()
        tree = _col_export(root)
    finally:
        _col_free(root)
    return status, tree


cdef dict _HV = {}


cdef object _header_versions(int api_key, bint request):
    """Header version of every version of an api key (int8[64]; -1 where unsupported)."""
    key = (api_key, request)
    got = _HV.get(key)
    if got is None:
        from kafkaproto._arrow_common import header_versions
        got = np.ascontiguousarray(header_versions(api_key, request), dtype=np.int8)
        _HV[key] = got
    return got


# ---------------------------------------------------------------------------
# request / response headers (a flat loop: the 10 M frames/s path)

cdef void _req_headers_loop(const _Rows* rows, const int8_t* hv, int nkeys, uint8_t* status, int16_t* key,
                            int16_t* ver, int32_t* corr, int32_t* hsize, _Col* cid) noexcept nogil:
    cdef int64_t i, n, m
    cdef const uint8_t* p
    cdef int k, v, h
    cdef _Cur c
    for i in range(rows.n):
        c.err = E_OK
        key[i] = 0
        ver[i] = 0
        corr[i] = 0
        hsize[i] = 0
        cid.n = i
        cid.offs[i + 1] = cid.vlen
        cid.valid[i] = 0
        if not _row(rows, i, &p, &n):
            status[i] = E_NULL_ROW
            continue
        if n < 4:
            status[i] = E_TRUNCATED
            continue
        k = <int16_t>kp_ld16(p)
        v = <int16_t>kp_ld16(p + 2)
        if k < 0 or k >= nkeys or hv[k * 64] == -2:
            status[i] = E_API_KEY
            continue
        if v < 0 or v > 63 or hv[k * 64 + v] < 0:
            status[i] = E_VERSION
            continue
        h = hv[k * 64 + v]
        if n < 8:
            status[i] = E_TRUNCATED
            continue
        c.b = p
        c.end = n
        c.pos = 8
        if h >= 1:
            if n < 10:
                status[i] = E_TRUNCATED
                continue
            m = <int16_t>kp_ld16(p + 8)
            c.pos = 10
            if m < -1:
                status[i] = E_INVALID
                continue
            if m >= 0:
                if m > n - 10:
                    status[i] = E_TRUNCATED
                    continue
                if not kp_utf8_ok(p + 10, m):
                    status[i] = E_INVALID
                    continue
                if _vappend(cid, p + 10, m):
                    status[i] = E_MEMORY
                    continue
                c.pos = 10 + m
        if h >= 2 and _skip_tags(&c):
            status[i] = c.err
            cid.vlen = cid.offs[i]
            cid.offs[i + 1] = cid.vlen
            cid.valid[i] = 0
            continue
        status[i] = 0
        key[i] = <int16_t>k
        ver[i] = <int16_t>v
        corr[i] = <int32_t>kp_ld32(p + 4)
        hsize[i] = <int32_t>c.pos
    cid.n = rows.n


def arrow_request_headers(arr, int kind, hv_table):
    """→ (status, api_key, api_version, correlation_id, header_size, client_id column)."""
    cdef _RowsIn rin = _rows_in(arr, kind)
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
    cdef _Col* cid = _col_new(C_VAR, 0, 0, n)
    if cid == NULL or _valid_init(cid):
        _col_free(cid)
        raise MemoryError()
    cdef const int8_t* hvp = &hv[0, 0]
    cdef int nkeys = hv.shape[0]
    try:
        if n:
            with nogil:
                _req_headers_loop(&rin.r, hvp, nkeys, &s_[0], &k_[0], &v_[0], &c_[0], &h_[0], cid)
        if (status == E_MEMORY).any():
            raise MemoryError()
        col = _col_export(cid)
    finally:
        _col_free(cid)
    return status, key, ver, corr, hsize, col


cdef void _resp_headers_loop(const _Rows* rows, const int8_t* hv, int nkeys, const int32_t* keys,
                             const int32_t* vers, const uint8_t* kvalid, uint8_t* status, int32_t* corr,
                             int32_t* hsize) noexcept nogil:
    cdef int64_t i, n
    cdef const uint8_t* p
    cdef int k, v, h
    cdef _Cur c
    for i in range(rows.n):
        corr[i] = 0
        hsize[i] = 0
        if not _row(rows, i, &p, &n):
            status[i] = E_NULL_ROW
            continue
        k = keys[i]
        v = vers[i]
        if not kvalid[i] or k < 0 or k >= nkeys or hv[k * 64] == -2:
            status[i] = E_API_KEY
            continue
        if v < 0 or v > 63 or hv[k * 64 + v] < 0:
            status[i] = E_VERSION
            continue
        h = hv[k * 64 + v]
        if n < 4:
            status[i] = E_TRUNCATED
            continue
        c.b = p
        c.end = n
        c.pos = 4
        c.err = E_OK
        if h >= 1 and _skip_tags(&c):
            status[i] = c.err
            continue
        status[i] = 0
        corr[i] = <int32_t>kp_ld32(p)
        hsize[i] = <int32_t>c.pos


def arrow_response_headers(arr, int kind, hv_table, keys, versions, kvalid):
    """→ (status, correlation_id, header_size); keys/versions are int32 arrays, kvalid uint8."""
    cdef _RowsIn rin = _rows_in(arr, kind)
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
    if n:
        with nogil:
            _resp_headers_loop(&rin.r, hvp, nkeys, &k_[0], &v_[0], &kv_[0], &s_[0], &c_[0], &h_[0])
    return status, corr, hsize


# ---------------------------------------------------------------------------
# splitting a stream into frames

cdef enum:
    # Views address their data through int32 offsets: a region (the input, or
    # the side buffer of frames that straddle chunks) is exposed as windows
    # that start every 1 GiB and are up to 2 GiB - 1 long, so any frame of at
    # most 1 GiB lies inside the window its first byte falls in.
    WIN_SHIFT = 30


cdef struct _Split:
    uint8_t* views      # 16 bytes per frame (binary_view), or NULL
    int64_t* offs       # n + 1 offsets (large_binary), or NULL
    uint8_t* out        # copied bodies (large_binary) / straddling frames (views)
    int64_t olen
    int64_t ocap
    int64_t n
    int64_t cap
    int64_t side_base   # index of the first side-buffer window
    uint8_t* carry      # bytes of an incomplete frame, across chunks
    int64_t clen
    int64_t ccap
    int64_t max_size
    int64_t bad_at      # stream offset of a rejected size prefix, or -1
    int32_t bad_size
    int64_t consumed    # stream offset just past the last complete frame


cdef int _split_reserve(_Split* s) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if s.n < s.cap:
        return 0
    cap = s.cap * 2 if s.cap else 1024
    if s.views != NULL:
        p = realloc(s.views, cap * 16)
        if p == NULL:
            return -1
        s.views = <uint8_t*>p
    else:
        p = realloc(s.offs, (cap + 1) * 8)
        if p == NULL:
            return -1
        s.offs = <int64_t*>p
    s.cap = cap
    return 0


cdef int _out_append(_Split* s, const uint8_t* src, int64_t n) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if s.olen + n > s.ocap:
        cap = s.ocap * 2
        if cap < s.olen + n:
            cap = s.olen + n
        p = realloc(s.out, cap)
        if p == NULL:
            return -1
        s.out = <uint8_t*>p
        s.ocap = cap
    if n:  # an empty frame may come from, or go to, a NULL buffer: memcpy of it is undefined
        memcpy(s.out + s.olen, src, n)
    s.olen += n
    return 0


cdef int _emit(_Split* s, const uint8_t* body, int64_t size, int64_t region, int64_t pos) noexcept nogil:
    """One frame: a view of (region window, offset), or a copy (large_binary / straddling)."""
    cdef uint8_t* v
    cdef int32_t L = <int32_t>size
    cdef int32_t bi, bo
    if _split_reserve(s):
        return -1
    if s.views == NULL:
        if _out_append(s, body, size):
            return -1
        s.offs[s.n + 1] = s.olen
        s.n += 1
        return 0
    v = s.views + 16 * s.n
    memset(v, 0, 16)
    memcpy(v, &L, 4)
    if size <= 12:
        if size:
            memcpy(v + 4, body, size)
    else:
        if region < 0:
            # straddles chunks: lives in the side buffer
            pos = s.olen
            if _out_append(s, body, size):
                return -1
            bi = <int32_t>(s.side_base + (pos >> WIN_SHIFT))
        else:
            bi = <int32_t>(region + (pos >> WIN_SHIFT))
        bo = <int32_t>(pos & ((<int64_t>1 << WIN_SHIFT) - 1))
        memcpy(v + 4, body, 4)
        memcpy(v + 8, &bi, 4)
        memcpy(v + 12, &bo, 4)
    s.n += 1
    return 0


cdef int _carry_append(_Split* s, const uint8_t* src, int64_t n) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if n == 0:
        return 0  # memcpy of nothing into a carry never allocated (NULL) is undefined in C
    if s.clen + n > s.ccap:
        cap = s.ccap * 2
        if cap < s.clen + n:
            cap = s.clen + n
        if cap < 256:
            cap = 256
        p = realloc(s.carry, cap)
        if p == NULL:
            return -1
        s.carry = <uint8_t*>p
        s.ccap = cap
    memcpy(s.carry + s.clen, src, n)
    s.clen += n
    return 0


cdef int _split_chunk(_Split* s, const uint8_t* b, int64_t n, int64_t region, int64_t base,
                      int64_t stream_at) noexcept nogil:
    """Frames of one chunk; ``base`` is the chunk's offset inside its region, ``stream_at`` in the stream."""
    cdef int64_t pos = 0
    cdef int64_t need
    cdef int32_t size
    if s.bad_at >= 0:
        return _carry_append(s, b, n)
    if s.clen:
        # finish the frame that started in an earlier chunk
        if s.clen < 4:
            need = 4 - s.clen
            if need > n:
                need = n
            if _carry_append(s, b, need):
                return -1
            pos = need
            if s.clen < 4:
                return 0
            size = <int32_t>kp_ld32(s.carry)
            if size < 0 or (s.max_size >= 0 and size > s.max_size):
                s.bad_at = s.consumed
                s.bad_size = size
                return _carry_append(s, b + pos, n - pos)
        size = <int32_t>kp_ld32(s.carry)
        need = 4 + <int64_t>size - s.clen
        if need > n - pos:
            return _carry_append(s, b + pos, n - pos)
        if _carry_append(s, b + pos, need):
            return -1
        pos += need
        if _emit(s, s.carry + 4, size, -1, 0):
            return -1
        s.consumed += s.clen
        s.clen = 0
    while pos + 4 <= n:
        size = <int32_t>kp_ld32(b + pos)
        if size < 0 or (s.max_size >= 0 and size > s.max_size):
            s.bad_at = stream_at + pos
            s.bad_size = size
            break
        if size > n - pos - 4:
            break
        if _emit(s, b + pos + 4, size, region, base + pos + 4):
            return -1
        pos += 4 + size
        s.consumed = stream_at + pos
    return _carry_append(s, b + pos, n - pos)


def arrow_split_frames(arr, int kind, int64_t max_frame_size, bint views):
    """Split a stream given as chunks (rows of ``arr``, nulls skipped) into frames.

    ``views``: binary_view rows pointing into the input (window buffers of
    region 0) and into a side buffer for frames that straddle chunks; else
    large_binary rows with copied bodies.  Returns a dict of buffers.
    """
    cdef _RowsIn rin = _rows_in(arr, kind)
    cdef _Split s
    cdef int64_t i, n, stream_at = 0, base, data_len = 0
    cdef const uint8_t* p
    cdef const uint8_t* data0
    cdef int rc = 0
    if kind == IN_VIEW:
        raise ValueError("split_frames reads binary or large_binary chunks")
    memset(&s, 0, sizeof(_Split))
    s.max_size = max_frame_size
    s.bad_at = -1
    s.ocap = 4096
    s.out = <uint8_t*>malloc(s.ocap)
    bufs = arr.buffers()
    if bufs[2] is not None:
        data_len = bufs[2].size
    # region 0 is the input's data buffer: 1 window per started GiB
    s.side_base = (data_len >> WIN_SHIFT) + 1
    if views:
        s.views = <uint8_t*>malloc(16 * 1024)
        s.cap = 1024
    else:
        s.offs = <int64_t*>malloc(8 * 1025)
        s.cap = 1024
        if s.offs != NULL:
            s.offs[0] = 0
    if s.out == NULL or (s.views == NULL and s.offs == NULL):
        free(s.out)
        free(s.views)
        free(s.offs)
        raise MemoryError()
    data0 = rin.r.data
    try:
        with nogil:
            for i in range(rin.r.n):
                if not _row(&rin.r, i, &p, &n):
                    continue
                base = p - data0
                rc = _split_chunk(&s, p, n, 0, base, stream_at)
                if rc:
                    break
                stream_at += n
        if rc:
            raise MemoryError()
        out = {
            "n": s.n,
            "views": _cmem(s.views, s.n * 16) if views else None,
            "offsets": None if views else _cmem(s.offs, (s.n + 1) * 8),
            "data": _cmem(s.out, s.olen),
            "side_base": s.side_base,
            "tail": PyBytes_FromStringAndSize(<const char*>s.carry, s.clen) if s.clen else b"",
            "consumed": s.consumed,
            "bad_at": s.bad_at,
            "bad_size": s.bad_size,
        }
        s.views = NULL
        s.offs = NULL
        s.out = NULL
    finally:
        free(s.views)
        free(s.offs)
        free(s.out)
        free(s.carry)
    return out


# ---------------------------------------------------------------------------
# records blobs → the columns of Spark's Kafka source
#
# Decompression goes through kafkaproto._compression, once per batch (or
# legacy wrapper); the records of a v2 batch are checked (in the order
# _check_v2 checks them) and written into the columns in one loop without the
# GIL.  Legacy (magic 0/1) message sets are walked here too, accepting and
# rejecting exactly what kafkaproto._records_legacy.decode_legacy does.
# Control records are checked and left out, as a Kafka consumer does.

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


cdef struct _RecCols:
    _Col* root
    _Col* c[RC_COUNT]      # NULL: column not asked for (parsed, not stored)


cdef inline int _rc_i64(_Col* c, int64_t v) noexcept nogil:
    if c == NULL:
        return 0
    if c.n == c.cap and _grow(c, c.n + 1):
        return -1
    (<int64_t*>c.data)[c.n] = v
    _mark_valid(c)
    c.n += 1
    return 0


cdef inline int _rc_i32(_Col* c, int32_t v) noexcept nogil:
    if c == NULL:
        return 0
    if c.n == c.cap and _grow(c, c.n + 1):
        return -1
    (<int32_t*>c.data)[c.n] = v
    _mark_valid(c)
    c.n += 1
    return 0


cdef inline int _rc_blob(_Col* c, const uint8_t* p, int32_t n) noexcept nogil:
    if c == NULL:
        return 0
    if _reserve(c, 1):
        return -1
    if n < 0:
        c.offs[c.n + 1] = c.vlen
        if _mark_null(c):
            return -1
        c.n += 1
        return 0
    return _vappend(c, p, n)


cdef inline int _blob_reserved(_Col* c, const uint8_t* p, int32_t n) noexcept nogil:
    """A key or value into a column with room for it already (see _records_v2)."""
    if n < 0:
        c.offs[c.n + 1] = c.vlen
        if _mark_null(c):
            return -1
    else:
        if n:  # (an empty key or value: see _vappend)
            memcpy(c.vdata + c.vlen, p, n)
        c.vlen += n
        c.offs[c.n + 1] = c.vlen
        _mark_valid(c)
    c.n += 1
    return 0


cdef inline int _rc_varint(const uint8_t* b, Py_ssize_t* pos, Py_ssize_t end, int32_t* out) noexcept nogil:
    cdef uint32_t u
    cdef int st = _uv32(b, pos, end, &u)
    if st == 0:
        out[0] = _unzig32(u)
    return st


cdef inline int _rc_varlong(const uint8_t* b, Py_ssize_t* pos, Py_ssize_t end, int64_t* out) noexcept nogil:
    cdef uint64_t u
    cdef Py_ssize_t p = pos[0]
    cdef int st
    if p < end and b[p] < 0x80:
        out[0] = _unzig64(b[p])
        pos[0] = p + 1
        return 0
    st = _uv64(b, pos, end, &u)
    if st == 0:
        out[0] = _unzig64(u)
    return st


cdef int _reserve_rows(_RecCols* rc, int64_t count, int64_t nbytes) noexcept nogil:
    """Room for ``count`` records whose keys and values take at most ``nbytes``
    (the batch's bytes: a record cannot hold more than its batch)."""
    cdef int k
    for k in range(RC_COUNT):
        if rc.c[k] != NULL and k != RC_HEADERS:
            if _reserve(rc.c[k], count):
                return -1
            if rc.c[k].what == C_VAR and rc.c[k].vlen + nbytes > rc.c[k].vcap and \
                    _vgrow(rc.c[k], rc.c[k].vlen + nbytes):
                return -1
    return 0


cdef int _records_v2(const uint8_t* b, Py_ssize_t pos, Py_ssize_t end, int32_t count, int64_t base_offset,
                     int64_t base_ts, int64_t max_ts, int attrs, int64_t row, _RecCols* rc) noexcept nogil:
    """The records of one v2 batch into the columns: 0, -1 (malformed) or -2 (no memory)."""
    cdef int32_t i, j, length, klen, vlen, hcount, odelta
    cdef int32_t hk = 0, hv = 0
    cdef Py_ssize_t rend, kpos, vpos, hpos
    cdef int64_t ts, tsd
    cdef int32_t ts_type = 1 if attrs & 0x08 else 0
    cdef bint control = attrs & 0x20
    cdef _Col* hcol = rc.c[RC_HEADERS]
    cdef _Col* hstruct = hcol.kids[0] if hcol != NULL else NULL
    cdef _Col* kc = rc.c[RC_KEY]
    cdef _Col* vc = rc.c[RC_VALUE]
    cdef _Col* oc = rc.c[RC_OFFSET]
    cdef _Col* tc = rc.c[RC_TIMESTAMP]
    cdef _Col* yc = rc.c[RC_TS_TYPE]
    cdef _Col* rwc = rc.c[RC_ROW]
    # room for the whole batch up front: keys and values take at most its bytes
    if _reserve_rows(rc, count, end - pos):
        return -2
    for i in range(count):
        if _rc_varint(b, &pos, end, &length) or length < 0 or length > end - pos:
            return -1
        rend = pos + length
        if pos >= rend:
            return -1
        pos += 1  # attributes
        if _rc_varlong(b, &pos, rend, &tsd):
            return -1
        if _rc_varint(b, &pos, rend, &odelta):
            return -1
        if _rc_varint(b, &pos, rend, &klen) or klen < -1 or klen > rend - pos:
            return -1
        kpos = pos
        if klen > 0:
            pos += klen
        if _rc_varint(b, &pos, rend, &vlen) or vlen < -1 or vlen > rend - pos:
            return -1
        vpos = pos
        if vlen > 0:
            pos += vlen
        if _rc_varint(b, &pos, rend, &hcount) or hcount < 0 or hcount > rend - pos:
            return -1
        hpos = pos
        for j in range(hcount):
            if _rc_varint(b, &pos, rend, &hk) or hk < 0 or hk > rend - pos:
                return -1
            if not kp_utf8_ok(b + pos, hk):
                return -1
            pos += hk
            if _rc_varint(b, &pos, rend, &hv) or hv < -1 or hv > rend - pos:
                return -1
            if hv > 0:
                pos += hv
        if pos != rend:
            return -1
        if control:
            # as kafkaproto._records_common.control_record checks it
            if klen < 4:
                return -1
            hk = <int16_t>kp_ld16(b + kpos + 2)
            if (hk == 0 or hk == 1) and vlen < 6:
                return -1
            continue
        # the record is sound: store it (room reserved above)
        ts = max_ts if ts_type else _wadd(base_ts, tsd)
        if kc != NULL and _blob_reserved(kc, b + kpos, klen):
            return -2
        if vc != NULL and _blob_reserved(vc, b + vpos, vlen):
            return -2
        # (error rows before may have started a validity array: _mark_valid)
        if oc != NULL:
            (<int64_t*>oc.data)[oc.n] = _wadd(base_offset, odelta)
            _mark_valid(oc)
            oc.n += 1
        if yc != NULL:
            (<int32_t*>yc.data)[yc.n] = ts_type
            _mark_valid(yc)
            yc.n += 1
        (<int64_t*>rwc.data)[rwc.n] = row
        rwc.n += 1
        if tc != NULL:
            if -_US_LIMIT <= ts <= _US_LIMIT:
                (<int64_t*>tc.data)[tc.n] = ts * 1000
                _mark_valid(tc)
            else:
                (<int64_t*>tc.data)[tc.n] = 0
                if _mark_null(tc):
                    return -2
            tc.n += 1
        if hcol != NULL:
            if _reserve(hcol, 1):
                return -2
            if hcount == 0:
                hcol.offs[hcol.n + 1] = hcol.offs[hcol.n]
                if _mark_null(hcol):
                    return -2
                hcol.n += 1
            else:
                pos = hpos
                for j in range(hcount):
                    _rc_varint(b, &pos, rend, &hk)
                    if _rc_blob(hstruct.kids[0], b + pos, hk):
                        return -2
                    pos += hk
                    _rc_varint(b, &pos, rend, &hv)
                    if _rc_blob(hstruct.kids[1], b + pos, hv):
                        return -2
                    if hv > 0:
                        pos += hv
                    if _reserve(hstruct, 1):
                        return -2
                    _mark_valid(hstruct)
                    hstruct.n += 1
                hcol.offs[hcol.n + 1] = hstruct.n
                _mark_valid(hcol)
                hcol.n += 1
        pos = rend
    if pos != end:
        return -1
    return 0


cdef struct _LMsg:
    int64_t offset
    int32_t size
    int magic
    int attrs
    int64_t ts
    Py_ssize_t kpos
    Py_ssize_t vpos
    int32_t klen
    int32_t vlen


cdef int _legacy_msg(const uint8_t* b, Py_ssize_t pos, bint check_crc, _LMsg* m) noexcept nogil:
    """The legacy message at ``pos`` (its 12 + size bytes there, size >= 14): 0, or
    -1 where kafkaproto._records_legacy._message raises."""
    cdef int32_t size = <int32_t>kp_ld32(b + pos + 8)
    cdef Py_ssize_t mend = pos + 12 + size
    cdef Py_ssize_t q = pos + 18
    cdef int32_t n
    cdef int magic = <int8_t>b[pos + 16]
    if magic != 0 and magic != 1:
        return -1
    if size < (22 if magic else 14):
        return -1
    if check_crc and kp_crc32(b + pos + 16, mend - pos - 16) != kp_ld32(b + pos + 12):
        return -1
    m.offset = <int64_t>kp_ld64(b + pos)
    m.size = size
    m.magic = magic
    m.attrs = <int8_t>b[pos + 17]
    m.ts = -1
    if magic == 1:
        m.ts = <int64_t>kp_ld64(b + q)
        q += 8
    # (the minimum size leaves room for both length fields)
    n = <int32_t>kp_ld32(b + q)
    q += 4
    if n < -1 or n > mend - q:
        return -1
    m.kpos = q
    m.klen = n
    if n > 0:
        q += n
    n = <int32_t>kp_ld32(b + q) if mend - q >= 4 else -2
    q += 4
    if n < -1 or n > mend - q:
        return -1
    m.vpos = q
    m.vlen = n
    if n > 0:
        q += n
    if q != mend:
        return -1
    return 0


cdef int _legacy_row(_RecCols* rc, const uint8_t* b, _LMsg* m, int64_t offset, int64_t ts, int32_t ts_type,
                     int64_t row) noexcept nogil:
    """One legacy record into the columns (room reserved): 0, or -1 (no memory)."""
    cdef _Col* c
    if rc.c[RC_KEY] != NULL and _blob_reserved(rc.c[RC_KEY], b + m.kpos, m.klen):
        return -1
    if rc.c[RC_VALUE] != NULL and _blob_reserved(rc.c[RC_VALUE], b + m.vpos, m.vlen):
        return -1
    c = rc.c[RC_OFFSET]
    if c != NULL:
        (<int64_t*>c.data)[c.n] = offset
        _mark_valid(c)
        c.n += 1
    c = rc.c[RC_TS_TYPE]
    if c != NULL:
        (<int32_t*>c.data)[c.n] = ts_type
        _mark_valid(c)
        c.n += 1
    c = rc.c[RC_ROW]
    (<int64_t*>c.data)[c.n] = row
    c.n += 1
    c = rc.c[RC_TIMESTAMP]
    if c != NULL:
        if -_US_LIMIT <= ts <= _US_LIMIT:
            (<int64_t*>c.data)[c.n] = ts * 1000
            _mark_valid(c)
        else:
            (<int64_t*>c.data)[c.n] = 0
            if _mark_null(c):
                return -1
        c.n += 1
    # legacy messages have no headers
    if rc.c[RC_HEADERS] != NULL and _put_null(rc.c[RC_HEADERS]):
        return -1
    return 0


cdef int _legacy_inner(const uint8_t* b, Py_ssize_t n, _LMsg* w, int32_t ts_type, bint check_crc, int64_t row,
                       _RecCols* rc) noexcept nogil:
    """A compressed wrapper's inner message set (decompressed) into the columns: 0,
    -1 (malformed, as decode_legacy rejects it) or -2 (no memory)."""
    cdef Py_ssize_t q = 0
    cdef int32_t isize
    cdef int64_t count = 0, last = 0, ts
    cdef uint64_t shift = 0
    cdef _LMsg m
    # check everything first: the offsets need the last inner one
    while q < n:
        if n - q < 12:
            return -1
        isize = <int32_t>kp_ld32(b + q + 8)
        if isize < 14 or isize > n - q - 12:
            return -1
        if _legacy_msg(b, q, check_crc, &m) or m.magic != w.magic or m.attrs & 0x07:
            return -1
        last = m.offset
        count += 1
        q += 12 + isize
    if count == 0:
        return -1
    if w.magic == 1 and w.offset != 0:  # 0: produce data from some librdkafka versions (relative as is)
        if w.offset < last:
            return -1
        shift = <uint64_t>w.offset - <uint64_t>last
    if _reserve_rows(rc, count, n):
        return -2
    q = 0
    while q < n:
        _legacy_msg(b, q, False, &m)
        ts = w.ts if w.magic == 1 and ts_type == 1 else m.ts
        if _legacy_row(rc, b, &m, <int64_t>(<uint64_t>m.offset + shift), ts, ts_type, row):
            return -2
        q += 12 + m.size
    return 0


cdef int _records_legacy(const uint8_t* p, Py_ssize_t pos, object mv, bint check_crc, object limit, int64_t row,
                         _RecCols* rc) except -1:
    """One top-level legacy message (12 + size bytes at ``pos``, size >= 14) into the
    columns: 0, or 1 where kafkaproto._records_legacy.decode_legacy raises."""
    cdef _LMsg w
    cdef int codec, st
    cdef int32_t ts_type
    cdef Py_buffer view
    if _legacy_msg(p, pos, check_crc, &w):
        return 1
    codec = w.attrs & 0x07
    ts_type = -1 if w.magic == 0 else (1 if w.attrs & 0x08 else 0)
    if codec == 0:
        if _reserve_rows(rc, 1, w.size) or _legacy_row(rc, p, &w, w.offset, w.ts, ts_type, row):
            raise MemoryError()
        return 0
    if codec > 3 or w.vlen < 0:
        return 1
    try:
        data = _decompress(codec, mv[w.vpos:w.vpos + w.vlen], w.magic, limit, w.vpos)
    except KafkaProtocolError:
        return 1
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            st = _legacy_inner(<const uint8_t*>view.buf, view.len, &w, ts_type, check_crc, row, rc)
    finally:
        PyBuffer_Release(&view)
    if st == -2:
        raise MemoryError()
    return 1 if st else 0


cdef int _records_error_row(_RecCols* rc, int64_t row) except -1:
    cdef int k
    for k in range(RC_COUNT):
        if rc.c[k] == NULL:
            continue
        if k == RC_ROW:
            _rc_i64(rc.c[k], row)
        elif _put_null(rc.c[k]):
            raise MemoryError()
    return 0


cdef bint _records_blob(const uint8_t* p, int64_t n, int64_t row, bint check_crc, object limit,
                        _RecCols* rc) except -1:
    """Every batch of one blob into the columns; False when the blob is malformed."""
    cdef Py_ssize_t pos = 0, end, left
    cdef int32_t size, count
    cdef int magic, attrs, codec, st
    cdef int64_t base_offset, base_ts, max_ts
    cdef const uint8_t* rb
    cdef Py_ssize_t rstart, rend
    cdef Py_buffer view
    mv = PyMemoryView_FromMemory(<char*>p, n, PyBUF_READ)
    while pos < n:
        left = n - pos
        if left < 12:
            return True  # a partial batch at the end: normal in a Fetch response
        size = <int32_t>kp_ld32(p + pos + 8)
        if size < 14:
            return False
        if size > left - 12:
            return True
        magic = p[pos + 16]
        end = pos + 12 + size
        if magic < 2:
            if _records_legacy(p, pos, mv, check_crc, limit, row, rc):
                return False
        elif magic == 2:
            if size < 49:
                return False
            base_offset = <int64_t>kp_ld64(p + pos)
            attrs = <int16_t>kp_ld16(p + pos + 21)
            base_ts = <int64_t>kp_ld64(p + pos + 27)
            max_ts = <int64_t>kp_ld64(p + pos + 35)
            count = <int32_t>kp_ld32(p + pos + 57)
            if check_crc and _crc32c(mv[pos + 21:end]) != kp_ld32(p + pos + 17):
                return False
            codec = attrs & 0x07
            if codec > 4 or count < 0:
                return False
            data = None
            if codec == 0:
                rb = p
                rstart = pos + 61
                rend = end
            else:
                try:
                    data = _decompress(codec, mv[pos + 61:end], 2, limit, pos + 61)
                except KafkaProtocolError:
                    return False
                PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
                rb = <const uint8_t*>view.buf
                rstart = 0
                rend = view.len
            if count > rend - rstart:
                st = -1
            else:
                with nogil:
                    st = _records_v2(rb, rstart, rend, count, base_offset, base_ts, max_ts, attrs, row, rc)
            if data is not None:
                PyBuffer_Release(&view)
            if st == -2:
                raise MemoryError()
            if st:
                return False
        else:
            return False
        pos = end
    return True


def arrow_records(arr, int kind, bint check_crc, max_decompressed_size, want):
    """Decode every records blob of ``arr`` into the Spark-shaped columns.

    ``want``: 7 flags (key, value, offset, timestamp, timestampType, headers,
    row) telling which columns to fill.  Returns ``(status, tree)``: status 0
    for a blob decoded, else 1 (one row of nulls stands for it); the tree's
    children are the asked-for columns in that order.
    """
    cdef _RowsIn rin = _rows_in(arr, kind)
    cdef int64_t n = rin.r.n, i, blen
    cdef const uint8_t* p
    cdef _RecCols rc
    cdef _Col* c
    cdef int k, m = 0
    cdef int64_t cap = min(max(arr.nbytes // 64, 64), 1 << 20)
    wanted = [bool(w) for w in want]
    if not wanted[RC_ROW]:
        raise ValueError("the row column is always filled")
    rc.root = _col_new(C_STRUCT, 0, sum(wanted), 16)
    if rc.root == NULL:
        raise MemoryError()
    status = np.zeros(n, dtype=np.uint8)
    try:
        for k in range(RC_COUNT):
            rc.c[k] = NULL
            if not wanted[k]:
                continue
            if k == RC_KEY or k == RC_VALUE:
                c = _col_new(C_VAR, 0, 0, cap)
            elif k == RC_HEADERS:
                c = _col_new(C_LIST, 0, 1, cap)
            else:
                c = _col_new(C_FIXED, 4 if k == RC_TS_TYPE else 8, 0, cap)
            if c == NULL:
                raise MemoryError()
            rc.root.kids[m] = rc.c[k] = c
            m += 1
            if k == RC_HEADERS:
                # list<struct<key: string, value: binary>>
                c.kids[0] = _col_new(C_STRUCT, 0, 2, 64)
                if c.kids[0] == NULL:
                    raise MemoryError()
                c.kids[0].kids[0] = _col_new(C_VAR, 0, 0, 64)
                c.kids[0].kids[1] = _col_new(C_VAR, 0, 0, 64)
                if c.kids[0].kids[0] == NULL or c.kids[0].kids[1] == NULL:
                    raise MemoryError()
        for i in range(n):
            if not _row(&rin.r, i, &p, &blen) or not _records_blob(p, blen, i, check_crc, max_decompressed_size, &rc):
                status[i] = 1
                # roll the blob's records back; one row of nulls stands for it
                for k in range(RC_COUNT):
                    if rc.c[k] != NULL:
                        _truncate(rc.c[k], rc.root.n)
                _records_error_row(&rc, i)
            rc.root.n = rc.c[RC_ROW].n
        tree = _col_export(rc.root)
    finally:
        _col_free(rc.root)
    return status, tree
