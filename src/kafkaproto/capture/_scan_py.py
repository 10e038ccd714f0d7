"""The pure-Python twin of kafkaproto.capture._scan: its state classes.

They are the plain counterparts of the compiled ones, held by tcp.HalfStream
and streams.KafkaHalf as ``state``; only the Python code uses them here.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["COMPILED", "HalfState", "KafkaState"]

COMPILED = False


class HalfState:
    """Reassembly state of one TCP direction (held by tcp.HalfStream as ``state``).

    ``base``: sequence number of stream offset 0 (None until known); ``next``:
    the next expected stream offset; ``pending``/``heap``: segments waiting
    behind a hole, by offset; ``ended``: the stream is over."""

    __slots__ = ("base", "next", "pending", "heap", "ended")

    def __init__(self) -> None:
        self.base: Optional[int] = None
        self.next = 0
        self.pending: dict = {}
        self.heap: list = []
        self.ended = False


class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``).

    ``buf[pos:]`` holds the bytes not framed yet, ``base`` is the stream
    offset of ``buf[0]``, ``ts`` the time of the latest bytes; ``outstanding``
    is the connection's ``{correlation id: (api key, api version, request
    time)}``, shared by its two directions; ``sink`` takes each frame made."""

    __slots__ = ("conn", "outstanding", "sink", "is_request", "synced", "max_frame_size", "buf", "pos", "base", "ts")

    def __init__(self, conn, outstanding: dict, sink, is_request: bool, synced: bool, max_frame_size: int) -> None:
        self.conn = conn
        self.outstanding = outstanding
        self.sink = sink
        self.is_request = bool(is_request)
        self.synced = bool(synced)
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.ts: Optional[int] = None
