"""Reading a segment's bytes: batches walked by :func:`kafkaproto.arrow.records`
(the one records walker, ``partial=True``) a window of the file at a time,
damage found, named and stepped over.

A window is read with one ``read_at`` (a view of the page cache for a local,
memory-mapped file).  The walk stops at the first batch that is not whole;
what happens next depends on what is wrong:

- the window ends inside a batch: the next window starts at that batch (one
  large enough for it);
- the file ends inside a batch: the segment was cut there;
- a batch whose size field is plausible but whose content is bad (CRC,
  codec, records): reported and skipped, the walk goes on after it;
- anything else (a size below the minimum, an unknown magic, a size that
  runs past the file's end, zeros of a preallocated file, garbage): the
  framing is lost.  The walk resumes at the next ``.index`` entry whose batch
  is whole, or the rest of the file is reported unread.

Each damaged region becomes one :class:`LogProblem`: the file, the byte
range not read and the first error met in it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import arrow as karrow
from ._files import Segment
from ._index import OffsetIndex

__all__ = ["LogProblem", "Scan", "Window"]

DEFAULT_WINDOW = 8 << 20

_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")

# the record columns the walk itself fills (arrow.records' own)
WALK_COLUMNS = ("key", "value", "offset", "timestamp", "timestampType", "headers")


@dataclass(frozen=True)
class LogProblem:
    """Something in a log that could not be read as it should: where, and why.

    ``kind``: ``"batch"`` (one bad batch, skipped), ``"unreadable"`` (bytes
    up to ``end`` -- a resynchronization point, or the file's end -- not
    read), ``"cut"`` (the file ends inside a batch), ``"index"`` (an index
    entry that disagrees with the log), ``"txnindex"`` / ``"snapshot"`` (a
    damaged transaction index or producer snapshot), ``"skipped"``,
    ``"name"`` (what was left out, and why).
    """

    kind: str
    path: str
    position: int | None
    end: int | None
    message: str
    topic: str | None = None
    partition: int | None = None
    segment: int | None = None

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path} at byte {self.position}"
        return f"{where}: {self.message}"


@dataclass
class Window:
    """The batches (and their records) of one window of a segment.

    ``batches``: :data:`kafkaproto.arrow.BATCHES_SCHEMA` rows with ``position``
    in the file, whole batches only; ``records``: their records in order
    (``batches.records`` of them each)."""

    records: pa.Table
    batches: pa.Table
    start: int       # the window's first byte in the file


def _blob(buf: pa.Buffer) -> pa.Array:
    offsets = pa.py_buffer(np.array([0, buf.size], dtype=np.int64))
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, buf])


class Scan:
    """Walks the batches of one segment from ``start`` (a batch's position)
    that start before ``stop``, a window at a time: yields :class:`Window` and
    :class:`LogProblem` items in file order.

    ``check_offset``: ``start`` came from an index entry for this offset: the
    batch there must hold offsets up to it (its base offset at most that),
    else the index disagrees with the log -- reported, and the segment is
    walked from its start instead; with ``split`` (``start`` is where another
    walk of the segment stops), the batches before ``start`` are left out:
    that walk reads them.
    ``stop_offset``: no window is read after one holding a batch that starts
    at or above it.
    """

    def __init__(self, fs, seg: Segment, *, start: int = 0, stop: int | None = None,
                 check_offset: int | None = None, stop_offset: int | None = None, columns=WALK_COLUMNS,
                 control: bool = False, check_crc: bool = True, window: int = DEFAULT_WINDOW, limits=None,
                 index: OffsetIndex | None = None, split: bool = False):
        self.fs, self.seg = fs, seg
        self.split = split
        self.start = start
        self.stop = seg.size if stop is None else min(stop, seg.size)
        self.check_offset = check_offset
        self.stop_offset = stop_offset
        self.columns = list(columns)
        self.control, self.check_crc = control, check_crc
        self.window = max(int(window), 4096)
        self.limits = limits or {}
        self._index = index
        self.bytes_read = 0

    # -- helpers

    def _problem(self, kind, position, end, message) -> LogProblem:
        s = self.seg
        return LogProblem(kind, s.path, position, end, message, s.topic, s.partition, s.base_offset)

    def index(self) -> OffsetIndex:
        if self._index is None:
            self._index = OffsetIndex(self.fs, self.seg.index, self.seg.index_size, self.seg.base_offset)
        return self._index

    def _resync_points(self, after: int, last_offset: int | None):
        """Index entries past byte ``after`` (and past the last offset read) to try resuming at."""
        if self.seg.index is None:
            return
        idx = self.index()
        for k in range(idx.count):
            off, pos = idx.entry(k)
            if pos > after and (last_offset is None or off > last_offset):
                yield off, pos

    def _read(self, f, pos: int, n: int) -> pa.Buffer:
        n = max(0, min(n, self.seg.size - pos))
        f.seek(pos)
        buf = f.read_buffer(n)  # a view of the page cache for a memory-mapped file
        self.bytes_read += buf.size
        return buf

    def _walk(self, buf: pa.Buffer):
        return karrow.records(_blob(buf), columns=self.columns, batches=True, partial=True, control=self.control,
                              check_crc=self.check_crc, **self.limits)

    # -- the walk

    def __iter__(self):
        with self.fs.open_input_file(self.seg.path) as f:
            yield from self._scan(f)

    def _scan(self, f):
        pos, skip_before = self.start, 0
        check = self.check_offset if self.start > 0 else None
        damage = None          # (start, first error, kind) of the region being stepped over
        resync = None          # index entries to try resuming at, once the framing is lost
        expect = None          # resuming at an index entry: the batch there must hold offsets up to this one
        last_offset = None     # the last offset of the last whole batch
        size_hint = 0          # bytes needed at ``pos`` (a batch the window's end cut)
        stop, size = self.stop, self.seg.size
        end_of_range = None if stop >= size else stop
        if check is not None and pos >= size:
            yield self._problem("index", self.start, None,
                                f"the index sends offset {check} to this byte, past the file's end ({size} bytes): "
                                "the segment is read from its start instead")
            pos, skip_before, check = 0, (self.start if self.split else 0), None
        while pos < stop:
            buf = self._read(f, pos, max(min(self.window, stop - pos), size_hint, 61))
            size_hint = 0
            recs, bats = self._walk(buf)
            nb = bats.num_rows
            if nb == 0:
                break
            position = bats.column("position").to_numpy() + pos
            last = bats.slice(nb - 1).to_pylist()[0]
            failed, cut = last["error"] is not None, bool(last["truncated"])
            whole = nb - 1 if failed or cut else nb   # whole batches are a prefix, then maybe one that is not
            at = int(position[-1])
            size_at = self._size_at(buf, at - pos) if cut else None
            window_cut = cut and at + last["bytes"] < size and (size_at is None or 14 <= size_at <= size - at - 12)
            # a window whose batches reached the walk's per-call caps (max_*_per_call) stops at a
            # whole batch, as at the window's end: the next window starts with it
            call_cut = failed and whole > 0 and "_per_call=" in last["error"]
            if whole == 0 and window_cut:
                # the window's end cut the batch (not the file's end): read it whole
                size_hint = 61 if size_at is None else 12 + size_at
                continue
            first = bats.slice(0, 1).to_pylist()[0] if whole else None
            if check is not None:
                why = None
                if first is None:
                    why = f"where no whole batch starts ({last['error'] or 'the file ends inside it'})"
                elif first["base_offset"] > check:
                    why = f"where a batch of offsets {first['base_offset']}-{first['last_offset']} starts"
                check = None
                if why is not None:
                    yield self._problem("index", self.start, None,
                                        f"the index sends offset {self.check_offset} to this byte, {why}: the "
                                        "segment is read from its start instead")
                    pos, skip_before = 0, (self.start if self.split else 0)
                    continue
            if expect is not None and first is not None and (
                    first["base_offset"] > expect or (last_offset is not None and first["base_offset"] <= last_offset)):
                # not the batch the index entry names: try the next entry
                first, whole, failed, cut = None, 0, True, False
            if whole:
                expect = resync = None
                if damage is not None:
                    problem = self._region(damage, pos, skip_before)
                    if problem is not None:
                        yield problem
                    damage = None
                starts = position[:whole]
                lo = int(np.searchsorted(starts, skip_before)) if skip_before else 0
                hi = int(np.searchsorted(starts, stop)) if stop < size else whole
                if hi > lo:
                    counts = bats.column("records").to_numpy()
                    r0, r1 = int(counts[:lo].sum()), int(counts[:hi].sum())
                    kept = bats.slice(lo, hi - lo).set_column(1, "position", pa.array(starts[lo:hi], pa.int64()))
                    yield Window(recs.slice(r0, r1 - r0), kept, pos)
                if hi < whole:
                    return  # the rest starts in the next range
                tail = bats.slice(whole - 1, 1).to_pylist()[0]
                last_offset = tail["last_offset"]
                if self.stop_offset is not None and tail["base_offset"] >= self.stop_offset:
                    return
                if not failed and not cut:
                    pos = at + last["bytes"]
                    continue
                if window_cut:
                    pos = at  # the window's end cut the batch after them
                    size_hint = 61 if size_at is None else 12 + size_at
                    continue
                if call_cut:
                    pos = at
                    continue
            if at >= stop:
                pos = at  # the batch after them starts in the next range
                break
            if cut:
                if at + last["bytes"] >= size:
                    # the file ends inside this batch
                    if damage is None:
                        what = f"{last['bytes']} of its {12 + size_at} bytes" if size_at is not None and \
                            size_at >= 14 else f"{last['bytes']} bytes"
                        damage = (at, f"the file ends inside a batch ({what} are there)", "cut")
                    problem = self._region(damage, None, skip_before)
                    if problem is not None:
                        yield problem
                    return
                # a size below the minimum or past the file's end: no batch starts here
                err = f"batch size {size_at} below the minimum of 14" if size_at < 14 else \
                    f"batch size {size_at} runs past the file's end ({size - at - 12} bytes after its size field)"
                damage = (at, err, None) if damage is None else damage
            elif damage is None:
                damage = (at, last["error"] or "not the batch the index entry names", "batch")
                if last["bytes"] > 0:
                    # its size is plausible: only this batch may be bad; try the one after it
                    pos = at + last["bytes"]
                    continue
            # the framing is lost: resume at the next index entry whose batch is whole
            if damage[2] == "batch":
                damage = (damage[0], damage[1], None)
            resync, resume = self._resync(resync, at, last_offset)
            if resume is None or resume[1] >= stop:
                problem = self._region(damage, end_of_range, skip_before)
                if problem is not None:
                    yield problem
                return
            pos, expect = resume[1], resume[0]
        if damage is not None:
            problem = self._region(damage, pos if pos < size else None, skip_before)
            if problem is not None:
                yield problem

    def _resync(self, resync, at: int, last_offset):
        if resync is None:
            resync = self._resync_points(at, last_offset)
        return resync, next(resync, None)

    @staticmethod
    def _size_at(buf: pa.Buffer, rel: int) -> int | None:
        if rel + 12 > buf.size:
            return None
        return _i32.unpack(memoryview(buf)[rel + 8:rel + 12])[0]

    def _region(self, damage, end: int | None, skip_before: int = 0) -> LogProblem | None:
        """The problem for a damaged region from ``damage`` up to ``end`` (None: the file's end)."""
        start, err, kind = damage
        if start < skip_before:
            return None  # before the range: whoever reads that range reports it
        if kind == "cut":
            return self._problem("cut", start, None, err)
        if end is None:
            left = self.seg.size - start
            return self._problem("unreadable", start, None, f"the last {left} bytes of the file not read: {err}")
        if kind == "batch":
            return self._problem("batch", start, end, f"a bad batch of {end - start} bytes skipped: {err}")
        return self._problem("unreadable", start, end, f"{end - start} bytes not read, up to byte {end}: {err}")
