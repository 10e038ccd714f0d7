"""Reading a capture, whatever its kind, into frame batches: the one place
that tells the kinds apart (pcap, pcapng, a folder of rolled files, tap
tables, raw request streams)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .formats.pcap import packet_batches, sniff_format
from .formats.raw import raw_batches
from .frames import BATCH_BYTES, BATCH_ROWS, FrameBatch

__all__ = ["capture_kind", "read_frame_batches"]


def capture_kind(path) -> str:
    """``"pcap"``, ``"pcapng"``, ``"table"`` (tap output: Arrow IPC or Parquet,
    a file or a folder of them; or a folder of rolled pcap/pcapng files) or
    ``"raw"`` (size-prefixed request frames)."""
    if os.path.isdir(path):
        return "table"
    with open(path, "rb") as f:
        head = f.read(8)
    fmt = sniff_format(head)
    if fmt:
        return fmt
    from .formats.tapfiles import is_table_file

    return "table" if is_table_file(head) else "raw"


def read_frame_batches(path, *, ports: Iterable[int] | None = None, acc: Accounting | None = None,
                       max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, batch_rows: int = BATCH_ROWS,
                       batch_bytes: int = BATCH_BYTES, **limits: int) -> Iterator[FrameBatch]:
    """Every Kafka frame of a capture, in capture order, paired and numbered,
    as :class:`FrameBatch` objects of about ``batch_rows`` frames or
    ``batch_bytes`` bytes.

    ``path``: a pcap or pcapng file, a list of them (one capture rolled into
    files, in the order written), a folder (of rolled pcap/pcapng files, or
    of tap tables), a tap table file, or a raw stream of size-prefixed
    request frames.  ``ports``, ``acc``, ``limits``: as
    :func:`kafkaproto.capture.read_frames`.  The accounting is complete once
    the iterator is exhausted.
    """
    acc = acc if acc is not None else Accounting()
    if not isinstance(path, (str, bytes, os.PathLike)):
        yield from packet_batches([os.fspath(p) for p in path], ports, acc, max_frame_size, batch_rows, batch_bytes,
                                   limits)
        return
    kind = capture_kind(path)
    if kind == "table":
        if os.path.isdir(path):
            from .formats.ranges import packet_files

            rolled = packet_files(path)
            if rolled:
                yield from packet_batches(rolled, ports, acc, max_frame_size, batch_rows, batch_bytes, limits)
                return
        from .formats.tapfiles import table_frame_batches

        yield from table_frame_batches(path, acc, max_frame_size=max_frame_size, batch_rows=batch_rows)
        return
    if kind == "raw":
        yield from raw_batches(path, acc, max_frame_size, batch_rows, batch_bytes)
        return
    yield from packet_batches([os.fspath(path)], ports, acc, max_frame_size, batch_rows, batch_bytes, limits)
