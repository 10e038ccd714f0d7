"""Types of kafkaproto.capture.walker._framing (detection and framing over the
reassembly: the walker's middle) and of its twin _framing_py (same names)."""

from collections.abc import Callable, Iterable
from typing import Any

from ._judge import BodyCheck
from ._sink import FrameSink
from ._tcp import Tcp

COMPILED: bool
#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES: int
MAX_OPEN_CONNECTIONS: int
MAX_PENDING_BYTES: int
MAX_PENDING_TOTAL: int

class Framer(Tcp):
    """The reassembly's connections made Kafka frames, into ``sink`` (the
    walker, _scan.Walker, extends it with what feeds it)."""

    sink: FrameSink
    max_frame_size: int
    def __init__(self, acc: Any, sink: FrameSink, connection_factory: Callable[[int, str, str, int | None], Any],
                 check: BodyCheck, versions: bytes, ports: Iterable[int] | None = None, *, max_frame_size: int = ...,
                 max_open_connections: int = ..., max_pending_bytes: int = ..., max_pending_total: int = ...
                 ) -> None: ...
    def limits(self) -> list:
        """What a saved state must have been saved with to load here."""
