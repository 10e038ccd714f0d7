"""Types of kafkaproto.capture.walker._scan, the capture walker (packets in, frames into the
sink), and of its twin _scan_py (same names)."""

from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from ._framing import Framer
from ._judge import BodyCheck
from ._sink import FrameSink

COMPILED: bool
#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES: int
MAX_OPEN_CONNECTIONS: int
MAX_PENDING_BYTES: int
MAX_PENDING_TOTAL: int

class Walker(Framer):
    """Packets in (one at a time, the records of a classic pcap file, segments
    indexed elsewhere as columns, or a raw stream of requests); frames out, into
    ``sink``; counts in the Accounting once flushed."""

    error: str | None  # why reading a pcap file stopped early
    unread_bytes: int  # file bytes left after a damaged or cut record
    records: int  # pcap records read
    def __init__(self, acc: Any, sink: FrameSink, connection_factory: Callable[[int, str, str, int | None], Any],
                 check: BodyCheck, versions: bytes, ports: Iterable[int] | None = None, *, max_frame_size: int = ...,
                 max_open_connections: int = ..., max_pending_bytes: int = ..., max_pending_total: int = ...
                 ) -> None: ...
    def packet(self, ts: int | None, linktype: int, data: Any) -> None:
        """One packet (``data``: its bytes; ``ts``: nanoseconds, or None)."""
    def segments(self, ts: Any, family: Any, src: Any, dst: Any, sport: Any, dport: Any, seq: Any, ack: Any,
                 flags: Any, length: Any, at: Any, caplen: Any, payload: Any, keys: Any = ...,
                 stop_bytes: int = ...) -> int:
        """TCP segments of the byte-range path (numpy columns), their payloads in ``payload``;
        with ``keys``, connection by connection: returns the rows fed."""
    def stream(self, conn: Any, data: Any) -> None:
        """The next bytes of a raw stream of requests (None: the stream is over)."""
    def read_pcap(self, fh: BinaryIO, big_endian: bool, ticks: int, linktype: int) -> None: ...
    def run(self) -> bool:
        """Read records until the sink is full (True) or the file ends (False)."""
    def pairings(self) -> list[Any]:
        """The Pairing of each open Kafka connection (its ``conn``: the connection's object), oldest first."""
    def save(self) -> bytes:
        """The walker's whole state (walker/snapshot.py); the counts are flushed first."""
    def load(self, data: bytes) -> None:
        """Take a state :meth:`save` wrote, before the first packet."""
