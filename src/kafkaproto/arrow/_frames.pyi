"""Types of kafkaproto.arrow._frames (_frames.pyx), the compiled stream splitter
behind kafkaproto.arrow.split_frames, and of its twin _frames_py."""

from typing import Any

import pyarrow as pa

COMPILED: bool

def arrow_split_frames(arr: pa.Array, kind: int, max_frame_size: int, views: bool) -> dict[str, Any]:
    """Split a stream given as chunks (rows of ``arr``, a binary, large_binary
    or binary_view array; ``kind`` 0, 1 or 2) into frames: a dict of ``n``,
    ``views`` or ``offsets``, ``data``, ``side_base``, ``tail``, ``consumed``,
    ``bad_at`` and ``bad_size``."""
