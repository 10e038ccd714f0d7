"""Pure-Python twin of the compiled core (``kafkaproto._codec``).

Same names, same behaviour, same error messages: the compiled module is tested
against this one.  It is also what runs where no compiler was available at
install time, or when ``KAFKAPROTO_PURE=1`` is set.
"""

from __future__ import annotations

import struct
import uuid as _uuid
import zlib
from operator import index as _index

from ._limits import DEFAULT_MAX_FRAME_SIZE, MAX_STRING_LENGTH
from .errors import (
    F_COUNT,
    F_LENGTH,
    F_LIMIT,
    F_LONG,
    F_NEED,
    F_NULL,
    F_UTF8,
    F_WIDE,
    EncodeError,
    failure,
    frame_size_error,
)

COMPILED = False

_i8 = struct.Struct(">b")
_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_u16 = struct.Struct(">H")
_u32 = struct.Struct(">I")
_f64 = struct.Struct(">d")

_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
    "unsigned varint": (0, (1 << 32) - 1),
    "varint": (-(1 << 31), (1 << 31) - 1),
    "varlong": (-(1 << 63), (1 << 63) - 1),
}

_UUID_NEW = _uuid.UUID.__new__
_SETATTR = object.__setattr__


def _make_uuid(raw: bytes) -> _uuid.UUID:
    u = _UUID_NEW(_uuid.UUID)
    _SETATTR(u, "int", int.from_bytes(raw, "big"))
    _SETATTR(u, "is_safe", _uuid.SafeUUID.unknown)
    return u


def _truncated(what, offset, need, left):
    return failure(F_NEED, what, offset, need, left)


def _check_int(what, value, lo=None, hi=None):
    if type(value) is not int:
        if isinstance(value, bool):
            raise EncodeError("expected an int, got bool", what)
        try:
            value = _index(value)
        except TypeError:
            raise EncodeError(f"expected an int, got {type(value).__name__}", what) from None
    if lo is None:
        lo, hi = _RANGES[what]
    if value < lo or value > hi:
        raise EncodeError(f"value {value} out of range [{lo}, {hi}]", what)
    return value


def _utf8(what, value):
    if not isinstance(value, str):
        raise EncodeError(f"expected a str, got {type(value).__name__}", what)
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"cannot encode as UTF-8 ({exc.reason})", what) from None
    if len(data) > MAX_STRING_LENGTH:
        raise EncodeError(f"length {len(data)} above the {MAX_STRING_LENGTH} limit", what)
    return data


def _as_bytes(what, value, where=""):
    """A bytes or records field's value as an object with C-contiguous bytes:
    itself, or (a strided view, a Fortran-ordered array) a copy of its bytes in
    C order, as ``bytes(memoryview(value))`` gives them; EncodeError for what is
    no buffer (the compiled writer's _contiguous)."""
    if type(value) is bytes or type(value) is bytearray:
        return value
    if isinstance(value, str):
        raise EncodeError(f"expected bytes, got str{where}", what)
    try:
        mv = memoryview(value)
    except TypeError:
        raise EncodeError(f"expected bytes, got {type(value).__name__}{where}", what) from None
    return value if mv.c_contiguous else mv.tobytes()


def _nbytes(value) -> int:
    return len(value) if type(value) is bytes or type(value) is bytearray else memoryview(value).nbytes


def _flat(value):
    """What _as_bytes gave, as something a bytearray appends byte for byte (``+=``
    on a NumPy array would add element-wise)."""
    return value if type(value) is bytes or type(value) is bytearray else memoryview(value).cast("B")


def uvarint_status(buf, pos, end, max_bytes, bits):
    """Unsigned varint at ``pos`` → (status, value, new pos), the twin of the
    compiled cores: status 0 ok, 1 cut short, 2 too long, 3 out of range."""
    start = pos
    value = 0
    shift = 0
    while True:
        if pos >= end:
            return 1, 0, pos
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if pos - start >= max_bytes:
            return 2, 0, pos
    if value >> bits:
        return 3, 0, pos
    return 0, value, pos


def _length(what, start, n, nullable):
    """Check a length or count read at ``start``: True for a null (-1, nullable)."""
    if n < 0:
        if n == -1 and nullable:
            return True
        raise failure(F_NULL, what, start) if n == -1 else failure(F_LENGTH, what, start, n)
    return False


