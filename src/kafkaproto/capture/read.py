"""Reading a capture, whatever its kind, into frame batches: the one place
that tells the kinds apart (pcap, pcapng, a folder of rolled files, tap
tables, raw request streams)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .._limits import DEFAULT_MAX_FRAME_SIZE
from .accounting import Accounting
from .formats.files import head as read_head
from .formats.files import is_folder, open_input, resolve
from .formats.pcap import packet_batches, sniff_format
from .formats.raw import raw_batches
from .frames import BATCH_BYTES, BATCH_ROWS, FrameBatch

__all__ = ["capture_kind", "read_frame_batches"]


def capture_kind(path, filesystem=None) -> str:
    """``"pcap"``, ``"pcapng"``, ``"table"`` (tap output: Arrow IPC or Parquet,
    a file or a folder of them; or a folder of rolled pcap/pcapng files) or
    ``"raw"`` (size-prefixed request frames).  ``filesystem``: a pyarrow
    filesystem ``path`` is in (None: a local path)."""
    if is_folder(filesystem, path):
        return "table"
    head = read_head(filesystem, path, 8)
    fmt = sniff_format(head)
    if fmt:
        return fmt
    from .formats.tapfiles import is_table_file

    return "table" if is_table_file(head) else "raw"


def read_frame_batches(path, *, ports: Iterable[int] | None = None, acc: Accounting | None = None,
                       max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, batch_rows: int = BATCH_ROWS,
                       batch_bytes: int = BATCH_BYTES, filesystem=None, **limits: int) -> Iterator[FrameBatch]:
    """Every Kafka frame of a capture, in capture order, paired and numbered,
    as :class:`FrameBatch` objects of about ``batch_rows`` frames or
    ``batch_bytes`` bytes.

    ``path``: a pcap or pcapng file, a list of them (one capture rolled into
    files, in the order written), a folder (of rolled pcap/pcapng files, or
    of tap tables), a tap table file, or a raw stream of size-prefixed
    request frames.  ``ports``, ``acc``, ``limits``: as
    :func:`kafkaproto.capture.read_frames`.  ``filesystem``: the pyarrow
    filesystem the paths are in (None: local paths; a URI is resolved).
    The accounting is complete once the iterator is exhausted.
    """
    acc = acc if acc is not None else Accounting()
    fs = filesystem
    if isinstance(path, (str, bytes, os.PathLike)) and fs is None:
        fs, path = resolve(path)
    files = None if isinstance(path, (str, bytes, os.PathLike)) else [os.fspath(p) for p in path]
    kind = "pcap" if files is not None else capture_kind(path, fs)
    if kind == "table" and is_folder(fs, path):
        from .formats.ranges import packet_files

        rolled = packet_files(path, fs)
        if rolled:
            files, kind = rolled, "pcap"
    if kind == "table":
        from .formats.tapfiles import table_frame_batches

        yield from table_frame_batches(path, acc, max_frame_size=max_frame_size, batch_rows=batch_rows,
                                       filesystem=fs)
        return
    if kind == "raw":
        if fs is None:
            yield from raw_batches(path, acc, max_frame_size, batch_rows, batch_bytes)
        else:
            with open_input(fs, path) as fh:
                yield from raw_batches(fh, acc, max_frame_size, batch_rows, batch_bytes)
        return
    files = files if files is not None else [os.fspath(path)]
    if fs is None:
        yield from packet_batches(files, ports, acc, max_frame_size, batch_rows, batch_bytes, limits)
        return
    inputs = [open_input(fs, f) for f in files]
    try:
        yield from packet_batches(inputs, ports, acc, max_frame_size, batch_rows, batch_bytes, limits)
    finally:
        for fh in inputs:
            fh.close()
