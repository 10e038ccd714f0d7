"""Types of kafkaproto.log._text (_text.pyx): DumpLogSegments' text for the batches of a segment, and the
search for the next readable batch after damage; and of its twin _text_py."""

from collections.abc import Callable

from _typeshed import ReadableBuffer

from ..errors import KafkaProtocolError

COMPILED: bool

#: one walk: (text or None, end, status, need, batches, first base offset, first last offset, last base
#: offset, last last offset, magic of the last, largest record timestamp of the last, error or None)
_WalkResult = tuple[bytes | None, int, int, int, int, int, int, int, int, int, int, KafkaProtocolError | None]

def java_string(data: ReadableBuffer) -> bytes:
    """``data`` as Java's ``new String(data, UTF_8)`` reads it, encoded back to UTF-8."""

class TextWalk:
    gaps: dict[int, int]
    last: int
    batches: int
    def __init__(
        self,
        flags: int,
        hook: Callable[[int, int, bytes | None, bytes | None], object] | None = None,
        *,
        max_decompressed_size: int = ...,
        max_records_per_batch: int = ...,
        max_headers_per_record: int = ...,
        max_headers_per_batch: int = ...,
    ) -> None: ...
    def walk(
        self, buf: ReadableBuffer, base: int, start: int, stop: int, write: Callable[[memoryview], object] | None = None
    ) -> _WalkResult: ...

def find_batch(
    buf: ReadableBuffer, base: int, start: int, stop: int, size: int, after: int, magic: int
) -> tuple[int, int]:
    """(0, position) of the next readable batch; (1, p): none before p; (2, p): a candidate at p runs past ``buf``."""