class Reader:
    """A cursor over a buffer (anything with the buffer protocol), read without copying."""

    __slots__ = ("_buf", "_pos", "_end", "_start")

    def __init__(self, buf, offset: int = 0, end: int | None = None):
        mv = memoryview(buf)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        n = len(mv)
        if end is None or end > n:
            end = n
        if offset < 0 or offset > end:
            raise ValueError(f"offset {offset} outside the buffer (0..{end})")
        self._buf = mv
        self._pos = offset
        self._end = end
        self._start = offset

    @property
    def offset(self) -> int:
        return self._pos

    @offset.setter
    def offset(self, value: int) -> None:
        if value < 0 or value > self._end:
            raise ValueError(f"offset {value} outside the buffer (0..{self._end})")
        self._pos = value

    @property
    def end(self) -> int:
        return self._end

    @property
    def remaining(self) -> int:
        return self._end - self._pos

    def _take(self, n, what, at=None):
        pos = self._pos
        left = self._end - pos
        if n > left:
            raise _truncated(what, pos if at is None else at, n, left)
        self._pos = pos + n
        return pos

    # fixed width -----------------------------------------------------
    def read_int8(self):
        p = self._take(1, "int8")
        return _i8.unpack_from(self._buf, p)[0]

    def read_int16(self):
        p = self._take(2, "int16")
        return _i16.unpack_from(self._buf, p)[0]

    def read_int32(self):
        p = self._take(4, "int32")
        return _i32.unpack_from(self._buf, p)[0]

    def read_int64(self):
        p = self._take(8, "int64")
        return _i64.unpack_from(self._buf, p)[0]

    def read_uint16(self):
        p = self._take(2, "uint16")
        return _u16.unpack_from(self._buf, p)[0]

    def read_uint32(self):
        p = self._take(4, "uint32")
        return _u32.unpack_from(self._buf, p)[0]

    def read_float64(self):
        p = self._take(8, "float64")
        return _f64.unpack_from(self._buf, p)[0]

    def read_bool(self):
        p = self._take(1, "bool")
        return self._buf[p] != 0

    def read_uuid(self):
        p = self._take(16, "uuid")
        return _make_uuid(bytes(self._buf[p : p + 16]))

    # varints ---------------------------------------------------------
    def _uvarint(self, what, max_bytes, bits):
        start = self._pos
        status, value, pos = uvarint_status(self._buf, start, self._end, max_bytes, bits)
        if status == 1:
            raise _truncated(what, start, pos - start + 1, self._end - start)
        if status == 2:
            raise failure(F_LONG, what, start, max_bytes)
        if status == 3:
            raise failure(F_WIDE, what, start, bits)
        self._pos = pos
        return value

    def read_uvarint(self):
        return self._uvarint("unsigned varint", 5, 32)

    def read_varint(self):
        u = self._uvarint("varint", 5, 32)
        return (u >> 1) ^ -(u & 1)

    def read_varlong(self):
        u = self._uvarint("varlong", 10, 64)
        return (u >> 1) ^ -(u & 1)

    # strings and bytes -----------------------------------------------
    def _str_body(self, what, start, n, nullable):
        if _length(what, start, n, nullable):
            return None
        if n > MAX_STRING_LENGTH:
            raise failure(F_LIMIT, what, start, n, MAX_STRING_LENGTH)
        p = self._take(n, what, start)
        try:
            return str(self._buf[p : p + n], "utf-8")
        except UnicodeDecodeError:
            raise failure(F_UTF8, what, start) from None

    def read_string(self, nullable=False):
        start = self._pos
        p = self._take(2, "string")
        return self._str_body("string", start, _i16.unpack_from(self._buf, p)[0], nullable)

    def read_compact_string(self, nullable=False):
        start = self._pos
        n = self._uvarint("compact string", 5, 32) - 1
        return self._str_body("compact string", start, n, nullable)

    def _bytes_body(self, what, start, n, nullable):
        if _length(what, start, n, nullable):
            return None
        p = self._take(n, what, start)
        return bytes(self._buf[p : p + n])

    def read_bytes(self, nullable=False):
        start = self._pos
        p = self._take(4, "bytes")
        return self._bytes_body("bytes", start, _i32.unpack_from(self._buf, p)[0], nullable)

    def read_compact_bytes(self, nullable=False):
        start = self._pos
        n = self._uvarint("compact bytes", 5, 32) - 1
        return self._bytes_body("compact bytes", start, n, nullable)

    def _count(self, what, start, n, nullable):
        if _length(what, start, n, nullable):
            return -1
        left = self._end - self._pos
        if n > left:
            raise failure(F_COUNT, what, start, n, left)
        return n

    def read_array_length(self, nullable=False):
        """An int32 element count; -1 for a null array (when nullable)."""
        start = self._pos
        p = self._take(4, "array length")
        return self._count("array length", start, _i32.unpack_from(self._buf, p)[0], nullable)

    def read_compact_array_length(self, nullable=False):
        """An unsigned varint count+1; -1 for a null array (when nullable)."""
        start = self._pos
        n = self._uvarint("compact array length", 5, 32) - 1
        return self._count("compact array length", start, n, nullable)

    def read_tagged_fields(self):
        """A tagged-field section: a list of (tag, raw bytes), in wire order."""
        start = self._pos
        count = self._uvarint("tagged fields", 5, 32)
        left = self._end - self._pos
        if count > left:
            raise failure(F_COUNT, "tagged fields", start, count, left)
        out = []
        for _ in range(count):
            at = self._pos
            tag = self._uvarint("tag", 5, 32)
            size = self._uvarint("tagged field size", 5, 32)
            p = self._take(size, "tagged field", at)
            out.append((tag, bytes(self._buf[p : p + size])))
        return out

    # raw -------------------------------------------------------------
    def read_raw(self, n):
        if n < 0:
            raise ValueError("negative length")
        p = self._take(n, "raw bytes")
        return bytes(self._buf[p : p + n])

    def read_view(self, n):
        if n < 0:
            raise ValueError("negative length")
        p = self._take(n, "raw bytes")
        return self._buf[p : p + n]

    def skip(self, n):
        if n < 0:
            raise ValueError("negative length")
        self._take(n, "raw bytes")


