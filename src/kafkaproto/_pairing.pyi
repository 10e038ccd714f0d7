"""Types of kafkaproto._pairing, the pairing rule of every connection
(requests waiting for their responses), and of its twin _pairing_py."""

from typing import Any

COMPILED: bool
#: a request's ``ts`` when it has no time
NO_TS: int

class Pairing:
    """The requests waiting on one connection, paired oldest first per correlation id."""

    waiting: int
    pending: dict[int, Any]  # correlation id -> its oldest waiting request
    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def add(self, correlation_id: int, payload: Any = None, api_key: int = 0, api_version: int = 0,
            ts: int | None = None, seq: int = -1, client: int = -1) -> bool:
        """Note a request as waiting; True if its correlation id was already waiting."""
    def take(self, correlation_id: int, default: Any = None) -> Any:
        """The payload of the oldest request waiting with ``correlation_id``, taken."""
    def oldest(self) -> tuple[int, Any] | None:
        """``(correlation id, payload)`` of the request waiting longest."""
    def drop_oldest(self) -> None: ...
    def request_of(self, corr: int) -> tuple[int, int] | None:
        """``(api_key, api_version)`` of the oldest request waiting with ``corr``."""
    def waiting_list(self) -> list[tuple[int, int, int, int | None, int, int]]: ...
    def take_waiting(self) -> list[tuple[int, int, int, int | None, int, int]]:
        """``[(correlation id, api key, api version, ts, number, client index)]``, oldest first; none wait after."""
    def clear(self) -> None: ...
