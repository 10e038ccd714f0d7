"""Types of kafkaproto.capture.walker._judge, the judge of a frame's start, and of its twin
_judge_py (same names)."""

from collections.abc import Callable
from typing import Any

from ._sink import Pairing

COMPILED: bool

class BodyCheck:
    """Judges a candidate frame by walking its header and (the first ``limit`` bytes of) its body."""

    limit: int
    def __init__(self, plan_of: Callable[[bool, int, int], Any], request_headers: Any, response_headers: Any,
                 limit: int = ...) -> None: ...

def find_frame_start(buf: bytes | bytearray, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict[int, Any], check: BodyCheck | None = None,
                     pairing: Pairing | None = None) -> tuple[int, bool | None]:
    """``(p, True)``: the first position at or after ``pos`` whose header could
    start a frame (and whose frame reads, with ``check``); ``(p, None)``: too
    few bytes yet to judge ``p``; ``(-1, None)``: none (requests: the last 7
    bytes are not judged)."""
    ...
