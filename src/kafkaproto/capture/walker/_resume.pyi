"""Types of kafkaproto.capture.walker._resume (a walker's connections as
plain values and back) and of its twin _resume_py (same names)."""

from collections.abc import Callable
from typing import Any

COMPILED: bool

def save_tcp(t: Any, clients: list[str]) -> list:
    """The state of walker ``t``; ``clients``: its sink's client ids by index."""

def load_tcp(t: Any, st: list, sink: Any, factory: Callable[..., Any], max_frame_size: int) -> int:
    """Walker ``t`` (fresh) takes the state ``st``; the bytes held for detection."""
