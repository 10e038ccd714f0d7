"""Plans (which segments, which byte ranges, found with the index files) and
the records table built from the walked batches.

A read is a list of :class:`Task`: a segment and a byte range of it.  The
range starts where the ``.index`` says the first offset asked for is (a
time bound goes through the ``.timeindex`` first), and ends where it says
the offsets after the last one asked for begin; a segment whose offsets or
timestamps are all outside the bounds is not opened.  Large segments are
split at index entries into ranges of about ``split_bytes`` (Spark reads
them in parallel).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import arrow as karrow
from ..arrow.buffers import array, bools, column, constant_int, constant_string, numbers, strings, to_numpy, valid
from ._files import Partition, Segment
from ._index import OffsetIndex, TimeIndex
from ._scan import WALK_COLUMNS, LogProblem, Scan, Window
from ._txn import ATTR_CONTROL, ATTR_TRANSACTIONAL, Transactions

__all__ = ["LOG_SCHEMA", "Bounds", "Task", "plan_partition", "read_task"]

_HEADER = pa.struct([("key", pa.large_string()), ("value", pa.large_binary())])

#: The records of a log: Spark's Kafka source columns, then their batch's
#: fields, where they are, and ``error`` (null, but for the one row that
#: stands for a damaged region of a segment).
LOG_SCHEMA = pa.schema([
    ("key", pa.large_binary()), ("value", pa.large_binary()), ("topic", pa.large_string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()), ("headers", pa.large_list(_HEADER)),
    ("producerId", pa.int64()), ("producerEpoch", pa.int16()), ("sequence", pa.int32()),
    ("isTransactional", pa.bool_()), ("isControl", pa.bool_()), ("codec", pa.large_string()),
    ("leaderEpoch", pa.int32()), ("magic", pa.int8()),
    ("segment", pa.int64()), ("position", pa.int64()), ("error", pa.large_string()),
])
NAMES = tuple(LOG_SCHEMA.names)

_CODECS = strings(["none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)", "unknown(7)"])
_I32_MAX = 2**31 - 1


def _us(t) -> int | None:
    """A timestamp bound → microseconds: a datetime (naive ones are UTC), a date, or an int (milliseconds)."""
    if t is None:
        return None
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        delta = t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    if isinstance(t, _dt.date):
        return _us(_dt.datetime(t.year, t.month, t.day, tzinfo=_dt.timezone.utc))
    return int(t) * 1000


@dataclass(frozen=True)
class Bounds:
    """What a read keeps: offsets in [offset_from, offset_to), timestamps (µs) in
    [time_from, time_to) (or equal to ``time_to`` when ``time_to_inclusive``),
    the topics and partitions named (None: any)."""

    offset_from: int | None = None
    offset_to: int | None = None
    time_from: int | None = None      # microseconds
    time_to: int | None = None
    time_to_inclusive: bool = False
    topics: frozenset | None = None
    partitions: frozenset | None = None

    @staticmethod
    def of(offsets=None, timestamps=None, topics=None, partitions=None) -> Bounds:
        lo = hi = t0 = t1 = None
        if offsets is not None:
            lo, hi = offsets
        if timestamps is not None:
            t0, t1 = (_us(t) for t in timestamps)
        return Bounds(lo, hi, t0, t1, False, None if topics is None else frozenset(topics),
                      None if partitions is None else frozenset(partitions))

    @property
    def empty(self) -> bool:
        if self.offset_from is not None and self.offset_to is not None and self.offset_to <= self.offset_from:
            return True
        if self.time_from is not None and self.time_to is not None:
            return self.time_to < self.time_from or (self.time_to == self.time_from and not self.time_to_inclusive)
        return False

    def time_from_ms(self) -> int | None:
        """The lower time bound in whole milliseconds (records are stamped in milliseconds)."""
        if self.time_from is None:
            return None
        return -((-self.time_from) // 1000)


@dataclass(frozen=True)
class Task:
    """One byte range of one segment to read (picklable: a Spark partition carries one)."""

    segment: Segment
    start: int = 0
    stop: int | None = None
    #: ``start`` is an index entry's position: the batch there must hold offsets up to this one
    check_offset: int | None = None
    #: ``start`` is where the task before it (same segment) stops
    split: bool = False
    #: ``stop`` came from the index as where the offsets from this one on begin: the batch there must bear it out
    stop_check: int | None = None
    #: ``start`` came from a time index entry (offset, timestamp): the batch holding the offset must bear it out
    time_check: tuple | None = None
    #: what planning found wrong with the segment's index files (a row of the read)
    note: LogProblem | None = None


def plan_partition(fs, part: Partition, bounds: Bounds, *, split_bytes: int | None = None) -> list[Task]:
    """The tasks that read what ``bounds`` keeps of one partition."""
    if bounds.empty or (bounds.topics is not None and part.topic not in bounds.topics) or \
            (bounds.partitions is not None and part.partition not in bounds.partitions):
        return []
    lo, hi = bounds.offset_from, bounds.offset_to
    t0 = bounds.time_from_ms()
    tasks = []
    for seg in part.segments:
        last = None if seg.next_offset is None else seg.next_offset - 1
        if hi is not None and seg.base_offset >= hi:
            break
        if lo is not None and last is not None and last < lo:
            continue
        first = lo if lo is not None and lo > seg.base_offset else None
        time_check = note = None
        if t0 is not None and seg.timeindex is not None:
            found = TimeIndex(fs, seg.timeindex, seg.timeindex_size, seg.base_offset).last_below(t0)
            if found is not None:
                older = found[1]  # every record up to this offset is older than t0 (if the entry tells the truth)
                if last is not None and seg.base_offset <= older == last:
                    continue
                if last is None or older < last:
                    # the scan checks that the batch holding it ends there with that largest timestamp
                    first, time_check = max(first or 0, older + 1), found[::-1]
                else:  # an entry past the segment's last offset cannot be true: the segment is read whole
                    note = LogProblem("index", seg.timeindex, None, None,
                                      f"the time index says offset {older} has the largest timestamp so far, "
                                      f"{found[0]}, but the segment's offsets end at {last}: the segment is read "
                                      "from its start instead", seg.topic, seg.partition, seg.base_offset)
        index = None if seg.index is None else OffsetIndex(fs, seg.index, seg.index_size, seg.base_offset)
        start, check = 0, None
        if first is not None and index is not None:
            k, off, pos = index.lookup(first)
            if k >= 0:
                start, check = pos, off
        stop = stop_check = None
        if hi is not None and index is not None and (last is None or hi <= last):
            stop = index.position_after(hi - 1)
            if stop is not None:
                stop_check = hi  # the scan checks that the batch there starts at or above it
        end = seg.size if stop is None else stop
        if split_bytes and index is not None and end - start > split_bytes:
            a, a_check, split, a_time = start, check, False, time_check
            while True:
                nxt = index.from_position(a + split_bytes)
                if nxt is None or nxt[2] >= end or nxt[2] <= a:
                    tasks.append(Task(seg, a, stop, a_check, split, stop_check, a_time, note))
                    break
                tasks.append(Task(seg, a, nxt[2], a_check, split, None, a_time, note))
                a, a_check, split, a_time, note = nxt[2], nxt[1], True, None, None
        else:
            tasks.append(Task(seg, start, stop, check, False, stop_check, time_check, note))
    return tasks


# ---------------------------------------------------------------------------
# records


def walk_columns(names) -> tuple:
    """The columns the walk fills for an output of ``names`` (offset always: bounds and sequences need it)."""
    want = {n for n in names if n in WALK_COLUMNS} | {"offset", "timestamp"}
    return tuple(n for n in WALK_COLUMNS if n in want)


class _PerRecord:
    """A batch field spread over the records it holds (the records kept: all, a slice, or a mask)."""

    def __init__(self, counts: np.ndarray):
        self.counts = counts
        self.sel = None          # None, (a, b) or a boolean mask
        self._which = None

    @property
    def which(self) -> np.ndarray:
        """Each record's batch."""
        if self._which is None:
            self._which = np.repeat(np.arange(len(self.counts)), self.counts)
        return self._which

    def __call__(self, values: np.ndarray) -> np.ndarray:
        if self.sel is None:
            n = int(self.counts.sum())
            if len(values) and (values == values[0]).all():
                return np.full(n, values[0], dtype=values.dtype)
            return np.repeat(values, self.counts)
        if isinstance(self.sel, tuple):
            a, b = self.sel
            return values[self.which[a:b]]
        return values[self.which[self.sel]]

    def strings(self, names: pa.Array, codes: np.ndarray, n: int) -> pa.Array:
        """A string per record: ``names[code of its batch]``."""
        if self.sel is None and len(codes) and (codes == codes[0]).all():
            return constant_string(names[int(codes[0])].as_py(), n)
        return names.take(numbers(self(codes), pa.int64()))


