"""Raw request streams: a file (or a pipe) of size-prefixed request frames,
as one connection, through the walker's sink."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ..accounting import Accounting
from ..frames import FrameBatch, take_batch
from ..objects import Connection
from ..walker.streams import KafkaHalf

__all__ = ["raw_batches"]


def raw_batches(path, acc: Accounting, max_frame_size: int, batch_rows: int,
                 batch_bytes: int, cut=None) -> Iterator[FrameBatch]:
    """A file of size-prefixed request frames, as one connection.  ``path``
    may be an open binary stream (read as its bytes come); ``cut`` as in
    :func:`_packet_batches`."""
    from ...protocol import header_table
    from ..walker.streams import MAX_OUTSTANDING, _sink

    sink = _sink.FrameSink(acc, header_table(True), header_table(False), MAX_OUTSTANDING, batch_rows,
                                   batch_bytes)
    stream = hasattr(path, "read")
    conn = Connection(1, "client", path.name if stream else os.path.basename(os.fspath(path)))
    acc.connections += 1
    pairing = sink.connection(conn)
    half = KafkaHalf(conn, pairing, sink, True, acc, synced=True, max_frame_size=max_frame_size)
    with contextlib.nullcontext(path) if stream else open(path, "rb") as fh:
        read = fh.read1 if stream else fh.read
        while chunk := read(1 << 20):
            acc.file_bytes += len(chunk)
            acc.payload_bytes_total += len(chunk)
            half.data(None, chunk)
            if sink.full() or (cut is not None and sink.size and cut()):
                yield take_batch(sink)
    half.end()
    pairing.take_waiting()  # a stream of requests alone: nothing is expected to answer them
    sink.flush()
    if sink.size:
        yield take_batch(sink)
