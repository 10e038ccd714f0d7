"""Types of kafkaproto.capture.walker._scan, the scanner (packets in, frames into the sink), and of its twin
_scan_py (same names)."""

from collections.abc import Callable
from typing import Any, BinaryIO

from ._sink import FrameSink, KafkaState

COMPILED: bool

class HalfState:
    """Reassembly state of one TCP direction (tcp.HalfStream.state)."""

    base: int | None  # sequence number of stream offset 0; None until known
    next: int  # next expected stream offset
    pending: dict[int, list[tuple[int | None, bytes, int]]]  # offset -> [(ts, payload, length)] behind a hole
    heap: list[int]  # the offsets of ``pending``, a heap
    ended: bool
    def __init__(self) -> None: ...

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
