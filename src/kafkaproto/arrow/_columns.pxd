# Column memory for the compiled Arrow decoders (kafkaproto.arrow._columns):
# growable C columns (fixed-width, variable-width, list, struct) that the
# loops fill without the GIL, handed to pyarrow through the Arrow C data
# interface (ArrowArray structs whose buffers are the columns' own blocks,
# freed by their release callback: one import per table or column), or as
# buffer-protocol blocks (col_export: the twins' column trees); and the rows
# of an input binary / large_binary / binary_view array.  No pyarrow here and
# no Arrow C++ linked.

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

cdef enum:
    # what a column holds
    C_FIXED = 0
    C_VAR = 1
    C_STRUCT = 2
    C_LIST = 3

cdef enum:
    # input row layouts
    IN_BINARY = 0
    IN_LARGE = 1
    IN_VIEW = 2

cdef struct Col:
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
    int64_t vhint       # expected total value bytes (0: none); see col_vgrow
    Col** kids
    int nkids
    bint bits           # bool values: bit-packed on export

# The Arrow C data interface's array (arrow/c/abi.h): an ABI, stable since Arrow 1.0
cdef struct ArrowArray:
    int64_t length
    int64_t null_count
    int64_t offset
    int64_t n_buffers
    int64_t n_children
    const void** buffers
    ArrowArray** children
    ArrowArray* dictionary
    void (*release)(ArrowArray*) noexcept nogil
    void* private_data

cdef struct Rows:
    int64_t n
    int64_t off
    const uint8_t* valid
    const int32_t* off32
    const int64_t* off64
    const uint8_t* data
    const uint8_t* views
    const uint8_t** vbufs


cdef class CMem:
    cdef char* ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t alloc    # the mem_get size, or -1 for a plain malloc'd block
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]


cdef class RowsIn:
    cdef Rows r
    cdef object keep
    cdef const uint8_t** vb


cdef class IntsIn:
    # an int argument of a decoder (a value, or a column with one per row) as n
    # int32 values within the argument's range (-1 where outside it) and 0/1 validity
    cdef int32_t* v
    cdef uint8_t* ok
    cdef int64_t n


cdef void* mem_get(size_t size) noexcept nogil
cdef void mem_put(void* p, size_t size) noexcept nogil
cdef void* mem_resize(void* p, size_t used, size_t old, size_t new) noexcept nogil
cdef CMem cmem(void* ptr, Py_ssize_t size, Py_ssize_t alloc=*)
cdef RowsIn rows_in(arr, int kind)
cdef int64_t rows_bytes(const Rows* r) noexcept nogil
cdef void col_free(Col* c) noexcept nogil
cdef Col* col_new(int what, int width, int nkids, int64_t cap) noexcept nogil
cdef int col_grow(Col* c, int64_t need) noexcept nogil
cdef int col_valid_init(Col* c) noexcept nogil
cdef int col_vgrow(Col* c, int64_t need) noexcept nogil
cdef void col_set_vhint(Col* c, int64_t hint) noexcept nogil
cdef int col_put_null(Col* c) noexcept nogil
cdef void col_truncate(Col* c, int64_t n) noexcept nogil
cdef object col_export(Col* c)
cdef int aa_init(ArrowArray* a, int64_t n, int64_t nkids) noexcept nogil
cdef void aa_release(ArrowArray* a) noexcept nogil
cdef void aa_set(ArrowArray* a, int k, void* block, int64_t alloc) noexcept nogil
cdef int col_to_c(Col* c, ArrowArray* a) noexcept nogil
cdef int aa_nulls(ArrowArray* a, int64_t n, int nbuf, int width) noexcept nogil
cdef int aa_strings(ArrowArray* a, int64_t n, const int64_t* rows, list texts) except -1
cdef int aa_errors(ArrowArray* a, int64_t n, const int64_t* rows, list texts) except -1
cdef int aa_fixed(ArrowArray* a, int64_t n, void* block, const uint8_t* status, int64_t failed) noexcept nogil
cdef IntsIn ints_in(values, int64_t n, str what, int64_t least, int64_t most, dict int_types, fallback)

cdef inline bint row_at(const Rows* r, int64_t i, const uint8_t** p, int64_t* n) noexcept nogil:
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


cdef inline void col_mark_valid(Col* c) noexcept nogil:
    if c.valid != NULL:
        c.valid[c.n] = 1


cdef inline int col_mark_null(Col* c) noexcept nogil:
    if c.valid == NULL and col_valid_init(c):
        return -1
    c.valid[c.n] = 0
    return 0


cdef inline int col_reserve(Col* c, int64_t k) noexcept nogil:
    if c.n + k <= c.cap:
        return 0
    return col_grow(c, c.n + k)


cdef inline int col_vappend(Col* c, const uint8_t* src, int64_t n) noexcept nogil:
    """Append one non-null var-width value (the slot is already reserved)."""
    if c.vlen + n > c.vcap and col_vgrow(c, c.vlen + n):
        return -1
    if n:  # an empty value may come from, or go to, a NULL buffer: memcpy of it is undefined
        memcpy(c.vdata + c.vlen, src, n)
    c.vlen += n
    c.offs[c.n + 1] = c.vlen
    col_mark_valid(c)
    c.n += 1
    return 0
