"""Types of kafkaproto.capture._scan, the compiled capture walker, and of its
twin _scan_py (same names).

The module imports nothing from the capture layer above it: the connection
objects, the accounting object, the callbacks and the header-version tables
are arguments, typed here by the shape it relies on.
"""

from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

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
#: the fields of a segment position row (the byte-range index), in order
POS_FIELDS: tuple[tuple[str, str], ...]
POS_DTYPE: np.dtype[Any]
#: order = file rank << OFFSET_BITS | record offset
OFFSET_BITS: int

class HalfState:
    """Reassembly state of one TCP direction (tcp.HalfStream.state)."""

    base: int | None  # sequence number of stream offset 0; None until known
    next: int  # next expected stream offset
    pending: dict[int, list[tuple[int | None, bytes, int]]]  # offset -> [(ts, payload, length)] behind a hole
    heap: list[int]  # the offsets of ``pending``, a heap
    ended: bool
    def __init__(self) -> None: ...

class Pairing:
    """The requests waiting on one connection (paired in order per correlation id), and its frame count."""

    conn: Any
    index: int  # the sink's connection index
    frames: int
    waiting: int
    pending: dict[int, Any]  # correlation id -> its oldest waiting request
    def __init__(self, conn: Any, index: int) -> None: ...
    def request_of(self, corr: int) -> tuple[int, int] | None:
        """``(api_key, api_version)`` of the oldest request waiting with ``corr``."""
    def take_waiting(self) -> list[tuple[int, int, int, int | None, int, int]]:
        """``[(correlation id, api key, api version, ts, frame number, client index)]``; none wait after."""

class FrameSink:
    """Frames as rows (:data:`ROW_DTYPE`) and their bytes back to back."""

    conns: list[Any]
    clients: list[str]
    acc: Any
    max_outstanding: int
    batch_rows: int
    batch_bytes: int
    unanswered: list[tuple[int, int, int, int, int | None, int, int]]
    def __init__(self, acc: Any, request_headers: Any, response_headers: Any, max_outstanding: int,
                 batch_rows: int = ..., batch_bytes: int = ...) -> None: ...
    def connection(self, conn: Any) -> Pairing: ...
    def close(self, p: Pairing) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def full(self) -> bool: ...
    def emit(self, kh: KafkaState, frame: Any, offset: int, request_ts: int | None = None) -> None: ...
    def flush(self) -> None: ...
    def take(self) -> tuple[np.ndarray[Any, Any], bytearray]: ...

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
_Lookup = Callable[[int, bytes, int, bytes, int], tuple[HalfState, HalfState, KafkaState | None] | None]

class CaptureScanner:
    """Packets in (one at a time, the records of a classic pcap file, or
    segments indexed elsewhere); frames out, into the sink; counts in ``acc``
    once flushed."""

    error: str | None  # why reading a pcap file stopped early
    unread_bytes: int  # file bytes left after a damaged or cut record
    records: int  # pcap records read
    def __init__(self, packet: Callable[[int | None, int, bytes], None], lookup: _Lookup, acc: Any,
                 sink: FrameSink) -> None: ...
    def packet(self, ts: int | None, linktype: int, data: bytes) -> None: ...
    def read_pcap(self, fh: BinaryIO, big_endian: bool, ticks: int, linktype: int) -> None: ...
    def run(self) -> bool: ...
    def flush(self) -> None: ...
    def segments(self, ts: Any, family: Any, src: Any, dst: Any, sport: Any, dport: Any, seq: Any, ack: Any,
                 flags: Any, length: Any, at: Any, caplen: Any, payload: Any, slow: Callable[[int], None]) -> None:
        """Segments of the byte-range path (numpy columns); row i not taken goes to ``slow(i)``."""

class BodyCheck:
    """Judges a candidate frame by walking its header and (the first ``limit`` bytes of) its body."""

    limit: int
    def __init__(self, plan_of: Callable[[bool, int, int], Any], request_headers: Any, response_headers: Any,
                 limit: int = ...) -> None: ...

def connection_key(family: int, a: bytes, ap: int, b: bytes, bp: int) -> int:
    """The byte-range index's key of a 4-tuple (the same both ways; never 0)."""

def index_pcap(buf: Any, start: int, end: int, big_endian: bool, ticks: int, linktype: int, rank: int
               ) -> tuple[np.ndarray[Any, Any], list[tuple[int, int, int, int]], dict[str, int], int, int, str | None]:
    """``(rows, others, reasons, stop, records, error)`` of the records starting in ``[start, end)``."""

def pcap_boundary(buf: Any, start: int, end: int, big_endian: bool, ticks: int, max_incl: int, ref_sec: int,
                  confirm: int) -> int:
    """The first plausible record boundary in ``[start, end)`` confirmed by ``confirm`` records; -1: none."""

def find_frame_start(buf: bytes | bytearray, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict[int, Any], check: BodyCheck | None = None,
                     pairing: Pairing | None = None) -> tuple[int, bool | None]:
    """``(p, True)``: the first position at or after ``pos`` whose header could
    start a frame (and whose frame reads, with ``check``); ``(p, None)``: too
    few bytes yet to judge ``p``; ``(-1, None)``: none (requests: the last 7
    bytes are not judged)."""
    ...
