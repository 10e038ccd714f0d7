# cython: language_level=3
"""Compiled core of kafkaproto (built as ``kafkaproto._codec``).

Hot primitives over the buffer protocol, frame splitting and header codecs.
Its twin, ``kafkaproto._codec_py``, has the same names, behaviour and error
messages; the test-suite checks that the two agree.

Integers are read with byte loads + shifts (compilers turn them into a load
and a byte swap), never through unaligned pointer casts.
"""

from cpython.buffer cimport (
    PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE,
)
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.unicode cimport PyUnicode_DecodeUTF8
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_st16, kp_st32, kp_st64, kp_u64_to_f64, kp_f64_to_u64, kp_utf8_ok,
    MAX_STR, _uv32, _uv64, _unzig32, _unzig64, _zig32, _zig64, _uvsize, _frame_at, FRAME_COMPLETE, FRAME_PARTIAL,
    FRAME_BAD_SIZE, Cur, RequestHead, cur_request_head, cur_tags_begin, cur_tag_next, cur_init, cur_fail, cur_take, cur_uv32, cur_uv64, cur_length, cur_count,
    F_NEED, F_LIMIT, F_UTF8, F_COUNT, F_MEMORY,
    W_INT8, W_INT16, W_INT32, W_INT64, W_UINT16, W_UINT32, W_FLOAT64, W_BOOL, W_UUID, W_STRING,
    W_COMPACT_STRING, W_BYTES, W_COMPACT_BYTES, W_ARRAY_LENGTH, W_COMPACT_ARRAY_LENGTH, W_UVARINT, W_VARINT,
    W_VARLONG, W_TAGGED_FIELDS, W_TAG, W_TAGGED_FIELD_SIZE, W_TAGGED_FIELD, W_RAW,
)

import uuid as _uuid
from operator import index as _index

from kafkaproto._limits import DEFAULT_MAX_FRAME_SIZE, MAX_STRING_LENGTH
from kafkaproto.errors import EncodeError, FrameSizeError, InvalidValueError, KafkaProtocolError, failure
from kafkaproto.errors import frame_size_error as _frame_size_error

COMPILED = True

# numpy is imported by the few functions that return arrays, when first
# called: ``import kafkaproto`` (frames, headers, messages, records) loads
# neither numpy nor pyarrow.
cdef object _np = None


cdef object _numpy():
    global _np
    if _np is None:
        import numpy
        _np = numpy
    return _np


cdef object _UUID = _uuid.UUID
cdef object _UUID_NEW = _uuid.UUID.__new__
cdef object _SETATTR = object.__setattr__
cdef object _SAFE_UNKNOWN = _uuid.SafeUUID.unknown


cdef object make_uuid(const unsigned char* p):
    u = _UUID_NEW(_UUID)
    _SETATTR(u, "int", int.from_bytes(PyBytes_FromStringAndSize(<const char*>p, 16), "big"))
    _SETATTR(u, "is_safe", _SAFE_UNKNOWN)
    return u


cdef object cur_error(Cur* c):
    """The exception for the cursor's failure record (without a path)."""
    return failure(c.fail, c.what, c.at, c.x, c.y, c.z)


# ---------------------------------------------------------------------------
# Reader

