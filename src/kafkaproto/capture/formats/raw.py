"""Raw request streams: a file (or a pipe) of size-prefixed request frames,
as one connection, through the walker's sink."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ..accounting import Accounting
from ..frames import FrameBatch, take_batch
from ..objects import Connection
from ..walker.streams import walker

__all__ = ["raw_batches"]


def raw_batches(path, acc: Accounting, max_frame_size: int, batch_rows: int,
                 batch_bytes: int, cut=None) -> Iterator[FrameBatch]:
    """A file of size-prefixed request frames, as one connection (the
    walker's ``stream``: framed and resynchronized as a Kafka connection's
    requests are).  ``path`` may be an open binary stream (read as its bytes
    come); ``cut`` as in :func:`~kafkaproto.capture.formats.pcap.packet_batches`."""
    walk = walker(None, acc, max_frame_size, batch_rows=batch_rows, batch_bytes=batch_bytes)
    sink = walk.sink
    stream = hasattr(path, "read")
    conn = Connection(1, "client", path.name if stream else os.path.basename(os.fspath(path)))
    acc.connections += 1
    with contextlib.nullcontext(path) if stream else open(path, "rb") as fh:
        read = fh.read1 if stream else fh.read
        while chunk := read(1 << 20):
            acc.file_bytes += len(chunk)
            acc.payload_bytes_total += len(chunk)
            walk.stream(conn, chunk)
            if sink.full() or (cut is not None and sink.size and cut()):
                walk.flush()
                yield take_batch(sink)
    walk.stream(conn, None)  # a stream of requests alone: nothing is expected to answer them
    walk.flush()
    if sink.size:
        yield take_batch(sink)
