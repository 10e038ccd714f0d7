"""Types of kafkaproto.capture.walker._judge, the judge of a frame's start, and of its twin
_judge_py (same names)."""

from collections.abc import Callable
from typing import Any

from ._sink import Pairing

COMPILED: bool

class BodyCheck:
    """Walks a candidate frame's header and (the first ``limit`` bytes of) its body."""

    limit: int
    def __init__(self, plan_of: Callable[[bool, int, int], Any], request_headers: Any, response_headers: Any,
                 limit: int = 512) -> None: ...

def find_frame_start(buf: bytes | bytearray, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict[int, Any], check: BodyCheck | None = None,
                     pairing: Pairing | None = None, cap: int = ...) -> tuple[int, bool | None]:
    """``(p, True)``: the first position at or after ``pos`` whose header could
    start a frame (and whose frame reads and hides no frame behind its start,
    with ``check``); ``(p, None)``: too few bytes yet to judge ``p``;
    ``(-1, None)``: none (requests: the last 7 bytes are not judged)."""
    ...

def judge_frame(buf: bytes | bytearray, pos: int, max_frame_size: int, versions: bytes, check: BodyCheck,
                cap: int = ...) -> tuple[bool | None, int]:
    """Is the request at ``pos`` (a direction in step) a frame?  ``(verdict,
    bytes buf must hold before asking again)``."""
    ...