class _Bounded(bytearray):
    """The buffer of a fixed writer: a write past ``cap`` raises, as the compiled writer's does."""

    __slots__ = ("cap",)

    def _check(self, more):
        if len(self) + more > self.cap:
            raise EncodeError(f"the encoding needs more than the {self.cap} bytes the buffer has room for", "buffer")

    def __iadd__(self, other):
        self._check(_nbytes(other))
        return super().__iadd__(other)

    def append(self, v):
        self._check(1)
        super().append(v)


class _Tally:
    """The buffer of a counting writer: keeps the count, not the bytes."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def __iadd__(self, other):
        self.n += memoryview(other).nbytes
        return self

    def append(self, v):
        self.n += 1

    def __len__(self):
        return self.n

    def __delitem__(self, key):
        self.n = 0


_GROW, _COUNT, _FIXED = 0, 1, 2


class Writer:
    """An output buffer with typed append methods, in one of three modes.

    - ``Writer()``: growable; ``getvalue()`` copies the bytes out.
    - ``Writer.counting()``: counts (the sizing pass): ``len()`` is the size
      an encoding will have, ``external`` the part of it that blobs take.
    - ``Writer.sized(n)`` (a new ``bytes`` of exactly ``n`` bytes) and
      ``Writer.into(buffer, offset)`` (a caller's writable buffer; the bytes
      are there once :meth:`release` is called): a write past the end raises.

    With ``keep_blobs``, :meth:`write_blob` writes a blob's length but not its
    bytes: it notes the caller's object, and :meth:`parts` returns the bytes
    written, cut around those objects (k blobs: at most 2k+1 parts).
    """

    __slots__ = ("_buf", "_mode", "_keep", "_cuts", "_external", "_target", "_offset")

    def __init__(self, capacity: int = 0, keep_blobs: bool = False):
        self._buf = bytearray()
        self._mode = _GROW
        self._keep = keep_blobs
        self._cuts = []
        self._external = 0
        self._target = None
        self._offset = 0

    @staticmethod
    def counting():
        """A writer that only counts (the sizing pass)."""
        w = Writer()
        w._buf = _Tally()
        w._mode = _COUNT
        return w

    @staticmethod
    def sized(n: int, keep_blobs: bool = False):
        """A writer over a new ``bytes`` object of exactly ``n`` bytes."""
        if n < 0:
            raise ValueError(f"size {n} is negative")
        w = Writer(keep_blobs=keep_blobs)
        w._buf = _Bounded()
        w._buf.cap = n
        w._mode = _FIXED
        return w

    @staticmethod
    def into(buffer, offset: int = 0, keep_blobs: bool = False):
        """A writer over a caller's writable, C-contiguous buffer, from ``offset`` on."""
        try:
            mv = memoryview(buffer)
        except TypeError:
            raise TypeError(f"expected a writable C-contiguous buffer, got {type(buffer).__name__}") from None
        if mv.readonly or not mv.c_contiguous:
            raise TypeError(f"expected a writable C-contiguous buffer, got {type(buffer).__name__}")
        mv = mv.cast("B")
        offset = _index(offset)
        if offset < 0 or offset > len(mv):
            raise ValueError(f"offset {offset} outside the buffer (0..{len(mv)})")
        w = Writer(keep_blobs=keep_blobs)
        w._buf = _Bounded()
        w._buf.cap = len(mv) - offset
        w._mode = _FIXED
        w._target = mv
        w._offset = offset
        return w

    def release(self):
        """Let go of the caller's buffer (``into``), the bytes written now in it."""
        if self._target is not None:
            self._target[self._offset:self._offset + len(self._buf)] = self._buf
            self._target.release()
            self._target = None

    def __len__(self):
        """Bytes written (or counted), blobs kept by reference included."""
        if self._mode == _COUNT or not self._keep:
            return len(self._buf)
        return len(self._buf) + self._external

    @property
    def external(self):
        """Bytes of blobs kept by reference (counting: blob bytes counted)."""
        return self._external

    @property
    def blobs(self):
        """The blobs kept by reference, as (offset in the written bytes, object)."""
        return list(self._cuts)

    def getvalue(self) -> bytes:
        if self._mode == _COUNT:
            raise ValueError("a counting writer holds no bytes")
        if self._keep and self._cuts:
            raise ValueError("blobs are kept by reference: use parts()")
        return bytes(self._buf)

    def parts(self) -> list:
        """The bytes written, cut around the blobs kept by reference."""
        if self._mode == _COUNT:
            raise ValueError("a counting writer holds no bytes")
        data = bytes(self._buf)
        if not self._cuts:
            return [data]
        mv = memoryview(data)
        out, last = [], 0
        for at, blob in self._cuts:
            if at > last:
                out.append(mv[last:at])
            out.append(blob)
            last = at
        if len(data) > last:
            out.append(mv[last:])
        return out

    def _write_pieces(self, pieces, compact):
        what = "compact bytes" if compact else "bytes"
        # one snapshot for both passes: the length written is the pieces' written after it
        pieces = [_as_bytes(what, piece, " in a list of buffers") for piece in pieces]
        sizes = [_nbytes(piece) for piece in pieces]
        total = sum(sizes)
        if compact:
            if total >= 0xFFFFFFFF:
                raise EncodeError(f"length {total} does not fit in an unsigned varint", what)
            self._put_uvarint(total + 1)
        else:
            if total > 0x7FFFFFFF:
                raise EncodeError(f"length {total} does not fit in an int32", what)
            self._buf += _i32.pack(total)
        for piece, n in zip(pieces, sizes):
            if self._mode == _COUNT:
                self._buf.n += n
                self._external += n
            elif self._keep and n > 0:
                self._cuts.append((len(self._buf), piece))
                self._external += n
            else:
                self._buf += _flat(piece)

    def clear(self):
        del self._buf[:]
        self._external = 0
        self._cuts = []

    def set_int32(self, at, v):
        """Overwrite 4 bytes already written at ``at``."""
        if self._mode == _COUNT:
            return
        if at < 0 or at + 4 > len(self._buf):
            raise ValueError(f"offset {at} is not inside the {len(self._buf)} bytes written")
        self._buf[at:at + 4] = _i32.pack(_check_int("int32", v))

    def write_blob(self, v, compact, nullable=True):
        """A bytes or records field: kept by reference with ``keep_blobs``,
        counted as external when counting, else copied.  A list or tuple of
        buffers is one field made of their bytes in order: each is kept by reference."""
        if isinstance(v, (list, tuple)):
            self._write_pieces(v, compact)
            return
        if v is None:
            if not nullable:
                raise EncodeError("null in a non-nullable field", "compact bytes" if compact else "bytes")
            if compact:
                self._buf.append(0)
            else:
                self._buf += b"\xff\xff\xff\xff"
            return
        what = "compact bytes" if compact else "bytes"
        data = _as_bytes(what, v)
        n = _nbytes(data)
        if compact:
            if n >= 0xFFFFFFFF:
                raise EncodeError(f"length {n} does not fit in an unsigned varint", "compact bytes")
            self._put_uvarint(n + 1)
        else:
            if n > 0x7FFFFFFF:
                raise EncodeError(f"length {n} does not fit in an int32", "bytes")
            self._buf += _i32.pack(n)
        if self._mode == _COUNT:
            self._buf.n += n
            self._external += n
        elif self._keep and n > 0:
            self._cuts.append((len(self._buf), data))
            self._external += n
        else:
            self._buf += _flat(data)

    def write_int8(self, v):
        self._buf += _i8.pack(_check_int("int8", v))

    def write_int16(self, v):
        self._buf += _i16.pack(_check_int("int16", v))

    def write_int32(self, v):
        self._buf += _i32.pack(_check_int("int32", v))

    def write_int64(self, v):
        self._buf += _i64.pack(_check_int("int64", v))

    def write_uint16(self, v):
        self._buf += _u16.pack(_check_int("uint16", v))

    def write_uint32(self, v):
        self._buf += _u32.pack(_check_int("uint32", v))

    def write_float64(self, v):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise EncodeError(f"expected a float, got {type(v).__name__}", "float64")
        self._buf += _f64.pack(v)

    def write_bool(self, v):
        if not isinstance(v, (bool, int)):
            raise EncodeError(f"expected a bool, got {type(v).__name__}", "bool")
        self._buf.append(1 if v else 0)

    def write_uuid(self, v):
        if not isinstance(v, _uuid.UUID):
            raise EncodeError(f"expected a uuid.UUID, got {type(v).__name__}", "uuid")
        self._buf += v.bytes

    def _put_uvarint(self, u):
        buf = self._buf
        while u >= 0x80:
            buf.append((u & 0x7F) | 0x80)
            u >>= 7
        buf.append(u)

    def write_uvarint(self, v):
        self._put_uvarint(_check_int("unsigned varint", v))

    def write_varint(self, v):
        v = _check_int("varint", v)
        self._put_uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def write_varlong(self, v):
        v = _check_int("varlong", v)
        self._put_uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def write_string(self, v):
        """int16 length + UTF-8; None is written as length -1."""
        if v is None:
            self._buf += b"\xff\xff"
            return
        data = _utf8("string", v)
        self._buf += _i16.pack(len(data))
        self._buf += data

    def write_compact_string(self, v):
        """unsigned varint length+1 + UTF-8; None is written as 0."""
        if v is None:
            self._buf.append(0)
            return
        data = _utf8("compact string", v)
        self._put_uvarint(len(data) + 1)
        self._buf += data

    def write_bytes(self, v):
        if v is None:
            self._buf += b"\xff\xff\xff\xff"
            return
        data = _as_bytes("bytes", v)
        n = _nbytes(data)
        if n > 0x7FFFFFFF:
            raise EncodeError(f"length {n} does not fit in an int32", "bytes")
        self._buf += _i32.pack(n)
        self._buf += _flat(data)

    def write_compact_bytes(self, v):
        if v is None:
            self._buf.append(0)
            return
        data = _as_bytes("compact bytes", v)
        n = _nbytes(data)
        if n >= 0xFFFFFFFF:
            raise EncodeError(f"length {n} does not fit in an unsigned varint", "compact bytes")
        self._put_uvarint(n + 1)
        self._buf += _flat(data)

    def write_array_length(self, n):
        """int32 count; None or -1 for a null array."""
        if n is None:
            n = -1
        self._buf += _i32.pack(_check_int("int32", n))

    def write_compact_array_length(self, n):
        """unsigned varint count+1; None or -1 for a null array."""
        if n is None or n == -1:
            self._buf.append(0)
            return
        self._put_uvarint(_check_int("unsigned varint", n + 1))

    def write_tagged_fields(self, fields):
        """A tagged-field section from (tag, raw bytes) pairs, written in the given order."""
        if not fields:
            self._buf.append(0)
            return
        fields = tuple(fields)  # the count written is of the fields written after it
        self._put_uvarint(len(fields))
        for tag, data in fields:
            self._put_uvarint(_check_int("unsigned varint", tag))
            data = _as_bytes("tagged field", data)
            self._put_uvarint(_nbytes(data))
            self._buf += _flat(data)

    def write_raw(self, data):
        self._buf += _flat(_as_bytes("raw bytes", data))