def records_table(win: Window, seg: Segment, names, bounds: Bounds, txn: Transactions | None) -> pa.Table:
    """The records of a window as a table of ``names`` (LOG_SCHEMA columns), after the bounds and
    (with ``txn``) the read_committed rule."""
    recs, bats = win.records, win.batches
    spread = _PerRecord(column(bats, "records"))
    keep = None
    if txn is not None:
        gone = txn.dropped(column(bats, "magic"), column(bats, "attributes"),
                           column(bats, "producer_id"), column(bats, "base_offset"))
        if gone.any():
            keep = ~gone[spread.which]
    offsets = column(recs, "offset")
    lo, hi = bounds.offset_from, bounds.offset_to
    sliced = None
    if lo is not None or hi is not None:
        if keep is None and bounds.time_from is None and bounds.time_to is None and len(offsets) and \
                bool((np.diff(offsets) >= 0).all()):
            a = 0 if lo is None else int(np.searchsorted(offsets, lo))
            b = len(offsets) if hi is None else int(np.searchsorted(offsets, hi))
            sliced = (a, b)
        else:
            m = np.ones(len(offsets), dtype=bool)
            if lo is not None:
                m &= offsets >= lo
            if hi is not None:
                m &= offsets < hi
            keep = m if keep is None else keep & m
    if bounds.time_from is not None or bounds.time_to is not None:
        col = array(recs.column("timestamp"))
        ts = to_numpy(col)
        m = valid(col)
        if bounds.time_from is not None:
            m &= ts >= bounds.time_from
        if bounds.time_to is not None:
            m &= (ts <= bounds.time_to) if bounds.time_to_inclusive else (ts < bounds.time_to)
        keep = m if keep is None else keep & m
    if sliced is not None:
        a, b = sliced
        if (a, b) != (0, len(offsets)):
            recs, offsets = recs.slice(a, b - a), offsets[a:b]
            spread.sel = (a, b)
    elif keep is not None and not keep.all():
        recs, offsets = recs.filter(bools(keep)), offsets[keep]
        spread.sel = keep
    n = recs.num_rows

    def batch(name):
        return spread(column(bats, name))

    cols = []
    for name in names:
        if name in WALK_COLUMNS:
            cols.append(recs.column(name))
        elif name == "topic":
            cols.append(constant_string(seg.topic, n))
        elif name == "partition":
            cols.append(constant_int(seg.partition, n, pa.int32()))
        elif name == "producerId":
            cols.append(numbers(batch("producer_id"), pa.int64()))
        elif name == "producerEpoch":
            cols.append(numbers(batch("producer_epoch"), pa.int16()))
        elif name == "sequence":
            base = batch("base_sequence").astype(np.int64)
            seq = base + (offsets - batch("base_offset"))
            seq = np.where(seq > _I32_MAX, seq - _I32_MAX - 1, seq)  # sequences wrap past int32's top (Kafka's rule)
            cols.append(numbers(np.where(base < 0, -1, seq), pa.int32()))
        elif name in ("isTransactional", "isControl"):
            bit = ATTR_TRANSACTIONAL if name == "isTransactional" else ATTR_CONTROL
            flags = (column(bats, "magic") >= 2) & ((column(bats, "attributes") & bit) != 0)
            cols.append(bools(spread(flags)))
        elif name == "codec":
            cols.append(spread.strings(_CODECS, column(bats, "codec") & 7, n))
        elif name == "leaderEpoch":
            cols.append(numbers(batch("leader_epoch"), pa.int32()))
        elif name == "magic":
            cols.append(numbers(batch("magic"), pa.int8()))
        elif name == "segment":
            cols.append(constant_int(seg.base_offset, n, pa.int64()))
        elif name == "position":
            cols.append(numbers(batch("position"), pa.int64()))
        elif name == "error":
            cols.append(karrow._all_null(pa.large_string(), n))
    return pa.Table.from_arrays(cols, schema=schema_of(names))


