"""Types of kafkaproto.capture.walker._tcp, the walker's reassembly (connections by their
4-tuple, each direction's segments to an in-order stream), and of its twin _tcp_py."""

from typing import Any

COMPILED: bool
#: connections open at once, at most (past it the one opened first is closed)
MAX_OPEN_CONNECTIONS: int
#: bytes waiting behind holes, per direction and in all
MAX_PENDING_BYTES: int
MAX_PENDING_TOTAL: int
#: closed connections remembered (their late packets count as duplicate)
MAX_CLOSED: int

class Tcp:
    """Connections by their 4-tuple and the reassembly of each direction; a Walker extends it."""

    max_open_connections: int
    max_pending_bytes: int
    max_pending_total: int
    def __init__(self, acc: Any, *, max_open_connections: int = ..., max_pending_bytes: int = ...,
                 max_pending_total: int = ...) -> None: ...
    @property
    def open_connections(self) -> int:
        """Connections open now."""
    @property
    def pending_bytes(self) -> int:
        """Bytes waiting behind holes now, in all."""
    def finish(self) -> None:
        """The end of the capture: every open connection closes (oldest first)."""
    def close_all(self) -> None:
        """Close every connection and forget them all."""
    def flush(self) -> None:
        """Add the counts kept here to the Accounting."""