cdef class Reader:
    """A cursor over a buffer (anything with the buffer protocol), read without copying."""

    def __cinit__(self, buf, Py_ssize_t offset=0, end=None):
        self._has_view = False
        PyObject_GetBuffer(buf, &self._view, PyBUF_SIMPLE)
        self._has_view = True
        cdef Py_ssize_t n = self._view.len
        cdef Py_ssize_t e = n
        if end is not None and end < n:
            e = end
        if offset < 0 or offset > e:
            raise ValueError(f"offset {offset} outside the buffer (0..{e})")
        cur_init(&self.c, <const unsigned char*>self._view.buf, offset, e)
        self._source = buf
        self._mv = None

    def __dealloc__(self):
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False

    @property
    def offset(self):
        return self.c.pos

    @offset.setter
    def offset(self, Py_ssize_t value):
        if value < 0 or value > self.c.end:
            raise ValueError(f"offset {value} outside the buffer (0..{self.c.end})")
        self.c.pos = value

    @property
    def end(self):
        return self.c.end

    @property
    def remaining(self):
        return self.c.end - self.c.pos

    cdef Py_ssize_t _take(self, Py_ssize_t n, int what, Py_ssize_t at) except -1:
        cdef Py_ssize_t p = cur_take(&self.c, n, what, at)
        if p < 0:
            raise cur_error(&self.c)
        return p

    cdef uint32_t _u32v(self, int what) except? 0xFFFFFFFF:
        cdef uint32_t out = 0
        if cur_uv32(&self.c, what, &out):
            raise cur_error(&self.c)
        return out

    cdef uint64_t _u64v(self, int what) except? 0xFFFFFFFFFFFFFFFF:
        cdef uint64_t out = 0
        if cur_uv64(&self.c, what, &out):
            raise cur_error(&self.c)
        return out

    # fixed width -----------------------------------------------------
    cpdef int read_int8(self) except? -200:
        cdef Py_ssize_t p = self._take(1, W_INT8, -1)
        return <int8_t>self.c.b[p]

    cpdef int read_int16(self) except? -70000:
        cdef Py_ssize_t p = self._take(2, W_INT16, -1)
        return <int16_t>kp_ld16(self.c.b + p)

    cpdef int read_int32(self) except? -1:
        cdef Py_ssize_t p = self._take(4, W_INT32, -1)
        return <int32_t>kp_ld32(self.c.b + p)

    cpdef int64_t read_int64(self) except? -1:
        cdef Py_ssize_t p = self._take(8, W_INT64, -1)
        return <int64_t>kp_ld64(self.c.b + p)

    cpdef int read_uint16(self) except? -1:
        cdef Py_ssize_t p = self._take(2, W_UINT16, -1)
        return kp_ld16(self.c.b + p)

    cpdef uint32_t read_uint32(self) except? 0xFFFFFFFF:
        cdef Py_ssize_t p = self._take(4, W_UINT32, -1)
        return kp_ld32(self.c.b + p)

    cpdef double read_float64(self) except? -1.0:
        cdef Py_ssize_t p = self._take(8, W_FLOAT64, -1)
        return kp_u64_to_f64(kp_ld64(self.c.b + p))

    cpdef bint read_bool(self) except? -1:
        cdef Py_ssize_t p = self._take(1, W_BOOL, -1)
        return self.c.b[p] != 0

    cpdef object read_uuid(self):
        cdef Py_ssize_t p = self._take(16, W_UUID, -1)
        return make_uuid(self.c.b + p)

    # varints ---------------------------------------------------------
    cpdef uint32_t read_uvarint(self) except? 0xFFFFFFFF:
        return self._u32v(W_UVARINT)

    cpdef int read_varint(self) except? -1:
        return _unzig32(self._u32v(W_VARINT))

    cpdef int64_t read_varlong(self) except? -1:
        return _unzig64(self._u64v(W_VARLONG))

    # strings and bytes -----------------------------------------------
    cdef object _str_body(self, int what, Py_ssize_t start, int64_t n, bint nullable):
        cdef int r = cur_length(&self.c, what, start, n, nullable)
        if r < 0:
            raise cur_error(&self.c)
        if r:
            return None
        if n > MAX_STR:
            cur_fail(&self.c, F_LIMIT, what, start, n, MAX_STR)
            raise cur_error(&self.c)
        cdef Py_ssize_t p = self._take(<Py_ssize_t>n, what, start)
        if not kp_utf8_ok(self.c.b + p, <Py_ssize_t>n):
            cur_fail(&self.c, F_UTF8, what, start, 0, 0)
            raise cur_error(&self.c)
        return PyUnicode_DecodeUTF8(<const char*>(self.c.b + p), <Py_ssize_t>n, NULL)

    cpdef object read_string(self, bint nullable=False):
        cdef Py_ssize_t start = self.c.pos
        cdef Py_ssize_t p = self._take(2, W_STRING, -1)
        return self._str_body(W_STRING, start, <int16_t>kp_ld16(self.c.b + p), nullable)

    cpdef object read_compact_string(self, bint nullable=False):
        cdef Py_ssize_t start = self.c.pos
        cdef int64_t n = <int64_t>self._u32v(W_COMPACT_STRING) - 1
        return self._str_body(W_COMPACT_STRING, start, n, nullable)

    cdef object _bytes_body(self, int what, Py_ssize_t start, int64_t n, bint nullable):
        cdef int r = cur_length(&self.c, what, start, n, nullable)
        if r < 0:
            raise cur_error(&self.c)
        if r:
            return None
        cdef Py_ssize_t p = self._take(<Py_ssize_t>n, what, start)
        return PyBytes_FromStringAndSize(<const char*>(self.c.b + p), <Py_ssize_t>n)

    cpdef object read_bytes(self, bint nullable=False):
        cdef Py_ssize_t start = self.c.pos
        cdef Py_ssize_t p = self._take(4, W_BYTES, -1)
        return self._bytes_body(W_BYTES, start, <int32_t>kp_ld32(self.c.b + p), nullable)

    cpdef object read_compact_bytes(self, bint nullable=False):
        cdef Py_ssize_t start = self.c.pos
        cdef int64_t n = <int64_t>self._u32v(W_COMPACT_BYTES) - 1
        return self._bytes_body(W_COMPACT_BYTES, start, n, nullable)

    cdef int64_t _count(self, int what, Py_ssize_t start, int64_t n, bint nullable) except? -2:
        cdef int r = cur_count(&self.c, what, start, n, nullable)
        if r < 0:
            raise cur_error(&self.c)
        return -1 if r else n

    cpdef int64_t read_array_length(self, bint nullable=False) except? -2:
        """An int32 element count; -1 for a null array (when nullable)."""
        cdef Py_ssize_t start = self.c.pos
        cdef Py_ssize_t p = self._take(4, W_ARRAY_LENGTH, -1)
        return self._count(W_ARRAY_LENGTH, start, <int32_t>kp_ld32(self.c.b + p), nullable)

    cpdef int64_t read_compact_array_length(self, bint nullable=False) except? -2:
        """An unsigned varint count+1; -1 for a null array (when nullable)."""
        cdef Py_ssize_t start = self.c.pos
        cdef int64_t n = <int64_t>self._u32v(W_COMPACT_ARRAY_LENGTH) - 1
        return self._count(W_COMPACT_ARRAY_LENGTH, start, n, nullable)

    cpdef list read_tagged_fields(self):
        """A tagged-field section: a list of (tag, raw bytes), in wire order."""
        cdef list out = tags_list(&self.c)
        if out is None:
            raise cur_error(&self.c)
        return out

    # raw -------------------------------------------------------------
    cpdef bytes read_raw(self, Py_ssize_t n):
        if n < 0:
            raise ValueError("negative length")
        cdef Py_ssize_t p = self._take(n, W_RAW, -1)
        return PyBytes_FromStringAndSize(<const char*>(self.c.b + p), n)

    cpdef object read_view(self, Py_ssize_t n):
        if n < 0:
            raise ValueError("negative length")
        cdef Py_ssize_t p = self._take(n, W_RAW, -1)
        if self._mv is None:
            mv = memoryview(self._source)
            if mv.ndim != 1 or mv.itemsize != 1:
                mv = mv.cast("B")
            self._mv = mv
        return self._mv[p:p + n]

    cpdef skip(self, Py_ssize_t n):
        if n < 0:
            raise ValueError("negative length")
        self._take(n, W_RAW, -1)


# ---------------------------------------------------------------------------
# Writer

cdef int64_t as_int(object v, str what, int64_t lo, int64_t hi) except? -1:
    cdef int64_t x
    if type(v) is not int:
        if isinstance(v, bool):
            raise EncodeError("expected an int, got bool", what)
        try:
            v = _index(v)
        except TypeError:
            raise EncodeError(f"expected an int, got {type(v).__name__}", what) from None
    try:
        x = v
    except OverflowError:
        raise EncodeError(f"value {v} out of range [{lo}, {hi}]", what) from None
    if x < lo or x > hi:
        raise EncodeError(f"value {v} out of range [{lo}, {hi}]", what)
    return x


cdef int64_t I8_MIN = -(1 << 7), I8_MAX = (1 << 7) - 1
cdef int64_t I16_MIN = -(1 << 15), I16_MAX = (1 << 15) - 1
cdef int64_t I32_MIN = -(1 << 31), I32_MAX = (1 << 31) - 1
cdef int64_t I64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t I64_MIN = -I64_MAX - 1
cdef int64_t U16_MAX = 0xFFFF, U32_MAX = 0xFFFFFFFF


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL


cdef const char* _utf8(str what, object value, Py_ssize_t* n) except NULL:
    """The UTF-8 bytes of a str, without a copy: CPython keeps them with the
    string (ASCII strings are their own UTF-8), so a sizing pass and the
    write pass that follows encode each string once."""
    if not isinstance(value, str):
        raise EncodeError(f"expected a str, got {type(value).__name__}", what)
    cdef const char* p
    try:
        p = PyUnicode_AsUTF8AndSize(value, n)
    except UnicodeEncodeError as exc:
        raise EncodeError(f"cannot encode as UTF-8 ({exc.reason})", what) from None
    if n[0] > MAX_STRING_LENGTH:
        raise EncodeError(f"length {n[0]} above the {MAX_STRING_LENGTH} limit", what)
    return p


