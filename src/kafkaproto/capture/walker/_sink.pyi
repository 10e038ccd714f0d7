"""Types of kafkaproto.capture.walker._sink, the walker's frame sink and pairing, and of its twin
_sink_py (same names)."""

from typing import Any

import numpy as np

from kafkaproto._pairing import Pairing as _Pairing

COMPILED: bool
#: frame flags (the rows' ``flags``): name -> bit
FLAGS: dict[str, int]
#: frame status names, by the rows' ``status``
STATUS: tuple[str, ...]
#: the fields of a frame row, in order: (name, numpy type)
ROW_FIELDS: tuple[tuple[str, str], ...]
ROW_DTYPE: np.dtype[Any]
#: a row's ``ts`` (or ``request_ts``) when there is no time
NO_TS: int

class Pairing(_Pairing):
    """The requests waiting on one connection (kafkaproto._pairing's rule), the
    connection and its frame count."""

    conn: Any
    frames: int
    def __init__(self, conn: Any) -> None: ...

class FrameSink:
    """Frames as rows (:data:`ROW_DTYPE`) and their bytes back to back."""

    conns: list[Any]  # the connections the rows since the last take name, by the rows' ``conn``
    clients: list[str]
    acc: Any
    max_outstanding: int
    batch_rows: int
    batch_bytes: int
    unanswered: list[tuple[Any, int, int, int, int | None, int, int]]
    def __init__(self, acc: Any, request_headers: Any, response_headers: Any, max_outstanding: int,
                 batch_rows: int = ..., batch_bytes: int = ...) -> None: ...
    def connection(self, conn: Any) -> Pairing: ...
    def client_of(self, text: str) -> int:
        """The index of client id ``text`` in ``clients`` (added if new)."""
    def close(self, p: Pairing) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def full(self) -> bool: ...
    def emit(self, kh: KafkaState, frame: Any, offset: int, request_ts: int | None = None) -> None: ...
    def add_rows(self, states: list[KafkaState], state: Any, ts: Any, offset: Any, request_ts: Any, starts: Any,
                 ends: Any, data: Any, first: int = 0) -> int:
        """Frames as columns (int32 ``state``, int64 the rest) from row ``first``
        until the sink is full; the row it stopped at."""
    def flush(self) -> None: ...
    def take(self) -> tuple[np.ndarray[Any, Any], Any, list[Any]]: ...  # (rows, a buffer of the frames' bytes, conns)

class KafkaState:
    """Framing state of one direction of a Kafka connection (streams.KafkaHalf.state)."""

    conn: Any
    pairing: Pairing
    sink: FrameSink
    is_request: bool
    synced: bool
    max_frame_size: int
    buf: bytearray  # buf[pos:]: bytes not framed yet
    pos: int
    base: int  # stream offset of buf[0]
    ts: int | None
    flags: int  # given to the next frame
    def __init__(self, conn: Any, pairing: Pairing, sink: FrameSink, is_request: bool, synced: bool,
                 max_frame_size: int) -> None: ...
    def drain(self) -> int:
        """Frame the buffered bytes: 1 when a bad size prefix stopped it at ``pos``, else 0."""
    def compact(self) -> None: ...

#: ``lookup(family, src, sport, dst, dport)`` with addresses as 4 or 16 raw
#: bytes: ``(half, other_half, kafka)`` for a settled connection (``kafka`` None:
#: not Kafka), or None while every packet must go to ``packet``.