# ---------------------------------------------------------------------------
# sizes


def uvarint_size(v: int) -> int:
    v = _check_int("unsigned varint", v)
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def varint_size(v: int) -> int:
    v = _check_int("varint", v)
    return uvarint_size(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def varlong_size(v: int) -> int:
    v = _check_int("varlong", v)
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


# ---------------------------------------------------------------------------
# batch entry points


def _decode_many(kind, buf, count, offset):
    r = Reader(buf, offset)
    if count < 0:
        out = []
        read = {"u": r.read_uvarint, "i": r.read_varint, "l": r.read_varlong}[kind]
        while r.remaining:
            out.append(read())
    else:
        if count > r.remaining:
            raise failure(F_COUNT, _MANY_WHAT[kind], offset, count, r.remaining)
        read = {"u": r.read_uvarint, "i": r.read_varint, "l": r.read_varlong}[kind]
        out = [read() for _ in range(count)]
    import numpy as np  # when first used: a bare ``import kafkaproto`` loads no numpy

    return np.array(out, dtype=_MANY_DTYPE[kind]), r.offset


_MANY_DTYPE = {"u": "uint32", "i": "int32", "l": "int64"}
_MANY_WHAT = {"u": "unsigned varint", "i": "varint", "l": "varlong"}


def decode_uvarints(buf, count: int = -1, offset: int = 0):
    """Decode ``count`` unsigned varints (all, when -1) → (uint32 ndarray, end offset)."""
    return _decode_many("u", buf, count, offset)


def decode_varints(buf, count: int = -1, offset: int = 0):
    """Decode ``count`` zig-zag varints (32-bit) → (int32 ndarray, end offset)."""
    return _decode_many("i", buf, count, offset)


def decode_varlongs(buf, count: int = -1, offset: int = 0):
    """Decode ``count`` zig-zag varlongs (64-bit) → (int64 ndarray, end offset)."""
    return _decode_many("l", buf, count, offset)


def encode_uvarints(values) -> bytes:
    w = Writer()
    for v in values:
        w.write_uvarint(int(v))
    return w.getvalue()


def encode_varints(values) -> bytes:
    w = Writer()
    for v in values:
        w.write_varint(int(v))
    return w.getvalue()


def encode_varlongs(values) -> bytes:
    w = Writer()
    for v in values:
        w.write_varlong(int(v))
    return w.getvalue()


def crc32(data) -> int:
    """CRC-32 of a buffer, as zlib.crc32 computes it (the legacy messages' checksum)."""
    return zlib.crc32(data)


# ---------------------------------------------------------------------------
# frames


FRAME_COMPLETE, FRAME_PARTIAL, FRAME_BAD_SIZE = range(3)


def frame_at(buf, pos, n, max_frame_size, min_size=0):
    """The frame rule every splitter of the twin uses (``_frame_at`` in _wire.pxd):
    ``(status, size)`` for the frame whose size prefix starts at ``pos``."""
    if n - pos < 4:
        return FRAME_PARTIAL, None
    size = _i32.unpack_from(buf, pos)[0]
    if size < min_size or (max_frame_size >= 0 and size > max_frame_size):
        return FRAME_BAD_SIZE, size
    if size > n - pos - 4:
        return FRAME_PARTIAL, size
    return FRAME_COMPLETE, size


def frame_offsets(buf, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, offset: int = 0):
    """Find the size-prefixed frames in ``buf``.

    Returns ``(starts, sizes, consumed)``: int64 offsets of each frame body
    (after its 4-byte prefix), int32 body sizes, and the offset just past the
    last complete frame.  A trailing partial frame is left unconsumed.
    """
    mv = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
    n = len(mv)
    pos = offset
    starts = []
    sizes = []
    while True:
        st, size = frame_at(mv, pos, n, max_frame_size)
        if st == FRAME_BAD_SIZE:
            raise frame_size_error(size, max_frame_size, pos)
        if st != FRAME_COMPLETE:
            break
        starts.append(pos + 4)
        sizes.append(size)
        pos += 4 + size
    import numpy as np

    return np.array(starts, dtype=np.int64), np.array(sizes, dtype=np.int32), pos


def split_frames(buf, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, offset: int = 0):
    """Split ``buf`` into frames: ``(list of zero-copy memoryviews, consumed)``."""
    mv = memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    n = len(mv)
    pos = offset
    out = []
    while True:
        st, size = frame_at(mv, pos, n, max_frame_size)
        if st == FRAME_BAD_SIZE:
            raise frame_size_error(size, max_frame_size, pos)
        if st != FRAME_COMPLETE:
            break
        out.append(mv[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return out, pos


class FrameReader:
    """Incremental frame splitter: feed chunks of any size, get complete frames.

    A negative size or one above ``max_frame_size`` raises :class:`FrameSizeError`
    as soon as the 4 size bytes have arrived (before buffering the body), and
    the reader stays failed: the stream cannot be resynchronised.  The
    exception's ``frames`` are the frames the same feed completed before the
    bad size, and :meth:`unframed` hands over the bytes from it on, so that a
    proxy can forward every byte it was given.

    A frame that spans feeds is buffered until a quarter of it has arrived;
    then the rest is kept as it comes, in pieces joined once when the frame
    is complete.  (The compiled reader allocates the ``bytes`` it will
    return at that point and copies the rest straight into it; the memory a
    partial frame holds there stays within four times the bytes received of
    it.  The rule is the same here, so that both readers move at the same
    steps; a ``bytes`` cannot be filled in place in Python.)

    ``feed(data, max_frames)`` returns at most ``max_frames`` frames and keeps
    the bytes after the last one as they came (``more`` is then True): later
    feeds, ``b""`` included, frame them first (``max_frames`` is at least 1,
    or negative for no limit).  A connection bounds what it has in flight so
    (back-pressure), holding the peer's bytes, not objects.
    """

    __slots__ = ("_buf", "_max", "_consumed", "_error", "_frame", "_size", "_filled", "_more")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self._buf = bytearray()
        self._max = max_frame_size
        self._consumed = 0
        self._error = None
        # The frame being filled (here the list of its pieces), its size and
        # the body bytes received; ``_buf`` then holds its size prefix alone.
        self._frame = None
        self._size = 0
        self._filled = 0
        # ``_buf`` holds bytes after frames held back by max_frames (framed by the next feed)
        self._more = False

    @property
    def more(self) -> bool:
        """Did the last feed stop at ``max_frames`` with bytes left (frames
        perhaps among them, for the next feed)?"""
        return self._more

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf) + self._filled

    @property
    def consumed(self) -> int:
        """Stream offset just past the last returned frame."""
        return self._consumed

    @property
    def max_frame_size(self) -> int:
        return self._max

    @property
    def partial_size(self) -> int | None:
        """The size claimed by the frame begun and not yet returned, once its
        4 prefix bytes are here (else None, and while frames are held back by
        ``max_frames``): a proxy decides from it whether to let the frame be
        buffered, or to take it back with :meth:`unframed` and pass it on in
        pieces."""
        if self._error is not None or self._more:
            return None
        if self._frame is not None:
            return self._size
        if len(self._buf) >= 4:
            return int.from_bytes(self._buf[:4], "big", signed=True)
        return None

    def _begin(self, size):
        # ``_buf`` holds the size prefix and the first body bytes: they move to
        # the frame's pieces, joined into one bytes object when it is complete
        buf = self._buf
        self._size = size
        self._frame = [buf[4:]]
        self._filled = len(buf) - 4
        del buf[4:]

    def _fill(self, mv, pos, out) -> int:
        # Take what the frame being filled still needs from ``mv[pos:]`` → bytes taken;
        # a frame completed goes to ``out``.  (Offsets, not slices, are passed
        # around: a slice left in a traceback would pin the caller's buffer.)
        take = min(self._size - self._filled, len(mv) - pos)
        self._frame.append(bytes(mv[pos : pos + take]))
        self._filled += take
        if self._filled == self._size:
            out.append(b"".join(self._frame))
            self._frame = None
            self._consumed += 4 + self._size
            self._filled = 0
            del self._buf[:]
        return take

    def feed(self, data, max_frames: int = -1) -> list:
        """Bytes received → the frames they complete (at most ``max_frames``
        of them when it is not negative)."""
        if self._error is not None:
            raise self._error
        if max_frames == 0:
            raise ValueError("max_frames must be at least 1 (or negative: no limit)")
        mv = memoryview(data)
        try:
            if not mv.contiguous:  # as the compiled reader asks for the buffer
                raise BufferError("memoryview: underlying buffer is not contiguous")
            if mv.ndim != 1 or mv.itemsize != 1:
                mv = mv.cast("B")
            if self._more:
                return self._feed_held(mv, max_frames)
            return self._feed(mv, max_frames)
        finally:
            mv.release()

    def _feed_held(self, mv, max_frames) -> list:
        # Bytes held back by max_frames (frames first), the new ones appended
        # after them, framed where they lie: the frames handed out are cut off
        # the front (a bytearray drops its first bytes without moving the
        # rest, and compacts when they are more than half of it), so a caller
        # draining one frame a call costs each held byte once, not once a call.
        self._more = False
        buf = self._buf
        buf += mv
        out = []
        view = memoryview(buf)
        try:
            pos, st, size, stopped = self._frames(view, 0, len(view), max_frames, out)
        finally:
            view.release()
        self._consumed += pos
        del buf[:pos]
        if stopped:
            self._more = bool(buf)
        elif st == FRAME_BAD_SIZE:
            raise self._fail(size, out)
        elif st == FRAME_PARTIAL and size is not None and size <= 4 * (len(buf) - 4):
            self._begin(size)
        return out

    def _frames(self, mv, pos, n, max_frames, out):
        # The whole frames of ``mv[pos:n]`` onto ``out`` while it has fewer than
        # max_frames → (end, status and size there, stopped by max_frames)
        while max_frames < 0 or len(out) < max_frames:
            st, size = frame_at(mv, pos, n, self._max)
            if st != FRAME_COMPLETE:
                return pos, st, size, False
            out.append(bytes(mv[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        return pos, FRAME_COMPLETE, None, True

    def _feed(self, mv, max_frames) -> list:
        buf = self._buf
        out = []
        pos = 0
        n = len(mv)
        if self._frame is None and buf:
            # A frame begun in an earlier feed: complete its size prefix, then
            # buffer its body until a quarter of it is here.
            if len(buf) < 4:
                pos = min(4 - len(buf), n)
                buf += mv[:pos]
                if len(buf) < 4:
                    return out
            st, size = frame_at(buf, 0, len(buf), self._max)
            if st == FRAME_BAD_SIZE:
                buf += mv[pos:]
                raise self._fail(size, out)
            if size > 4 * (len(buf) - 4 + n - pos):
                buf += mv[pos:]
                return out
            self._begin(size)
        if self._frame is not None:
            pos += self._fill(mv, pos, out)
            if self._frame is not None:
                return out
        start = pos
        pos, st, size, stopped = self._frames(mv, pos, n, max_frames, out)
        self._consumed += pos - start
        if stopped:
            # max_frames out: what follows is held as it came
            if pos < n:
                buf += mv[pos:]
                self._more = True
            return out
        # ``size`` is the partial frame's once its 4 prefix bytes are here
        if st == FRAME_PARTIAL and size is not None and size <= 4 * (n - pos - 4):
            buf += mv[pos : pos + 4]
            self._begin(size)
            self._fill(mv, pos + 4, out)
        else:
            buf += mv[pos:]
        if st == FRAME_BAD_SIZE:
            raise self._fail(size, out)
        return out

    def _fail(self, size, frames):
        # the exception raised now carries the frames completed before the bad
        # size; the one kept for later feeds carries none (they were handed out)
        self._error = frame_size_error(size, self._max, self._consumed)
        self._error.frames = []
        exc = frame_size_error(size, self._max, self._consumed)
        exc.frames = frames
        return exc

    def unframed(self) -> bytes:
        """The bytes received but not returned as frames (after a FrameSizeError:
        everything from the bad size prefix on), handed over once.  Before any
        error these are the bytes of the frame begun: the reader then starts
        afresh, at a frame boundary, with the next byte fed (the caller passes
        the rest of that frame on itself)."""
        out = bytes(self._buf)
        if self._frame is not None:
            out += b"".join(self._frame)
        self._consumed += len(out)
        del self._buf[:]
        self._frame = None
        self._filled = 0
        self._more = False
        return out


# ---------------------------------------------------------------------------
# headers


def decode_request_header(buf, header_version: int, offset: int = 0):
    """→ (api_key, api_version, correlation_id, client_id, tagged_fields, end_offset)."""
    if header_version not in (0, 1, 2):
        raise ValueError(f"request header version {header_version} does not exist (0, 1, 2)")
    r = Reader(buf, offset)
    api_key = r.read_int16()
    api_version = r.read_int16()
    correlation_id = r.read_int32()
    client_id = None
    tagged = None
    if header_version >= 1:
        # ClientId keeps its int16 length even in the flexible header v2.
        client_id = r.read_string(True)
    if header_version >= 2:
        tagged = r.read_tagged_fields()
    return api_key, api_version, correlation_id, client_id, tagged, r.offset


def encode_request_header(
    writer, header_version, api_key, api_version, correlation_id, client_id=None, tagged_fields=None
):
    if header_version not in (0, 1, 2):
        raise ValueError(f"request header version {header_version} does not exist (0, 1, 2)")
    writer.write_int16(api_key)
    writer.write_int16(api_version)
    writer.write_int32(correlation_id)
    if header_version >= 1:
        writer.write_string(client_id)
    if header_version >= 2:
        writer.write_tagged_fields(tagged_fields)


def decode_response_header(buf, header_version: int, offset: int = 0):
    """→ (correlation_id, tagged_fields, end_offset)."""
    if header_version not in (0, 1):
        raise ValueError(f"response header version {header_version} does not exist (0, 1)")
    r = Reader(buf, offset)
    correlation_id = r.read_int32()
    tagged = r.read_tagged_fields() if header_version >= 1 else None
    return correlation_id, tagged, r.offset


def encode_response_header(writer, header_version, correlation_id, tagged_fields=None):
    if header_version not in (0, 1):
        raise ValueError(f"response header version {header_version} does not exist (0, 1)")
    writer.write_int32(correlation_id)
    if header_version >= 1:
        writer.write_tagged_fields(tagged_fields)
