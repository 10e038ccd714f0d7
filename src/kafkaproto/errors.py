"""The error family shared by the compiled core and its pure-Python twin.

Every decode error says what was being read, where (byte offset, relative to
the start of the buffer handed to the decoder) and, when a message decoder
raised it, the field path inside the message, e.g.::

    MetadataResponse v12 .topics[3].partitions[7].leader_epoch at byte 4121: need 4 bytes, 2 left
"""

from __future__ import annotations

__all__ = [
    "KafkaProtocolError",
    "TruncatedError",
    "InvalidValueError",
    "TrailingBytesError",
    "FrameSizeError",
    "EncodeError",
    "UnsupportedVersionError",
    "UnknownApiError",
    "CorruptRecordError",
    "RecordLimitError",
]


class KafkaProtocolError(ValueError):
    """Bytes (or values) that do not follow the Kafka wire protocol.

    Attributes:
        what: what was being read or written (``"int32"``, ``"compact string"``,
            ``"MetadataResponse v12"``...).
        offset: byte offset of the failing read, or ``None`` when not known.
        path: the field path inside a message, outermost first
            (``["topics[3]", "partitions[7]", "leader_epoch"]``).
        detail: the reason (``"need 4 bytes, 2 left"``).
    """

    def __init__(self, detail: str, what: str = "", offset: int | None = None, path=None):
        self.detail = detail
        self.what = what
        self.offset = offset
        self.path = list(path) if path else []
        self.context = ""
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.context:
            parts.append(self.context)
        if self.path:
            parts.append("." + ".".join(self.path).replace(".[", "["))
        elif self.what:
            # no field to name (a message's own tagged section, a primitive, a frame): say what it was
            parts.append(self.what)
        head = " ".join(parts)
        if self.offset is not None:
            head = f"{head} at byte {self.offset}" if head else f"at byte {self.offset}"
        return f"{head}: {self.detail}" if head else self.detail

    def add_path(self, segment: str) -> KafkaProtocolError:
        """Prepend a path segment (called while the error unwinds out of nested structs)."""
        self.path.insert(0, segment)
        self.args = (self._render(),)
        return self

    def set_context(self, context: str) -> KafkaProtocolError:
        """Name the message being decoded (``"MetadataResponse v12"``)."""
        if not self.context:
            self.context = context
            self.args = (self._render(),)
        return self

    def __reduce__(self):
        return (_rebuild, (type(self), self.detail, self.what, self.offset, self.path, self.context))


def _rebuild(cls, detail, what, offset, path, context):
    err = cls(detail, what, offset, path)
    if context:
        err.set_context(context)
    return err


class TruncatedError(KafkaProtocolError):
    """The buffer ended before the value being read did."""


class InvalidValueError(KafkaProtocolError):
    """A value that no valid encoder produces (overlong varint, bad length, bad UTF-8...)."""


class TrailingBytesError(InvalidValueError):
    """Bytes left in a frame after its message body (``strict=True`` decoding)."""


class FrameSizeError(KafkaProtocolError):
    """A frame size prefix that is negative or above the configured limit."""


class EncodeError(KafkaProtocolError):
    """A value that cannot be written (out of range, too long, wrong type, absent in that version)."""


class UnsupportedVersionError(KafkaProtocolError):
    """An API version (or header version) this library has no schema for."""


class UnknownApiError(KafkaProtocolError):
    """An API key this library has no schema for."""


class CorruptRecordError(KafkaProtocolError):
    """A record batch whose CRC or structure is wrong."""


class RecordLimitError(CorruptRecordError):
    """A record batch that would expand past a configured cap (records per batch,
    headers per record): ``limit`` names the cap (the decoders' keyword),
    ``value`` is its setting, ``count`` what the batch declared."""

    def __init__(self, detail: str, what: str = "", offset: int | None = None, path=None, *,
                 limit: str = "", value: int = 0, count: int = 0):
        self.limit = limit
        self.value = value
        self.count = count
        super().__init__(detail, what, offset, path)

    def __reduce__(self):
        return (_rebuild_limit, (self.detail, self.what, self.offset, self.path, self.context, self.limit,
                                 self.value, self.count))


def _rebuild_limit(detail, what, offset, path, context, limit, value, count):
    err = RecordLimitError(detail, what, offset, path, limit=limit, value=value, count=count)
    if context:
        err.set_context(context)
    return err



# ---------------------------------------------------------------------------
# Failure records.  The compiled cursors (kafkaproto/_wire.pxd) record a
# failure as numbers -- a code, what was being read, the byte offset and up
# to three values -- and the twin raises through the same function, so both
# say exactly the same thing.  Keep both tables in the order of the enums in
# _wire.pxd (a test checks).

#: what was being read, by number (W_* in _wire.pxd)
WHATS = (
    "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid",
    "string", "compact string", "bytes", "compact bytes", "array length", "compact array length",
    "unsigned varint", "varint", "varlong", "tagged fields", "tag", "tagged field size", "tagged field",
    "raw bytes",
)

#: failure code (F_* in _wire.pxd) -> (error class, detail template)
FAILURES = (
    None,
    (TruncatedError, "need {x} bytes, {y} left"),
    (InvalidValueError, "longer than {x} bytes"),
    (InvalidValueError, "does not fit in {x} bits"),
    (InvalidValueError, "null (length -1) in a non-nullable field"),
    (InvalidValueError, "invalid length {x}"),
    (InvalidValueError, "length {x} above the {y} limit"),
    (InvalidValueError, "invalid UTF-8"),
    (InvalidValueError, "count {x} larger than the {y} bytes left"),
    (InvalidValueError, "tagged field {x} declares {y} bytes, its value used {z}"),
)

F_NEED, F_LONG, F_WIDE, F_NULL, F_LENGTH, F_LIMIT, F_UTF8, F_COUNT, F_TAG_SIZE, F_MEMORY, F_PYTHON = range(1, 12)


def frame_size_error(size: int, max_frame_size: int, at: int | None) -> FrameSizeError:
    """The error for a frame size prefix that is negative or above the limit (every frame splitter's)."""
    if size < 0:
        return FrameSizeError(f"negative size {size}", "frame", at)
    return FrameSizeError(f"size {size} above the limit {max_frame_size}", "frame", at)


def failure(code: int, what, at: int | None, x: int = 0, y: int = 0, z: int = 0) -> Exception:
    """The exception for a failure record; ``what`` is a W_* number or the text itself."""
    if code == F_MEMORY:
        return MemoryError()
    cls, template = FAILURES[code]
    return cls(template.format(x=x, y=y, z=z), WHATS[what] if isinstance(what, int) else what, at)