_SCHEMAS: dict = {}


def schema_of(names) -> pa.Schema:
    key = tuple(names)
    got = _SCHEMAS.get(key)
    if got is None:
        got = _SCHEMAS[key] = pa.schema([LOG_SCHEMA.field(n) for n in key])
    return got


def problem_table(p: LogProblem, names) -> pa.Table:
    """The one row that stands for a damaged region: where it is, and the error."""
    row = {"topic": p.topic, "partition": p.partition, "segment": p.segment, "position": p.position,
           "error": str(p)}
    schema = schema_of(names)
    cols = []
    for f in schema:
        v = row.get(f.name)
        if v is None:
            cols.append(pa.nulls(1, f.type))
        elif f.type == pa.large_string():
            cols.append(constant_string(v, 1))
        else:
            cols.append(constant_int(v, 1, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def read_task(fs, task: Task, names, bounds: Bounds, *, txn: Transactions | None = None, control: bool = False,
              check_crc: bool = True, window: int, limits=None, problems: list | None = None):
    """The tables (``names`` columns) of one task, in file order: records, and one
    row per damaged region (also appended to ``problems``)."""
    seg = task.segment
    if task.note is not None:
        if problems is not None:
            problems.append(task.note)
        yield problem_table(task.note, names)
    scan = Scan(fs, seg, start=task.start, stop=task.stop, check_offset=task.check_offset, split=task.split,
                stop_offset=bounds.offset_to, columns=walk_columns(names), control=control, check_crc=check_crc,
                window=window, limits=limits, stop_check=task.stop_check, time_check=task.time_check)
    for item in scan:
        if isinstance(item, Window):
            table = records_table(item, seg, names, bounds, txn)
            if table.num_rows:
                yield table
        else:
            if problems is not None:
                problems.append(item)
            yield problem_table(item, names)
