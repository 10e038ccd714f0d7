"""Reading a segment's bytes as Arrow: batches walked by :func:`kafkaproto.arrow.records`
(the one records walker, ``partial=True``) a window of the file at a time,
under the damage rules of :class:`kafkaproto.log._segwalk.SegmentWalk`.

A window is read with one ``read_at`` (a view of the page cache for a local,
memory-mapped file).  The walk stops at the first batch that is not whole;
what happens next (the next window, a bad batch skipped, the next readable
batch found after lost framing, a cut file, an index that lies) is the
segment walk's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import arrow as karrow
from .._impl import load
from ..arrow.buffers import column, numbers, valid
from ..errors import KafkaProtocolError
from ._files import Segment
from ._segwalk import DEFAULT_WINDOW, STOP_BAD, STOP_END, STOP_TRUNC, LogProblem, SegmentWalk

__all__ = ["DEFAULT_WINDOW", "LogProblem", "Scan", "Window"]

_TEXT = load("log._text")
_i32 = struct.Struct(">i")

_BATCH_CAPS = ("max_decompressed_size", "max_records_per_batch", "max_headers_per_record", "max_headers_per_batch")

# the record columns the walk itself fills (arrow.records' own)
WALK_COLUMNS = ("key", "value", "offset", "timestamp", "timestampType", "headers")


@dataclass
class Window:
    """The batches (and their records) of one window of a segment.

    ``batches``: :data:`kafkaproto.arrow.BATCHES_SCHEMA` rows with ``position``
    in the file, whole batches only; ``records``: their records in order
    (``batches.records`` of them each)."""

    records: pa.Table
    batches: pa.Table
    start: int       # the window's first byte in the file


def _blob(buf, start: int, n: int) -> pa.Array:
    data = buf if isinstance(buf, pa.Buffer) else pa.py_buffer(buf)
    offsets = pa.py_buffer(np.array([start, start + n], dtype=np.int64))
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, data])


class Scan:
    """Walks the batches of one segment from ``start`` (a batch's position)
    that start before ``stop``, a window at a time: yields :class:`Window` and
    :class:`LogProblem` items in file order (see :class:`SegmentWalk` for
    ``check_offset``, ``split``, ``stop_check``, ``time_check`` and
    ``stop_offset``).  ``fs`` None: a local file, memory-mapped.
    """

    def __init__(self, fs, seg: Segment, *, start: int = 0, stop: int | None = None,
                 check_offset: int | None = None, stop_offset: int | None = None, columns=WALK_COLUMNS,
                 control: bool = False, check_crc: bool = True, window: int = DEFAULT_WINDOW, limits=None,
                 split: bool = False, stop_check: int | None = None, time_check=None, tail_quiet: bool = False):
        self.fs, self.seg = fs, seg
        self.split = split
        self.start = start
        self.stop = seg.size if stop is None else min(stop, seg.size)
        self.check_offset, self.stop_check, self.time_check = check_offset, stop_check, time_check
        self.stop_offset = stop_offset
        self.columns = list(columns)
        self.control, self.check_crc = control, check_crc
        self.window = max(int(window), 4096)
        self.limits = limits or {}
        self.tail_quiet = tail_quiet
        self.bytes_read = 0
        self._probe = None

    # -- the walk of one window

    def _walk(self, buf, base: int, start: int, stop: int, emit_from: int):
        n = len(buf) - (start - base)
        recs, bats = karrow.records(_blob(buf, start - base, n), columns=self.columns, batches=True, partial=True,
                                    control=self.control, check_crc=self.check_crc, **self.limits)
        nb = bats.num_rows
        rel = column(bats, "position")
        errors = bats.column("error")
        truncated = column(bats, "truncated")
        bad = valid(errors) | truncated
        whole = int(np.argmax(bad)) if bad.any() else nb
        position = rel[:whole] + start
        kept = int(np.searchsorted(position, stop)) if stop < start + n else whole
        status, end, need, error = STOP_END, start + n, 0, None
        if kept < whole:
            end = int(position[kept])
        elif whole < nb:
            at = int(rel[whole]) + start
            end = at
            left = base + len(buf) - at
            size = _i32.unpack_from(buf, at - base + 8)[0] if left >= 12 else None
            if truncated[whole]:
                status, need = STOP_TRUNC, (61 if size is None else 12 + size)
            else:
                # what is wrong there, as the walker's exception (the text walker reads one batch)
                probe = self._probe_walk(buf, base, at, at + 1, base + len(buf))
                status, need, error = probe[2], probe[3], probe[11]
                if status == STOP_END and at == start:
                    # whole for the text walker, not for the records walker (one of its caps): damage
                    status, need = STOP_BAD, 12 + (size or 0)
                    error = KafkaProtocolError(errors[whole].as_py())
                elif status == STOP_END:  # the records walker's caps per call stopped it: go on from there
                    need = 0
        made, first, last, magic = None, (-1, -1), (-1, -1), -1
        if kept:
            b = bats.slice(0, kept)
            base_off = column(b, "base_offset")
            last_off = column(b, "last_offset")
            first, last = (int(base_off[0]), int(last_off[0])), (int(base_off[-1]), int(last_off[-1]))
            magic = int(b.column("magic")[kept - 1].as_py())
            lo = int(np.searchsorted(position[:kept], emit_from)) if emit_from > start else 0
            if lo < kept:
                counts = column(b, "records")
                r0, r1 = int(counts[:lo].sum()), int(counts.sum())
                kept_b = b.slice(lo, kept - lo).set_column(1, "position", numbers(position[lo:kept], pa.int64()))
                made = Window(recs.slice(r0, r1 - r0), kept_b, start)
        return (made, end, status, need, kept, first[0], first[1], last[0], last[1], magic, -1, error)

    def _probe_walk(self, buf, base, start, stop, emit_from):
        """One batch walked by the text walker (no text): what the checks of the time index and of
        a range's stop read, and the exception a bad batch raises."""
        if self._probe is None:
            caps = {k: v for k, v in self.limits.items() if k in _BATCH_CAPS}  # (the per-call caps are the walk's)
            self._probe = _TEXT.TextWalk(8 if self.check_crc else 0, **caps)
        got = self._probe.walk(buf, base, start, stop)
        return (None,) + tuple(got[1:])

    # -- the file

    def __iter__(self):
        seg = self.seg
        if self.fs is None or _is_local(self.fs):
            from .dump import _Local

            read, close, _whole = _Local.reader(seg.path, seg.size)
            read_fn = read
        else:
            f = self.fs.open_input_file(seg.path)
            size = seg.size

            def read_fn(pos, n):
                return f.read_at(max(0, min(n, size - pos)), pos)

            close = f.close
        walk = SegmentWalk(seg.path, seg.size, read_fn, self._walk, base_offset=seg.base_offset, topic=seg.topic,
                           partition=seg.partition, start=self.start, stop=self.stop,
                           check_offset=self.check_offset, stop_check=self.stop_check, time_check=self.time_check,
                           split=self.split, stop_offset=self.stop_offset, window=self.window, whole_file=False,
                           tail_quiet=self.tail_quiet, probe=self._probe_walk)
        try:
            yield from walk
        finally:
            self.bytes_read = walk.bytes_read
            close()


def _is_local(fs) -> bool:
    import pyarrow.fs as pafs

    return isinstance(fs, pafs.LocalFileSystem)
