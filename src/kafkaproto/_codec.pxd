# C-level interface of kafkaproto._codec (src/_codec.pyx) for the other compiled
# modules: the Reader and Writer classes, the CRC-32 of legacy messages, the
# exception of a cursor's failure record, UUID construction.

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from kafkaproto._wire cimport Cur, _uvsize


cdef class Reader:
    cdef Py_buffer _view
    cdef bint _has_view
    cdef Cur c
    cdef object _source
    cdef object _mv

    cdef Py_ssize_t _take(self, Py_ssize_t n, int what, Py_ssize_t at) except -1
    cdef uint32_t _u32v(self, int what) except? 0xFFFFFFFF
    cdef uint64_t _u64v(self, int what) except? 0xFFFFFFFFFFFFFFFF
    cdef object _str_body(self, int what, Py_ssize_t start, int64_t n, bint nullable)
    cdef object _bytes_body(self, int what, Py_ssize_t start, int64_t n, bint nullable)
    cdef int64_t _count(self, int what, Py_ssize_t start, int64_t n, bint nullable) except? -2
    cpdef int read_int8(self) except? -200
    cpdef int read_int16(self) except? -70000
    cpdef int read_int32(self) except? -1
    cpdef int64_t read_int64(self) except? -1
    cpdef int read_uint16(self) except? -1
    cpdef uint32_t read_uint32(self) except? 0xFFFFFFFF
    cpdef double read_float64(self) except? -1.0
    cpdef bint read_bool(self) except? -1
    cpdef object read_uuid(self)
    cpdef uint32_t read_uvarint(self) except? 0xFFFFFFFF
    cpdef int read_varint(self) except? -1
    cpdef int64_t read_varlong(self) except? -1
    cpdef object read_string(self, bint nullable=*)
    cpdef object read_compact_string(self, bint nullable=*)
    cpdef object read_bytes(self, bint nullable=*)
    cpdef object read_compact_bytes(self, bint nullable=*)
    cpdef int64_t read_array_length(self, bint nullable=*) except? -2
    cpdef int64_t read_compact_array_length(self, bint nullable=*) except? -2
    cpdef list read_tagged_fields(self)
    cpdef bytes read_raw(self, Py_ssize_t n)
    cpdef object read_view(self, Py_ssize_t n)
    cpdef skip(self, Py_ssize_t n)


# Writer modes (see the class): growable, counting (the sizing pass), fixed
# (over a sized bytes object or a caller's buffer).
cdef enum:
    WM_GROW = 0
    WM_COUNT = 1
    WM_FIXED = 2


cdef class Writer:
    cdef unsigned char* buf
    cdef Py_ssize_t length      # bytes written into buf (counting: bytes counted)
    cdef Py_ssize_t cap         # room in buf; -1 while counting, so every write takes _slow
    cdef Py_ssize_t scap        # counting: size of the scratch buffer buf
    cdef int mode
    cdef bint keep_blobs
    cdef list cuts              # keep_blobs: [(offset in buf, blob)]
    cdef Py_ssize_t n_external  # bytes of blobs kept by reference (counting: blob bytes counted)
    cdef object target          # fixed: the bytes object or caller's buffer written into
    cdef Py_buffer tview
    cdef bint has_tview

    cdef unsigned char* _slow(self, Py_ssize_t n) except NULL
    cdef int _write_pieces(self, list_or_tuple, bint compact) except -1

    cdef inline unsigned char* _reserve(self, Py_ssize_t n) except NULL:
        """Room for ``n`` more bytes → where they go (growth, counting and
        the end of a fixed buffer are handled out of line, in _slow)."""
        cdef Py_ssize_t need = self.length + n
        if need > self.cap:
            return self._slow(n)
        cdef unsigned char* p = self.buf + self.length
        self.length = need
        return p

    cdef inline int _put_uv(self, uint64_t u) except -1:
        cdef unsigned char* p = self._reserve(_uvsize(u))
        while u >= 0x80:
            p[0] = <unsigned char>((u & 0x7F) | 0x80)
            u >>= 7
            p += 1
        p[0] = <unsigned char>u
        return 0

    cdef inline int _put(self, const void* data, Py_ssize_t n) except -1:
        if self.cap < 0:  # counting
            self.length += n
            return 0
        cdef unsigned char* p = self._reserve(n)
        memcpy(p, data, n)
        return 0

    cdef int _put_buffer(self, object data, str what) except -1
    cpdef bytes getvalue(self)
    cpdef list parts(self)
    cpdef clear(self)
    cpdef set_int32(self, Py_ssize_t at, v)
    cpdef write_blob(self, v, bint compact, bint nullable=*)
    cpdef write_int8(self, v)
    cpdef write_int16(self, v)
    cpdef write_int32(self, v)
    cpdef write_int64(self, v)
    cpdef write_uint16(self, v)
    cpdef write_uint32(self, v)
    cpdef write_float64(self, v)
    cpdef write_bool(self, v)
    cpdef write_uuid(self, v)
    cpdef write_uvarint(self, v)
    cpdef write_varint(self, v)
    cpdef write_varlong(self, v)
    cpdef write_string(self, v)
    cpdef write_compact_string(self, v)
    cpdef write_bytes(self, v)
    cpdef write_compact_bytes(self, v)
    cpdef write_array_length(self, n)
    cpdef write_compact_array_length(self, n)
    cpdef write_tagged_fields(self, fields)
    cpdef write_raw(self, data)


cdef object cur_error(Cur* c)
cdef int64_t as_int(object v, str what, int64_t lo, int64_t hi) except? -1
cdef object make_uuid(const unsigned char* p)
cdef list tags_list(Cur* c)
cdef uint32_t crc32_of(const unsigned char* p, Py_ssize_t n) noexcept nogil
cdef object frame_size_error(int32_t size, int64_t max_size, Py_ssize_t at)
