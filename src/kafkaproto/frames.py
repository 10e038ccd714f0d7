"""Size-prefixed frames: every Kafka request and response is an int32 size
followed by that many bytes.

- :func:`split_frames` cuts a whole buffer into zero-copy memoryviews;
- :func:`frame_offsets` returns NumPy arrays of body offsets and sizes (the
  fast path for millions of frames);
- :class:`FrameReader` is fed chunks of any size (one byte at a time works)
  and returns complete frames.

A negative size, or one above ``max_frame_size`` (default 100 MiB, Kafka's
``socket.request.max.bytes``), raises :class:`~kafkaproto.errors.FrameSizeError`
as Kafka's own receive path does.  A trailing partial frame is not an error.
"""

import struct

from ._impl import codec
from ._limits import DEFAULT_MAX_FRAME_SIZE

split_frames = codec.split_frames
frame_offsets = codec.frame_offsets
FrameReader = codec.FrameReader

_size = struct.Struct(">i")


def frame(payload) -> bytes:
    """Prefix ``payload`` (header + body) with its int32 size."""
    return _size.pack(len(payload)) + bytes(payload)


__all__ = ["DEFAULT_MAX_FRAME_SIZE", "FrameReader", "frame", "frame_offsets", "split_frames"]
