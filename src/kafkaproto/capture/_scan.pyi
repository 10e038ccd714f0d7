"""Types of kafkaproto.capture._scan, the compiled capture fast path, and of
its twin _scan_py (same names).

The module imports nothing from the capture layer above it: the frame record
type, the direction values, the accounting object and the callbacks are
arguments of :class:`CaptureScanner`, typed here by the shape it relies on.
"""

from collections.abc import Callable
from typing import Any, BinaryIO

COMPILED: bool

class HalfState:
    """Reassembly state of one TCP direction (tcp.HalfStream.state)."""

    base: int | None  # sequence number of stream offset 0; None until known
    next: int  # next expected stream offset
    pending: dict[int, list[tuple[int | None, bytes, int]]]  # offset -> [(ts, payload, length)] behind a hole
    heap: list[int]  # the offsets of ``pending``, a heap
    ended: bool
    def __init__(self) -> None: ...

class KafkaState:
    """Framing state of one direction of a Kafka connection (streams.KafkaHalf.state)."""

    conn: Any
    outstanding: dict[int, Any]  # correlation id -> the RequestInfo waiting
    sink: Callable[[Any], None]
    is_request: bool
    synced: bool
    max_frame_size: int
    buf: bytearray  # buf[pos:]: bytes not framed yet
    pos: int
    base: int  # stream offset of buf[0]
    ts: int | None
    def __init__(self, conn: Any, outstanding: dict[int, Any],
                 sink: Callable[[Any], None], is_request: bool, synced: bool, max_frame_size: int) -> None: ...

#: ``lookup(family, src, sport, dst, dport)`` with addresses as 4 or 16 raw
#: bytes: ``(half, other_half, kafka)`` for a settled connection (``kafka`` None:
#: not Kafka), or None while every packet must go to ``packet``.
_Lookup = Callable[[int, bytes, int, bytes, int], tuple[HalfState, HalfState, KafkaState | None] | None]

class CaptureScanner:
    """Packets in (one at a time, or the records of a classic pcap file);
    frames out, in ``out``; counts in ``acc`` once flushed."""

    error: str | None  # why reading a pcap file stopped early
    unread_bytes: int  # file bytes left after a damaged or cut record
    records: int  # pcap records read
    def __init__(self, packet: Callable[[int | None, int, bytes], None], lookup: _Lookup, acc: Any,
                 out: list[Any], frame_type: Callable[..., Any], request: Any, response: Any,
                 max_outstanding: int, request_type: Callable[..., Any], header_table: Any) -> None: ...
    def packet(self, ts: int | None, linktype: int, data: bytes) -> None: ...
    def read_pcap(self, fh: BinaryIO, big_endian: bool, ticks: int, linktype: int) -> None: ...
    def run(self) -> bool: ...
    def flush(self) -> None: ...
    def segments(self, ts: Any, src: list[bytes], dst: list[bytes], sport: Any, dport: Any, seq: Any, ack: Any,
                 flags: Any, length: Any, payload_offsets: Any, payload: Any, slow: Callable[[int], None]) -> None:
        """Segments of the byte-range path (numpy columns; raw addresses); row i not taken goes to ``slow(i)``."""

def find_frame_start(buf: bytes | bytearray, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict[int, Any]) -> tuple[int, bool | None]:
    """``(p, True)``: the first position at or after ``pos`` whose header could
    start a frame; ``(p, None)``: too few bytes yet to judge ``p``;
    ``(-1, None)``: none (requests: the last 7 bytes are not judged)."""
    ...