cdef object _contiguous(object v, str what, str where=""):
    """A bytes or records field's value as an object with C-contiguous bytes:
    itself, or (a strided view, a Fortran-ordered array) a copy of its bytes
    in C order, as ``bytes(memoryview(v))`` gives them; EncodeError for what
    is no buffer.  The twin's _as_bytes takes the same."""
    if type(v) is bytes or type(v) is bytearray:
        return v
    if isinstance(v, str):
        raise EncodeError(f"expected bytes, got str{where}", what)
    try:
        mv = memoryview(v)
    except TypeError:
        raise EncodeError(f"expected bytes, got {type(v).__name__}{where}", what) from None
    return v if mv.c_contiguous else mv.tobytes()


cdef class Writer:
    """An output buffer with typed append methods, in one of three modes.

    - ``Writer()``: growable; ``getvalue()`` copies the bytes out.
    - ``Writer.counting()``: writes nothing, counts (the sizing pass): ``len()``
      is the size an encoding will have, ``external`` the part of it that
      blobs (records, zero-copy bytes) take.
    - ``Writer.sized(n)`` over a new ``bytes`` of exactly ``n`` bytes, and
      ``Writer.into(buffer, offset)`` over a caller's writable buffer: a write
      past the end raises :class:`EncodeError` (the sizing pass says how much
      room to give).

    With ``keep_blobs``, :meth:`write_blob` writes a blob's length but not its
    bytes: it notes the caller's object, and :meth:`parts` returns the bytes
    written, cut around those objects (k blobs: at most 2k+1 parts).
    """

    def __cinit__(self, Py_ssize_t capacity=0, bint keep_blobs=False):
        self.cap = capacity if capacity > 64 else 64
        self.buf = <unsigned char*>PyMem_Malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()
        self.length = 0
        self.mode = WM_GROW
        self.keep_blobs = keep_blobs
        self.cuts = None
        self.n_external = 0
        self.target = None
        self.has_tview = False

    def __dealloc__(self):
        if self.mode != WM_FIXED and self.buf != NULL:
            PyMem_Free(self.buf)
        self.buf = NULL
        if self.has_tview:
            PyBuffer_Release(&self.tview)
            self.has_tview = False

    @staticmethod
    def counting():
        """A writer that only counts (the sizing pass)."""
        cdef Writer w = Writer()
        w.mode = WM_COUNT
        w.scap = w.cap
        w.cap = -1  # every _reserve takes the slow path, which counts
        return w

    @staticmethod
    def sized(Py_ssize_t n, bint keep_blobs=False):
        """A writer over a new ``bytes`` object of exactly ``n`` bytes."""
        if n < 0:
            raise ValueError(f"size {n} is negative")
        cdef Writer w = Writer()
        PyMem_Free(w.buf)
        w.target = PyBytes_FromStringAndSize(NULL, n)
        w.buf = <unsigned char*>PyBytes_AS_STRING(w.target)
        w.cap = n
        w.mode = WM_FIXED
        w.keep_blobs = keep_blobs
        return w

    @staticmethod
    def into(buffer, offset=0, bint keep_blobs=False):
        """A writer over a caller's writable, C-contiguous buffer, from ``offset`` on."""
        cdef Writer w = Writer()
        try:
            PyObject_GetBuffer(buffer, &w.tview, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
        except (TypeError, BufferError):
            raise TypeError(f"expected a writable C-contiguous buffer, got {type(buffer).__name__}") from None
        w.has_tview = True
        offset = _index(offset)
        if offset < 0 or offset > w.tview.len:
            raise ValueError(f"offset {offset} outside the buffer (0..{w.tview.len})")
        cdef Py_ssize_t at = offset
        PyMem_Free(w.buf)
        w.buf = <unsigned char*>w.tview.buf + at
        w.cap = w.tview.len - at
        w.mode = WM_FIXED
        w.keep_blobs = keep_blobs
        w.target = buffer
        return w

    def release(self):
        """Let go of the caller's buffer (``into``): a bytearray can be resized again."""
        if self.has_tview:
            PyBuffer_Release(&self.tview)
            self.has_tview = False
            self.buf = NULL
            self.cap = 0

    def __len__(self):
        """Bytes written (or counted), blobs kept by reference included."""
        if self.mode == WM_COUNT or not self.keep_blobs:
            return self.length
        return self.length + self.n_external

    @property
    def external(self):
        """Bytes of blobs kept by reference (counting: blob bytes counted)."""
        return self.n_external

    @property
    def blobs(self):
        """The blobs kept by reference, as (offset in the written bytes, object)."""
        return list(self.cuts) if self.cuts is not None else []

    cdef unsigned char* _slow(self, Py_ssize_t n) except NULL:
        cdef Py_ssize_t need = self.length + n
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if self.mode == WM_COUNT:
            if n > self.scap:
                nb = <unsigned char*>PyMem_Realloc(self.buf, n)
                if nb == NULL:
                    raise MemoryError()
                self.buf = nb
                self.scap = n
            self.length = need
            return self.buf
        if self.mode == WM_FIXED:
            if self.buf == NULL:
                raise ValueError("the writer has released its buffer")
            raise EncodeError(f"the encoding needs more than the {self.cap} bytes the buffer has room for",
                              "buffer")
        cap = self.cap * 2
        if cap < need:
            cap = need
        nb = <unsigned char*>PyMem_Realloc(self.buf, cap)
        if nb == NULL:
            raise MemoryError()
        self.buf = nb
        self.cap = cap
        nb = self.buf + self.length
        self.length = need
        return nb

    cpdef bytes getvalue(self):
        if self.mode == WM_COUNT:
            raise ValueError("a counting writer holds no bytes")
        if self.keep_blobs and self.cuts:
            raise ValueError("blobs are kept by reference: use parts()")
        if type(self.target) is bytes and self.length == self.cap:
            return <bytes>self.target  # sized() and filled: the bytes themselves, no copy
        return PyBytes_FromStringAndSize(<const char*>self.buf, self.length)

    cpdef list parts(self):
        """The bytes written, cut around the blobs kept by reference → list of
        buffers (memoryviews of the written bytes, and the blobs themselves)."""
        if self.mode == WM_COUNT:
            raise ValueError("a counting writer holds no bytes")
        cdef object data
        cdef Py_ssize_t at
        if type(self.target) is bytes and self.length == self.cap:
            data = self.target
        elif self.mode == WM_FIXED:
            if not self.has_tview:
                raise ValueError("the writer has released its buffer")
            at = self.buf - <unsigned char*>self.tview.buf
            data = memoryview(self.target).cast("B")[at:at + self.length]
        else:
            data = PyBytes_FromStringAndSize(<const char*>self.buf, self.length)
        if not self.cuts:
            return [data]
        cdef list out = []
        cdef object mv = memoryview(data)
        cdef Py_ssize_t last = 0
        for at, blob in self.cuts:
            if at > last:
                out.append(mv[last:at])
            out.append(blob)
            last = at
        if self.length > last:
            out.append(mv[last:self.length])
        return out

    cpdef clear(self):
        self.length = 0
        self.n_external = 0
        self.cuts = None

    cpdef set_int32(self, Py_ssize_t at, v):
        """Overwrite 4 bytes already written at ``at`` (a size prefix written before its size was known)."""
        if self.mode == WM_COUNT:
            return
        if at < 0 or at + 4 > self.length:
            raise ValueError(f"offset {at} is not inside the {self.length} bytes written")
        kp_st32(self.buf + at, <uint32_t><int32_t>as_int(v, "int32", I32_MIN, I32_MAX))

    cpdef write_blob(self, v, bint compact, bint nullable=True):
        """A bytes or records field (length, then bytes): kept by reference with
        ``keep_blobs``, counted as external when counting, else copied.  A list
        or tuple of buffers is one field made of their bytes in order (stored
        batches sent as they are): each is kept by reference."""
        if isinstance(v, (list, tuple)):
            self._write_pieces(v, compact)
            return
        if v is None:
            if not nullable:
                raise EncodeError("null in a non-nullable field", "compact bytes" if compact else "bytes")
            if compact:
                self._reserve(1)[0] = 0
            else:
                kp_st32(self._reserve(4), 0xFFFFFFFF)
            return
        cdef Py_buffer view
        v = _contiguous(v, "compact bytes" if compact else "bytes")
        PyObject_GetBuffer(v, &view, PyBUF_ANY_CONTIGUOUS)
        cdef Py_ssize_t n = view.len
        try:
            if compact:
                if n >= 0xFFFFFFFF:
                    raise EncodeError(f"length {n} does not fit in an unsigned varint", "compact bytes")
                self._put_uv(<uint64_t>(n + 1))
            else:
                if n > 0x7FFFFFFF:
                    raise EncodeError(f"length {n} does not fit in an int32", "bytes")
                kp_st32(self._reserve(4), <uint32_t>n)
            if self.mode == WM_COUNT:
                self.length += n
                self.n_external += n
            elif self.keep_blobs and n > 0:
                if self.cuts is None:
                    self.cuts = []
                self.cuts.append((self.length, v))
                self.n_external += n
            else:
                self._put(view.buf, n)
        finally:
            PyBuffer_Release(&view)

    cdef int _write_pieces(self, list_or_tuple, bint compact) except -1:
        cdef Py_buffer view
        cdef Py_ssize_t total = 0, n
        what = "compact bytes" if compact else "bytes"
        # one snapshot for both passes: the length written is the pieces' written after it
        cdef list pieces = [_contiguous(piece, what, " in a list of buffers") for piece in list_or_tuple]
        for piece in pieces:
            PyObject_GetBuffer(piece, &view, PyBUF_ANY_CONTIGUOUS)
            total += view.len
            PyBuffer_Release(&view)
        if compact:
            if total >= 0xFFFFFFFF:
                raise EncodeError(f"length {total} does not fit in an unsigned varint", what)
            self._put_uv(<uint64_t>(total + 1))
        else:
            if total > 0x7FFFFFFF:
                raise EncodeError(f"length {total} does not fit in an int32", what)
            kp_st32(self._reserve(4), <uint32_t>total)
        for piece in pieces:
            PyObject_GetBuffer(piece, &view, PyBUF_ANY_CONTIGUOUS)
            n = view.len
            try:
                if self.mode == WM_COUNT:
                    self.length += n
                    self.n_external += n
                elif self.keep_blobs and n > 0:
                    if self.cuts is None:
                        self.cuts = []
                    self.cuts.append((self.length, piece))
                    self.n_external += n
                else:
                    self._put(view.buf, n)
            finally:
                PyBuffer_Release(&view)
        return 0

    # _reserve, _put_uv and _put are inline, in _codec.pxd (every module that writes uses them)

    cdef int _put_buffer(self, object data, str what) except -1:
        cdef Py_buffer view
        data = _contiguous(data, what)
        PyObject_GetBuffer(data, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            self._put(view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return 0

    cpdef write_int8(self, v):
        self._reserve(1)[0] = <unsigned char><int8_t>as_int(v, "int8", I8_MIN, I8_MAX)

    cpdef write_int16(self, v):
        kp_st16(self._reserve(2), <uint16_t><int16_t>as_int(v, "int16", I16_MIN, I16_MAX))

    cpdef write_int32(self, v):
        kp_st32(self._reserve(4), <uint32_t><int32_t>as_int(v, "int32", I32_MIN, I32_MAX))

    cpdef write_int64(self, v):
        kp_st64(self._reserve(8), <uint64_t>as_int(v, "int64", I64_MIN, I64_MAX))

    cpdef write_uint16(self, v):
        kp_st16(self._reserve(2), <uint16_t>as_int(v, "uint16", 0, U16_MAX))

    cpdef write_uint32(self, v):
        kp_st32(self._reserve(4), <uint32_t>as_int(v, "uint32", 0, U32_MAX))

    cpdef write_float64(self, v):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise EncodeError(f"expected a float, got {type(v).__name__}", "float64")
        cdef double d = v
        kp_st64(self._reserve(8), kp_f64_to_u64(d))

    cpdef write_bool(self, v):
        if not isinstance(v, (bool, int)):
            raise EncodeError(f"expected a bool, got {type(v).__name__}", "bool")
        self._reserve(1)[0] = 1 if v else 0

    cpdef write_uuid(self, v):
        if not isinstance(v, _UUID):
            raise EncodeError(f"expected a uuid.UUID, got {type(v).__name__}", "uuid")
        cdef bytes raw = v.bytes
        self._put(PyBytes_AS_STRING(raw), 16)

    cpdef write_uvarint(self, v):
        self._put_uv(<uint64_t>as_int(v, "unsigned varint", 0, U32_MAX))

    cpdef write_varint(self, v):
        self._put_uv(_zig32(<int32_t>as_int(v, "varint", I32_MIN, I32_MAX)))

    cpdef write_varlong(self, v):
        self._put_uv(_zig64(as_int(v, "varlong", I64_MIN, I64_MAX)))

    cpdef write_string(self, v):
        """int16 length + UTF-8; None is written as length -1."""
        if v is None:
            kp_st16(self._reserve(2), 0xFFFF)
            return
        cdef Py_ssize_t n
        cdef const char* data = _utf8("string", v, &n)
        kp_st16(self._reserve(2), <uint16_t>n)
        self._put(data, n)

    cpdef write_compact_string(self, v):
        """unsigned varint length+1 + UTF-8; None is written as 0."""
        if v is None:
            self._reserve(1)[0] = 0
            return
        cdef Py_ssize_t n
        cdef const char* data = _utf8("compact string", v, &n)
        self._put_uv(<uint64_t>(n + 1))
        self._put(data, n)

    cpdef write_bytes(self, v):
        if v is None:
            kp_st32(self._reserve(4), 0xFFFFFFFF)
            return
        cdef Py_buffer view
        v = _contiguous(v, "bytes")
        PyObject_GetBuffer(v, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            if view.len > 0x7FFFFFFF:
                raise EncodeError(f"length {view.len} does not fit in an int32", "bytes")
            kp_st32(self._reserve(4), <uint32_t>view.len)
            self._put(view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cpdef write_compact_bytes(self, v):
        if v is None:
            self._reserve(1)[0] = 0
            return
        cdef Py_buffer view
        v = _contiguous(v, "compact bytes")
        PyObject_GetBuffer(v, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            if view.len >= 0xFFFFFFFF:
                raise EncodeError(f"length {view.len} does not fit in an unsigned varint", "compact bytes")
            self._put_uv(<uint64_t>(view.len + 1))
            self._put(view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    cpdef write_array_length(self, n):
        """int32 count; None or -1 for a null array."""
        if n is None:
            n = -1
        kp_st32(self._reserve(4), <uint32_t><int32_t>as_int(n, "int32", I32_MIN, I32_MAX))

    cpdef write_compact_array_length(self, n):
        """unsigned varint count+1; None or -1 for a null array."""
        if n is None or n == -1:
            self._reserve(1)[0] = 0
            return
        self._put_uv(<uint64_t>as_int(n + 1, "unsigned varint", 0, U32_MAX))

    cpdef write_tagged_fields(self, fields):
        """A tagged-field section from (tag, raw bytes) pairs, written in the given order."""
        if not fields:
            self._reserve(1)[0] = 0
            return
        fields = tuple(fields)  # the count written is of the fields written after it
        self._put_uv(len(fields))
        cdef Py_buffer view
        for tag, data in fields:
            self._put_uv(<uint64_t>as_int(tag, "unsigned varint", 0, U32_MAX))
            data = _contiguous(data, "tagged field")
            PyObject_GetBuffer(data, &view, PyBUF_ANY_CONTIGUOUS)
            try:
                self._put_uv(<uint64_t>view.len)
                self._put(view.buf, view.len)
            finally:
                PyBuffer_Release(&view)

    cpdef write_raw(self, data):
        self._put_buffer(data, "raw bytes")


# ---------------------------------------------------------------------------
# sizes

def uvarint_size(v):
    return _uvsize(<uint64_t>as_int(v, "unsigned varint", 0, U32_MAX))


def varint_size(v):
    return _uvsize(_zig32(<int32_t>as_int(v, "varint", I32_MIN, I32_MAX)))


def varlong_size(v):
    return _uvsize(_zig64(as_int(v, "varlong", I64_MIN, I64_MAX)))


# ---------------------------------------------------------------------------
# batch entry points: loops run without the GIL; on a bad value the loop
# stops and a Reader re-reads that value to raise the twin's exact error.

cdef Py_ssize_t _many_loop(int kind, const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end,
                           Py_ssize_t count, void* out, Py_ssize_t* nout) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef uint32_t u32 = 0
    cdef uint64_t u64 = 0
    cdef int st
    cdef Py_ssize_t at
    while (count < 0 and pos < end) or i < count:
        at = pos
        if kind == 2:
            st = _uv64(buf, &pos, end, &u64)
            if st:
                nout[0] = i
                return -1 - at
            (<int64_t*>out)[i] = _unzig64(u64)
        else:
            st = _uv32(buf, &pos, end, &u32)
            if st:
                nout[0] = i
                return -1 - at
            if kind == 1:
                (<int32_t*>out)[i] = _unzig32(u32)
            else:
                (<uint32_t*>out)[i] = u32
        i += 1
    nout[0] = i
    return pos


_MANY_DTYPE = ("uint32", "int32", "int64")
_MANY_WHAT = ("unsigned varint", "varint", "varlong")


cdef _decode_many(int kind, buf, Py_ssize_t count, Py_ssize_t offset):
    cdef Reader r = Reader(buf, offset)
    cdef Py_ssize_t left = r.c.end - r.c.pos
    if count >= 0 and count > left:
        raise failure(F_COUNT, _MANY_WHAT[kind], offset, count, left)
    cdef Py_ssize_t cap = count if count >= 0 else left
    np = _numpy()
    arr = np.empty(cap, dtype=_MANY_DTYPE[kind])
    cdef Py_buffer view
    PyObject_GetBuffer(arr, &view, PyBUF_SIMPLE)
    cdef Py_ssize_t n = 0
    cdef Py_ssize_t res
    cdef const unsigned char* b = r.c.b
    cdef Py_ssize_t end = r.c.end
    try:
        with nogil:
            res = _many_loop(kind, b, offset, end, count, view.buf, &n)
    finally:
        PyBuffer_Release(&view)
    if res < 0:
        r.c.pos = -1 - res
        if kind == 0:
            r.read_uvarint()
        elif kind == 1:
            r.read_varint()
        else:
            r.read_varlong()
        raise AssertionError("varint loop and Reader disagree")  # pragma: no cover
    if n != cap:
        arr = arr[:n].copy()
    return arr, res


def decode_uvarints(buf, Py_ssize_t count=-1, Py_ssize_t offset=0):
    """Decode ``count`` unsigned varints (all, when -1) → (uint32 ndarray, end offset)."""
    return _decode_many(0, buf, count, offset)


def decode_varints(buf, Py_ssize_t count=-1, Py_ssize_t offset=0):
    """Decode ``count`` zig-zag varints (32-bit) → (int32 ndarray, end offset)."""
    return _decode_many(1, buf, count, offset)


def decode_varlongs(buf, Py_ssize_t count=-1, Py_ssize_t offset=0):
    """Decode ``count`` zig-zag varlongs (64-bit) → (int64 ndarray, end offset)."""
    return _decode_many(2, buf, count, offset)


cdef bytes _encode_many(int kind, values):
    cdef Writer w = Writer()
    cdef int64_t[::1] arr
    cdef Py_ssize_t i, n
    cdef int64_t v
    np = _numpy()
    try:
        arr = np.ascontiguousarray(values, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim != 1:
        for v_obj in values:
            if kind == 0:
                w.write_uvarint(v_obj)
            elif kind == 1:
                w.write_varint(v_obj)
            else:
                w.write_varlong(v_obj)
        return w.getvalue()
    n = arr.shape[0]
    for i in range(n):
        v = arr[i]
        if kind == 0:
            if v < 0 or v > U32_MAX:
                raise EncodeError(f"value {v} out of range [0, {U32_MAX}]", "unsigned varint")
            w._put_uv(<uint64_t>v)
        elif kind == 1:
            if v < I32_MIN or v > I32_MAX:
                raise EncodeError(f"value {v} out of range [{I32_MIN}, {I32_MAX}]", "varint")
            w._put_uv(_zig32(<int32_t>v))
        else:
            w._put_uv(_zig64(v))
    return w.getvalue()


def encode_uvarints(values):
    return _encode_many(0, values)


def encode_varints(values):
    return _encode_many(1, values)


def encode_varlongs(values):
    return _encode_many(2, values)


# ---------------------------------------------------------------------------
# frames

cdef class _Buffer:
    """malloc'd growable array exposed through the buffer protocol (owned by numpy)."""

    cdef char* data
    cdef Py_ssize_t length
    cdef Py_ssize_t cap
    cdef Py_ssize_t itemsize
    cdef bytes fmt
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __cinit__(self, Py_ssize_t itemsize, bytes fmt, Py_ssize_t cap):
        self.itemsize = itemsize
        self.fmt = fmt
        self.cap = cap if cap > 16 else 16
        self.length = 0
        self.data = <char*>PyMem_Malloc(self.cap * itemsize)
        if self.data == NULL:
            raise MemoryError()

    def __dealloc__(self):
        PyMem_Free(self.data)

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.length
        self.strides[0] = self.itemsize
        view.buf = self.data
        view.obj = self
        view.len = self.length * self.itemsize
        view.readonly = 0
        view.itemsize = self.itemsize
        view.format = PyBytes_AS_STRING(self.fmt)
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef int _grow2(_Buffer a, _Buffer b) except -1 nogil:
    cdef Py_ssize_t cap = a.cap * 2
    cdef char* na
    cdef char* nb
    with gil:
        na = <char*>PyMem_Realloc(a.data, cap * a.itemsize)
        if na == NULL:
            raise MemoryError()
        a.data = na
        a.cap = cap
        nb = <char*>PyMem_Realloc(b.data, cap * b.itemsize)
        if nb == NULL:
            raise MemoryError()
        b.data = nb
        b.cap = cap
    return 0


cdef Py_ssize_t _frames_loop(const unsigned char* buf, Py_ssize_t pos, Py_ssize_t n, int64_t max_size,
                             _Buffer starts, _Buffer sizes, Py_ssize_t* bad) except -2 nogil:
    # Returns the consumed offset; bad[0] >= 0 marks a rejected size prefix.
    cdef int32_t size = 0
    cdef Py_ssize_t k = 0
    cdef int st
    cdef int64_t* out_starts = <int64_t*>starts.data
    cdef int32_t* out_sizes = <int32_t*>sizes.data
    bad[0] = -1
    while True:
        st = _frame_at(buf, pos, n, 0, max_size, &size)
        if st == FRAME_BAD_SIZE:
            bad[0] = pos
            break
        if st != FRAME_COMPLETE:
            break
        if k == starts.cap:
            starts.length = k
            sizes.length = k
            _grow2(starts, sizes)
            out_starts = <int64_t*>starts.data
            out_sizes = <int32_t*>sizes.data
        out_starts[k] = pos + 4
        out_sizes[k] = size
        k += 1
        pos += 4 + size
    starts.length = k
    sizes.length = k
    return pos


cdef object frame_size_error(int32_t size, int64_t max_size, Py_ssize_t at):
    return _frame_size_error(size, max_size, at)


def frame_offsets(buf, int64_t max_frame_size=DEFAULT_MAX_FRAME_SIZE, Py_ssize_t offset=0):
    """Find the size-prefixed frames in ``buf``.

    Returns ``(starts, sizes, consumed)``: int64 offsets of each frame body
    (after its 4-byte prefix), int32 body sizes, and the offset just past the
    last complete frame.  A trailing partial frame is left unconsumed.
    """
    cdef Reader r = Reader(buf, offset)
    cdef Py_ssize_t n = r.c.end
    cdef Py_ssize_t guess = (n - offset) // 64 + 16
    cdef _Buffer starts = _Buffer(8, b"q", guess)
    cdef _Buffer sizes = _Buffer(4, b"i", guess)
    cdef Py_ssize_t bad = -1
    cdef Py_ssize_t pos
    cdef const unsigned char* b = r.c.b
    with nogil:
        pos = _frames_loop(b, offset, n, max_frame_size, starts, sizes, &bad)
    if bad >= 0:
        raise frame_size_error(<int32_t>kp_ld32(b + bad), max_frame_size, bad)
    np = _numpy()
    return np.frombuffer(starts, dtype=np.int64), np.frombuffer(sizes, dtype=np.int32), pos


def split_frames(buf, int64_t max_frame_size=DEFAULT_MAX_FRAME_SIZE, Py_ssize_t offset=0):
    """Split ``buf`` into frames: ``(list of zero-copy memoryviews, consumed)``."""
    cdef Reader r = Reader(buf, offset)
    cdef const unsigned char* b = r.c.b
    cdef Py_ssize_t n = r.c.end
    cdef Py_ssize_t pos = offset
    cdef int32_t size = 0
    cdef int st
    cdef list out = []
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    while True:
        st = _frame_at(b, pos, n, 0, max_frame_size, &size)
        if st == FRAME_BAD_SIZE:
            raise frame_size_error(size, max_frame_size, pos)
        if st != FRAME_COMPLETE:
            break
        out.append(mv[pos + 4:pos + 4 + size])
        pos += 4 + size
    return out, pos


cdef inline bint _fill_now(int32_t size, Py_ssize_t have) noexcept:
    # FrameReader: allocate a partial frame whole once a quarter of it is here
    return <int64_t>size <= 4 * <int64_t>have


cdef class FrameReader:
    """Incremental frame splitter: feed chunks of any size, get complete frames.

    A negative size or one above ``max_frame_size`` raises :class:`FrameSizeError`
    as soon as the 4 size bytes have arrived (before buffering the body), and
    the reader stays failed: the stream cannot be resynchronised.  The
    exception's ``frames`` are the frames the same feed completed before the
    bad size, and :meth:`unframed` hands over the bytes from it on, so that a
    proxy can forward every byte it was given.

    A frame that spans feeds is buffered until a quarter of it has arrived;
    then the ``bytes`` it will be returned as is allocated and the rest is
    copied straight into it, once.  The memory a partial frame holds stays
    within four times the bytes received of it (Kafka's own receive path
    allocates the whole size as soon as it reads the prefix).

    ``feed(data, max_frames)`` returns at most ``max_frames`` frames and keeps
    the bytes after the last one as they came (``more`` is then True): later
    feeds, ``b""`` included, frame them first (``max_frames`` is at least 1,
    or negative for no limit).  A connection bounds what it has in flight so
    (back-pressure), holding the peer's bytes, not objects.
    """

    cdef unsigned char* buf
    cdef Py_ssize_t length
    cdef Py_ssize_t cap
    # while ``_more``: where the held bytes start in ``buf`` (the frames
    # before it were handed out; compacted once they outweigh the rest)
    cdef Py_ssize_t start
    cdef int64_t _max
    cdef int64_t _consumed
    cdef object _error
    # The frame being filled (a bytes object nobody else holds yet), its
    # size and the body bytes in it; ``buf`` then holds its size prefix alone.
    cdef object _frame
    cdef Py_ssize_t _size
    cdef Py_ssize_t _filled
    # ``buf`` holds bytes after frames held back by max_frames (framed by the next feed)
    cdef bint _more

    def __cinit__(self, int64_t max_frame_size=DEFAULT_MAX_FRAME_SIZE):
        self.buf = NULL
        self.length = 0
        self.cap = 0
        self.start = 0
        self._max = max_frame_size
        self._consumed = 0
        self._error = None
        self._frame = None
        self._size = 0
        self._filled = 0

    def __dealloc__(self):
        PyMem_Free(self.buf)

    @property
    def buffered(self):
        """Bytes received but not yet returned as part of a frame."""
        return self.length - self.start + self._filled

    @property
    def consumed(self):
        """Stream offset just past the last returned frame."""
        return self._consumed

    @property
    def max_frame_size(self):
        return self._max

    @property
    def more(self):
        """Did the last feed stop at ``max_frames`` with bytes left (frames
        perhaps among them, for the next feed)?"""
        return self._more

    @property
    def partial_size(self):
        """The size claimed by the frame begun and not yet returned, once its
        4 prefix bytes are here (else None, and while frames are held back by
        ``max_frames``): a proxy decides from it whether to let the frame be
        buffered, or to take it back with :meth:`unframed` and pass it on in
        pieces."""
        if self._error is not None or self._more:
            return None
        if self._frame is not None:
            return self._size
        if self.length >= 4:
            return <int32_t>kp_ld32(self.buf)
        return None

    cdef int _append(self, const unsigned char* data, Py_ssize_t n) except -1:
        cdef Py_ssize_t need = self.length + n
        cdef Py_ssize_t cap
        cdef unsigned char* nb
        if n == 0:
            return 0  # memcpy of nothing into a buffer never allocated (NULL) is undefined in C
        if need > self.cap:
            cap = self.cap * 2
            if cap < need:
                cap = need
            if cap < 256:
                cap = 256
            nb = <unsigned char*>PyMem_Realloc(self.buf, cap)
            if nb == NULL:
                raise MemoryError()
            self.buf = nb
            self.cap = cap
        memcpy(self.buf + self.length, data, n)
        self.length = need
        return 0

    cdef int _begin(self, int32_t size) except -1:
        # ``buf`` holds the size prefix and the first body bytes: they move into
        # the bytes object the frame will be returned as, and ``buf`` keeps the prefix.
        cdef Py_ssize_t held = self.length - 4
        frame = PyBytes_FromStringAndSize(NULL, size)
        if held:
            memcpy(PyBytes_AS_STRING(frame), self.buf + 4, held)
        self._frame = frame
        self._size = size
        self._filled = held
        self.length = 4
        return 0

    cdef Py_ssize_t _fill(self, const unsigned char* d, Py_ssize_t n, list out) except -1:
        # Copy what the frame being filled still needs from ``d[:n]`` → bytes taken;
        # a frame completed goes to ``out``.
        cdef Py_ssize_t take = self._size - self._filled
        if take > n:
            take = n
        if take:
            memcpy(<unsigned char*>PyBytes_AS_STRING(self._frame) + self._filled, d, take)
        self._filled += take
        if self._filled == self._size:
            out.append(self._frame)
            self._frame = None
            self._consumed += 4 + self._size
            self._filled = 0
            self.length = 0
        return take

    def feed(self, data, Py_ssize_t max_frames=-1):
        """Bytes received → the frames they complete (at most ``max_frames``
        of them when it is not negative)."""
        if self._error is not None:
            raise self._error
        if max_frames == 0:
            raise ValueError("max_frames must be at least 1 (or negative: no limit)")
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_ANY_CONTIGUOUS)
        cdef list out = []
        cdef Py_ssize_t pos = 0, need
        cdef int32_t size = 0
        cdef int st
        cdef const unsigned char* d = <const unsigned char*>view.buf
        cdef Py_ssize_t n = view.len
        cdef bint held = False
        try:
            if self._more:
                # Bytes held back by max_frames (frames first), the new ones
                # appended after them, framed where they lie in ``buf``: a
                # caller draining one frame a call costs each held byte once,
                # not once a call.
                self._more = False
                held = True
                self._append(d, n)
                d = self.buf + self.start
                n = self.length - self.start
            elif self._frame is None and self.length:
                # A frame begun in an earlier feed: complete its size prefix,
                # then buffer its body until a quarter of it is here.
                if self.length < 4:
                    need = min(4 - self.length, n)
                    self._append(d, need)
                    d += need
                    n -= need
                if self.length < 4:
                    return out
                st = _frame_at(self.buf, 0, self.length, 0, self._max, &size)
                if st == FRAME_BAD_SIZE:
                    self._append(d, n)
                    raise self._fail(size, out)
                if not _fill_now(size, self.length - 4 + n):
                    self._append(d, n)
                    return out
                self._begin(size)
            if self._frame is not None:
                need = self._fill(d, n, out)
                d += need
                n -= need
                if self._frame is not None:
                    return out
            while max_frames < 0 or len(out) < max_frames:
                st = _frame_at(d, pos, n, 0, self._max, &size)
                if st != FRAME_COMPLETE:
                    break
                out.append(PyBytes_FromStringAndSize(<const char*>(d + pos + 4), size))
                pos += 4 + size
            else:
                # max_frames out: what follows is held as it came
                self._consumed += pos
                if held:
                    self.start += pos
                    self._more = self.start < self.length
                    if self.start > self.length - self.start:
                        self._compact()
                elif pos < n:
                    self._append(d + pos, n - pos)
                    self._more = True
                return out
            self._consumed += pos
            if held:
                # the rest moves to the front: the partial frame's first bytes
                self.start += pos
                self._compact()
                if st == FRAME_PARTIAL and self.length >= 4 and _fill_now(size, self.length - 4):
                    self._begin(size)
            # ``size`` is the partial frame's once its 4 prefix bytes are here
            elif st == FRAME_PARTIAL and n - pos >= 4 and _fill_now(size, n - pos - 4):
                self._append(d + pos, 4)
                self._begin(size)
                self._fill(d + pos + 4, n - pos - 4, out)
            else:
                self._append(d + pos, n - pos)
            if st == FRAME_BAD_SIZE:
                raise self._fail(size, out)
            if self.cap > 1048576 and self.length < self.cap // 4:
                self._shrink()
            return out
        finally:
            PyBuffer_Release(&view)

    cdef object _fail(self, int32_t size, list frames):
        # the exception raised now carries the frames completed before the bad
        # size; the one kept for later feeds carries none (they were handed out)
        self._error = frame_size_error(size, self._max, self._consumed)
        self._error.frames = []
        exc = frame_size_error(size, self._max, self._consumed)
        exc.frames = frames
        return exc

    def unframed(self):
        """The bytes received but not returned as frames (after a FrameSizeError:
        everything from the bad size prefix on), handed over once.  Before any
        error these are the bytes of the frame begun: the reader then starts
        afresh, at a frame boundary, with the next byte fed (the caller passes
        the rest of that frame on itself)."""
        self._compact()
        out = PyBytes_FromStringAndSize(NULL, self.length + self._filled)
        cdef unsigned char* o = <unsigned char*>PyBytes_AS_STRING(out)
        if self.length:
            memcpy(o, self.buf, self.length)
        if self._filled:
            memcpy(o + self.length, PyBytes_AS_STRING(self._frame), self._filled)
        self._consumed += self.length + self._filled
        self.length = 0
        self._frame = None
        self._filled = 0
        self._more = False
        return out

    cdef int _compact(self) except -1:
        # drop the bytes before ``start`` (moving those after it: fewer than
        # were dropped, so the moves of a whole drain add up to its bytes)
        cdef Py_ssize_t rest = self.length - self.start
        if self.start:
            if rest:
                memmove(self.buf, self.buf + self.start, rest)
            self.length = rest
            self.start = 0
        if self.cap > 1048576 and self.length < self.cap // 4:
            self._shrink()
        return 0

    cdef _shrink(self):
        cdef Py_ssize_t cap = self.length if self.length > 256 else 256
        cdef unsigned char* nb = <unsigned char*>PyMem_Realloc(self.buf, cap)
        if nb != NULL:
            self.buf = nb
            self.cap = cap


# ---------------------------------------------------------------------------
# CRC-32 (zlib's: reflected 0xEDB88320, inverted in and out), the checksum of
# legacy (magic 0/1) messages: slicing by 16, tables filled once at import.
# Our own, because Windows wheels have no system zlib to link against.

cdef extern from *:
    """
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


cdef uint32_t crc32_of(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    return kp_crc32(p, n)


def crc32(data):
    """CRC-32 of a buffer, as zlib.crc32 computes it (the legacy messages' checksum)."""
    cdef Py_buffer view
    cdef uint32_t c
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        c = kp_crc32(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return c


# ---------------------------------------------------------------------------
# headers

cdef list tags_list(Cur* c):
    """A tagged-field section at the cursor → [(tag, raw bytes)] in wire order (None on failure)."""
    cdef uint32_t count, i, tag, size
    cdef Py_ssize_t at
    cdef list out = []
    if cur_tags_begin(c, &count):
        return None
    for i in range(count):
        if cur_tag_next(c, &tag, &at, &size):
            return None
        out.append((tag, PyBytes_FromStringAndSize(<const char*>(c.b + c.pos), size)))
        c.pos += size
    return out


def decode_request_header(buf, int header_version, Py_ssize_t offset=0):
    """→ (api_key, api_version, correlation_id, client_id, tagged_fields, end_offset)."""
    if header_version < 0 or header_version > 2:
        raise ValueError(f"request header version {header_version} does not exist (0, 1, 2)")
    cdef Reader r = Reader(buf, offset)
    cdef RequestHead h
    if cur_request_head(&r.c, header_version, &h):
        raise cur_error(&r.c)
    client_id = None
    if h.client_id_len >= 0:
        client_id = PyUnicode_DecodeUTF8(<const char*>(r.c.b + h.client_id_at), h.client_id_len, NULL)
    tagged = None
    if header_version >= 2:
        tagged = tags_list(&r.c)
        if tagged is None:
            raise cur_error(&r.c)
    return h.api_key, h.api_version, h.correlation_id, client_id, tagged, r.c.pos


def encode_request_header(Writer writer, int header_version, api_key, api_version, correlation_id,
                          client_id=None, tagged_fields=None):
    if header_version < 0 or header_version > 2:
        raise ValueError(f"request header version {header_version} does not exist (0, 1, 2)")
    writer.write_int16(api_key)
    writer.write_int16(api_version)
    writer.write_int32(correlation_id)
    if header_version >= 1:
        writer.write_string(client_id)
    if header_version >= 2:
        writer.write_tagged_fields(tagged_fields)


def decode_response_header(buf, int header_version, Py_ssize_t offset=0):
    """→ (correlation_id, tagged_fields, end_offset)."""
    if header_version < 0 or header_version > 1:
        raise ValueError(f"response header version {header_version} does not exist (0, 1)")
    cdef Reader r = Reader(buf, offset)
    correlation_id = r.read_int32()
    tagged = None
    if header_version >= 1:
        tagged = tags_list(&r.c)
        if tagged is None:
            raise cur_error(&r.c)
    return correlation_id, tagged, r.c.pos


def encode_response_header(Writer writer, int header_version, correlation_id, tagged_fields=None):
    if header_version < 0 or header_version > 1:
        raise ValueError(f"response header version {header_version} does not exist (0, 1)")
    writer.write_int32(correlation_id)
    if header_version >= 1:
        writer.write_tagged_fields(tagged_fields)
