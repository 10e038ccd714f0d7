"""Captured Kafka traffic as a dataset: open -> plan -> read -> problems, in
the shape of :func:`kafkaproto.log.open_log` (and of pyarrow.dataset).

>>> from kafkaproto.capture import open_capture
>>> ds = open_capture(["traffic.pcap", "tap-output/"], ports=[9092])      # doctest: +SKIP
>>> ds.read_table("responses", columns=["api", "client_id", "latency_us"],
...               filters=[("api", "=", "Fetch")])                        # doctest: +SKIP
>>> reader = ds.read("records")                                           # doctest: +SKIP
>>> for batch in reader: ...                                              # pyarrow RecordBatches
>>> reader.problems                                                       # damage met, per capture

A dataset is a list of *captures*: a pcap or pcapng file, the files of one
capture rolled by ``tcpdump -C``/``-G`` (a folder of them, or a list), the
tap's output (a folder or a file of frame tables), or a raw stream of
size-prefixed request frames.  Each is read into the tables of
:mod:`kafkaproto.capture.tables` -- ``frames`` (the walker's frame table),
``requests``, ``responses``, ``records``, ``record_sets``, ``unanswered`` --
row for row the same however it is split.

Planning (:meth:`CaptureDataset.plan`) makes the *tasks* an engine runs,
each on its own (a worker process, a Spark task):

- :class:`WholeTask` -- captures read whole, small ones together;
- :class:`SegmentTask` -- some connections of a large pcap/pcapng capture:
  the capture's files are first indexed in byte ranges (:class:`RangeTask`,
  :meth:`CaptureDataset.index`: the record and TCP headers only, into TCP
  segment *positions*), the positions grouped by connection and dealt into
  tasks of about ``split_bytes`` of payload; a task reads its connections'
  payloads from the files.  A connection is never split, so each task
  reassembles, frames and pairs exactly what a whole read would.

Reading (:meth:`CaptureDataset.read`, :meth:`CaptureDataset.read_task`)
builds only the columns asked for and pushes the filters it can into the
walk: frames of api keys, brokers, captures or times the filters leave out
are not decoded, and connections to other brokers, or with no packet in the
time range, are left out of a plan before any payload is read.  The filters
are then applied exactly to the rows.

Damage (a cut or damaged file, bytes that are no capture) never stops a
read: the capture is read as far as it goes and each damaged place is a
:class:`CaptureProblem` (``damage="raise"`` raises
:class:`CaptureDamageError` instead); every byte is accounted for in the
capture's :class:`~kafkaproto.capture.Accounting`.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import buffers as ab
from ..errors import KafkaProtocolError
from ..filters import normalize
from ..messages import APIS, api_name
from .accounting import Accounting
from .formats.files import exists, file_size, is_folder, listing, resolve
from .formats.ranges import (
    STATS_KEY,
    Files,
    connection_frames,
    file_order,
    packet_files,
    plan_ranges,
    range_accounting,
    read_range,
    read_ranges_checked,
    redo_range,
    segment_schema,
)
from .frames import BATCH_BYTES, BATCH_ROWS, FrameBatch
from .read import capture_kind, read_frame_batches
from .tables import (
    FETCH,
    METADATA,
    PRODUCE,
    TABLES,
    TASK_TABLES,
    WAITS,
    CaptureDecoder,
    accounting_batch,
    repeat,
    table_schema,
)
from .walker.streams import Extractor

__all__ = ["DEFAULT_SPLIT", "CaptureDamageError", "CaptureDataset", "CaptureProblem", "CaptureReader",
           "CaptureSource", "Filters", "Index", "Plan", "RangeTask", "SegmentTask", "WholeTask", "open_capture",
           "record_columns_of", "source_schema"]

#: bytes of capture a task reads, by default
DEFAULT_SPLIT = 128 << 20
#: captures read whole in one task, at most
GROUP_MAX = 64
_FEED_ROWS = 8192
_NO_TS = np.iinfo(np.int64).min
_TS = pa.timestamp("us", tz="UTC")
_KEY0 = 1 << 15  # api key k's flag is at k + _KEY0 (a frame's key may be any int16)


# ---------------------------------------------------------------------------
# what a dataset is made of


@dataclass(frozen=True)
class CaptureSource:
    """One capture of a dataset: its ``name`` (the ``capture`` column), its
    files in the order written, their size, and whether they are pcap/pcapng
    (``packets``: the files of one capture join into one, and a large one can
    be read in byte ranges)."""

    name: str
    paths: tuple[str, ...]
    bytes: int
    packets: bool

    @property
    def files(self) -> int:
        return len(self.paths)


@dataclass(frozen=True)
class CaptureProblem:
    """Damage met while reading a capture: where (``capture``, ``file``) and what."""

    capture: str
    message: str
    file: str | None = None

    def __str__(self) -> str:
        return f"{self.capture}: {self.message}"


class CaptureDamageError(KafkaProtocolError):
    """A capture is cut or damaged (``damage="raise"``); ``problem``: the first :class:`CaptureProblem`."""

    def __init__(self, problem: CaptureProblem, hint: str | None = None):
        self.problem = problem
        super().__init__(problem.message, f"capture {problem.capture}", None, None)
        text = f"capture {problem.capture} could not be read to its end: {problem.message}"
        self.args = (f"{text} ({hint})" if hint else text,)


@dataclass(frozen=True)
class WholeTask:
    """Captures read whole, one after the other: ``(name, paths)`` each."""

    items: tuple[tuple[str, tuple[str, ...]], ...]
    bytes: int = 0
    #: the pyarrow filesystem the files are in (None: local)
    filesystem: object = None


@dataclass(frozen=True)
class RangeTask:
    """A byte range of one file of a capture, for the index stage:
    ``capture`` is the capture's number in the dataset, ``rank`` the file's
    in its capture; ``first``: where the range's first record is known to
    start (None: found by searching)."""

    capture: int
    rank: int
    path: str
    start: int
    end: int
    first: int | None = None


@dataclass(frozen=True)
class SegmentTask:
    """Some connections of one large capture (``capture``: its number in the
    dataset): their TCP segment positions (an Arrow IPC stream of
    :func:`~kafkaproto.capture.formats.ranges.segment_schema`, sorted by
    connection and capture order) and the capture's files by rank."""

    name: str
    capture: int
    files: tuple[tuple[int, str], ...]
    positions: bytes
    segments: int
    bytes: int = 0


Task = WholeTask | SegmentTask


@dataclass
class Index:
    """What the index stage found: the TCP segment positions of the ranges
    (:func:`~kafkaproto.capture.formats.ranges.segment_schema`), the ranges'
    statistics rows by capture name (their files' ledgers), how many ranges
    were read again, and what could not be read."""

    positions: pa.Table
    stats: dict[str, list[dict]]
    redone: int
    problems: list[CaptureProblem]


class Plan(list):
    """The tasks of a read (a list), with what planning found: the index
    stage's statistics rows by capture name (``stats``) and its ``problems``."""

    def __init__(self, tasks: Iterable[Task] = (), stats: dict[str, list[dict]] | None = None,
                 problems: list[CaptureProblem] | None = None) -> None:
        super().__init__(tasks)
        self.stats = stats or {}
        self.problems = problems or []


# ---------------------------------------------------------------------------
# opening


def open_capture(where, *, ports: Iterable[int] | None = None, names: Sequence[str] | None = None,
                 filesystem=None, **limits: int) -> CaptureDataset:
    """Open captures as a dataset.

    ``where``: a path (a pcap/pcapng file; a folder: the files of one rolled
    capture, or the tap's output; a glob pattern; ``NAME=path,path...``), a
    list of them (one capture each), or ``{name: path or [paths]}``; local
    paths, URIs any pyarrow filesystem reads (``s3://bucket/caps?...``), or
    paths in ``filesystem``.  ``ports``: the brokers' ports (None: Kafka
    connections are found from their traffic).  ``names``: the captures'
    names (default: each file's or folder's name).  ``limits``: the state a
    walker keeps (``max_frame_size``, ``max_open_connections``,
    ``max_pending_bytes``, ``max_pending_total``).

    A path that does not exist, or a glob that matches nothing, raises
    FileNotFoundError; files of other kinds than pcap/pcapng cannot make one
    capture together (ValueError).  Captures on another filesystem than the
    local one are read whole (byte ranges need a file mapped in memory).
    """
    if isinstance(where, (str, os.PathLike)):
        where = [where]
    fs, caps = capture_sources(where, filesystem)
    if names is not None:
        if len(names) != len(caps):
            raise ValueError(f"{len(names)} names for {len(caps)} captures")
        caps = [CaptureSource(n, c.paths, c.bytes, c.packets) for n, c in zip(names, caps)]
    return CaptureDataset(caps, ports=ports, limits=limits, filesystem=fs)


def capture_sources(captures, filesystem=None) -> tuple[object, list[CaptureSource]]:
    """The filesystem (None: local) and the captures named by ``captures``
    (see :func:`open_capture`)."""
    items = list(captures.items()) if isinstance(captures, Mapping) else [(None, c) for c in captures]
    out: list[CaptureSource] = []
    seen: Counter = Counter()
    fs = filesystem
    kinds_of_fs: set = set()
    for name, spec in items:
        if name is None and isinstance(spec, str) and re.match(r"^[^/=:]+=", spec) and not os.path.exists(spec):
            name, spec = spec.split("=", 1)
            spec = spec.split(",")
        specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
        paths: list[str] = []
        for sp in specs:
            where_fs, sp = resolve(sp, filesystem)
            kinds_of_fs.add(None if where_fs is None else type(where_fs).__name__)
            fs = where_fs if where_fs is not None else fs
            if where_fs is None and any(ch in sp for ch in "*?[") and not os.path.exists(sp):
                found = sorted(glob.glob(sp))
                if not found:
                    raise FileNotFoundError(f"no file matches {sp}")
            else:
                found = [sp]
            for p in found:
                if not exists(where_fs, p):
                    raise FileNotFoundError(f"no such file or folder: {p}")
            paths += [os.path.abspath(p) if where_fs is None else p for p in found]
        if len(kinds_of_fs) > 1:
            raise ValueError("the captures of one dataset are on one filesystem: "
                             f"{', '.join(sorted(str(k) for k in kinds_of_fs))}")
        where_fs = None if None in kinds_of_fs else fs
        folder = None
        packets = False
        if len(paths) == 1 and is_folder(where_fs, paths[0]):
            rolled = packet_files(paths[0], where_fs)
            if rolled:
                packets, folder, paths = True, paths[0], rolled
        if not packets:
            kinds = {capture_kind(p, where_fs) for p in paths}
            packets = kinds <= {"pcap", "pcapng"}
            if not packets and len(paths) > 1:
                raise ValueError(f"capture {name or paths[0]}: only pcap/pcapng files can make one capture "
                                 f"together ({', '.join(sorted(kinds))})")
        if packets:
            paths = file_order(paths)
        if name is None:
            base = folder or paths[0]
            name = os.path.basename(base.rstrip("/")) or base
        seen[name] += 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        size = 0
        for p in paths:
            size += sum(n for _q, n in listing(where_fs, p)) if is_folder(where_fs, p) else file_size(where_fs, p)
        out.append(CaptureSource(name, tuple(paths), size, packets))
    return (None if None in kinds_of_fs else fs), out


def group_captures(caps: Sequence[CaptureSource], size: int, most: int = GROUP_MAX) -> list[WholeTask]:
    """Captures read whole, in tasks of up to ``size`` bytes and ``most``
    captures, largest first: many small files do not each pay a task's fixed cost."""
    groups: list[list[CaptureSource]] = []
    used = 0
    for c in sorted(caps, key=lambda c: -c.bytes):
        if groups and used + c.bytes <= size and len(groups[-1]) < most:
            groups[-1].append(c)
            used += c.bytes
        else:
            groups.append([c])
            used = c.bytes
    return [WholeTask(tuple((c.name, c.paths) for c in g), sum(c.bytes for c in g)) for g in groups]


def partition_connections(table: pa.Table, n: int) -> list[pa.Table]:
    """Segment positions (a table; statistics rows too) in ``n`` parts of
    whole connections, about equal in payload bytes, each sorted by capture,
    connection and capture order (the statistics rows go with the first)."""
    is_stats = ab.column(table, "key") == STATS_KEY
    order = pc.sort_indices(table, [("capture", "ascending"), ("key", "ascending"), ("order", "ascending")])
    table = table.take(order)
    is_stats = is_stats[ab.to_numpy(order)]
    caps = ab.column(table, "capture")
    keys = ab.column(table, "key")
    nbytes = ab.to_numpy(ab.fill_null(table["caplen"], 0))
    starts = np.flatnonzero(np.concatenate([[True], (caps[1:] != caps[:-1]) | (keys[1:] != keys[:-1])]))
    ends = np.append(starts[1:], len(keys))
    weight = np.add.reduceat(nbytes, starts) + (ends - starts) * 64 if len(starts) else np.zeros(0)
    # largest connections first, each to the part with the least so far (a
    # heap would do it in log n; the parts are few)
    load = np.zeros(n)
    owner = np.zeros(len(starts), dtype=np.int64)
    for g in np.argsort(-weight, kind="stable"):
        p = int(np.argmin(load))
        owner[g] = p
        load[p] += weight[g]
    # rows in part order, each part's connections in their sorted order
    row_owner = np.repeat(owner, ends - starts)
    by_part = np.argsort(row_owner, kind="stable")
    counts = np.bincount(row_owner, minlength=n)
    parts = []
    at = 0
    for p in range(n):
        if counts[p]:
            parts.append(table.take(ab.numbers(by_part[at:at + counts[p]], pa.int64())))
        at += counts[p]
    stats = np.flatnonzero(is_stats)
    if len(stats) and not parts:
        parts.append(table.take(ab.numbers(stats, pa.int64())))
    return parts


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


# ---------------------------------------------------------------------------
# the dataset


class CaptureDataset:
    """Captures as tables: see :func:`open_capture` and the module's text."""

    def __init__(self, captures: Sequence[CaptureSource], *, ports: Iterable[int] | None = None,
                 limits: Mapping[str, int] | None = None, filesystem=None) -> None:
        self.captures = list(captures)
        #: the pyarrow filesystem the captures are in (None: the local one)
        self.filesystem = filesystem
        self.ports = None if ports is None else sorted({int(p) for p in ports})
        self.limits = dict(limits or {})
        unknown = set(self.limits) - {"max_frame_size", "max_open_connections", "max_pending_bytes",
                                      "max_pending_total"}
        if unknown:
            raise TypeError(f"unknown limits: {', '.join(sorted(unknown))}")


    def __repr__(self) -> str:
        return f"CaptureDataset({len(self.captures)} captures, {sum(c.bytes for c in self.captures)} bytes)"

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.captures)

    # -- planning --------------------------------------------------------------
    def layout(self, split_bytes: int = DEFAULT_SPLIT, *, whole_max: int | None = None,
               group_bytes: int | None = None, filters=None) -> tuple[list[WholeTask], list[RangeTask]]:
        """The first step of a plan: the captures read whole, small ones
        together in tasks of up to ``group_bytes`` (default: ``split_bytes``,
        at most 16 MiB), and the byte ranges (of at most ``split_bytes``) of
        the pcap/pcapng captures larger than ``whole_max`` (default:
        ``split_bytes``), for the index stage.  ``filters`` leave out whole
        captures (the ``capture`` column)."""
        if split_bytes <= 0:
            raise ValueError(f"split_bytes must be positive, not {split_bytes!r}")
        whole_max = split_bytes if whole_max is None else whole_max
        keep = Filters.of(filters).strings("capture")
        whole, ranges = [], []
        for k, c in enumerate(self.captures):
            if keep is not None and c.name not in keep:
                continue
            if not c.packets or c.bytes <= whole_max or self.filesystem is not None:
                whole.append(c)
                continue
            for rank, path in enumerate(c.paths):
                for start, end in plan_ranges(path, split_bytes):
                    ranges.append(RangeTask(k, rank, path, start, end))
        tasks = group_captures(whole, group_bytes or min(split_bytes, 16 << 20))
        if self.filesystem is not None:
            tasks = [WholeTask(t.items, t.bytes, self.filesystem) for t in tasks]
        return tasks, ranges

    def index(self, ranges: Sequence[RangeTask], *, map: Callable = map) -> Index:
        """The index stage: every range read into TCP segment positions (``map``
        runs :func:`index_range` over them: the builtin, or a pool's), the
        record chains across ranges checked and the ranges that guessed their
        first record wrong read again."""
        if not ranges:
            return Index(pa.Table.from_batches([], schema=segment_schema()), {}, 0, [])
        got = {(r.capture, r.path, r.start): batches for r, batches in zip(ranges, map(index_range, ranges))}
        batches, stats, redone = read_ranges_checked(
            got, lambda redo: list(map(_redo, [(s, first) for s, first in redo])))
        table = pa.Table.from_batches(batches, schema=segment_schema())
        by_name: dict[str, list] = {}
        problems = []
        for s in stats:
            name = self.captures[s["capture"]].name
            by_name.setdefault(name, []).append(s)
            if s["error"]:
                problems.append(CaptureProblem(name, s["error"], s["file"]))
        return Index(table, by_name, redone, problems)

    def segment_tasks(self, positions: pa.Table, *, split_bytes: int = DEFAULT_SPLIT, parts: int | None = None,
                      filters=None) -> list[SegmentTask]:
        """The positions of the index stage dealt into tasks of whole
        connections: ``parts`` tasks (default: one per ``split_bytes`` of
        payload), the connections the filters leave out (other brokers, no
        packet in the time range) left out first."""
        out: list[SegmentTask] = []
        if not positions.num_rows:
            return out
        positions = Filters.of(filters).connections(positions)
        caps = ab.column(positions, "capture") if positions.num_rows else np.zeros(0, np.int32)
        for k in np.unique(caps).tolist():
            mine = positions.filter(ab.bools(caps == k))
            payload = int(pc.sum(mine["caplen"]).as_py() or 0)
            n = parts or max(1, -(-payload // split_bytes))
            cap = self.captures[k]
            files = tuple(enumerate(cap.paths))
            for part in partition_connections(mine, n):
                real = part.filter(ab.bools(ab.column(part, "key") != STATS_KEY))
                if not real.num_rows:
                    continue
                out.append(SegmentTask(cap.name, k, files, _ipc(real.drop_columns(["info"])), real.num_rows,
                                       int(pc.sum(real["caplen"]).as_py() or 0)))
        return out

    def plan(self, split_bytes: int = DEFAULT_SPLIT, *, whole_max: int | None = None, parts: int | None = None,
             filters=None, map: Callable = map) -> Plan:
        """Every task of a read: :meth:`layout`, then :meth:`index` and
        :meth:`segment_tasks` for the captures read in ranges."""
        whole, ranges = self.layout(split_bytes, whole_max=whole_max, filters=filters)
        idx = self.index(ranges, map=map)
        tasks = [*whole, *self.segment_tasks(idx.positions, split_bytes=split_bytes, parts=parts, filters=filters)]
        return Plan(tasks, idx.stats, idx.problems)

    # -- reading ---------------------------------------------------------------
    def read(self, table: str = "frames", columns: Sequence[str] | None = None, filters=None, *,
             split_bytes: int | None = None, damage: str = "record") -> CaptureReader:
        """The rows of ``table`` (one of :data:`~kafkaproto.capture.tables.TABLES`)
        as a :class:`CaptureReader` (a stream of record batches).

        ``columns``: those of the table's schema (:func:`source_schema`) to
        build (default: all).  ``filters``: ``[(column, op, value), ...]``,
        all of which a row must pass (op: ``=``/``==``, ``!=``, ``<``, ``<=``,
        ``>``, ``>=``, ``in``, ``not in``, ``is_valid``); what they allow to
        leave unread is not read.  A :class:`pyarrow.compute.Expression`
        (``pc.field("api") == "Fetch"``), alone or in the list, is a filter
        too, applied to the rows as built: it leaves nothing unread, so
        where a term says the same, the term reads less.  ``split_bytes``:
        read large captures in byte ranges (default: whole, one after the
        other).  ``damage``: ``"record"`` (problems listed in
        ``reader.problems``) or ``"raise"``."""
        opts = ReadOptions.make(table, columns, filters, damage)
        return CaptureReader(self, self.plan(split_bytes or 1 << 62, filters=opts.filters), opts)

    def read_table(self, table: str = "frames", columns: Sequence[str] | None = None, filters=None,
                   **kw) -> pa.Table:
        """:meth:`read`, whole, as one table."""
        return self.read(table, columns, filters, **kw).read_all()

    def frame_batches(self, task: Task, *, accounts: dict[str, Accounting] | None = None,
                      batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES, strict: bool = False
                      ) -> Iterator[tuple[str, FrameBatch]]:
        """The frame batches of a task, ``(capture name, batch)``, in capture
        order within each capture; each capture's accounting is left in
        ``accounts[name]`` (complete once the iterator is exhausted).  A file
        that is no capture at all, or cannot be read, is an error in its
        accounting (``strict``: raised, :class:`CaptureFormatError` or
        OSError)."""
        accounts = accounts if accounts is not None else {}
        if isinstance(task, WholeTask):
            for name, paths in task.items:
                acc = accounts.setdefault(name, Accounting())
                src = paths[0] if len(paths) == 1 else list(paths)
                batches = read_frame_batches(src, ports=self.ports, acc=acc, batch_rows=batch_rows,
                                             batch_bytes=batch_bytes, filesystem=task.filesystem, **self.limits)
                while True:
                    try:
                        fb = next(batches)
                    except StopIteration:
                        break
                    except (ValueError, OSError) as exc:  # not a capture at all, unreadable
                        if strict:
                            raise
                        acc.errors.append(f"{name}: {exc}")
                        break
                    yield name, fb
            return
        positions = _from_ipc(task.positions).to_batches(max_chunksize=_FEED_ROWS)
        yield from self.position_frames(positions, {task.capture: task.name},
                                        {(task.capture, rank): path for rank, path in task.files},
                                        accounts=accounts, batch_rows=batch_rows, batch_bytes=batch_bytes)

    def position_frames(self, batches: Iterable[pa.RecordBatch], names: Mapping[int, str],
                        files: Mapping[tuple[int, int], str], *, accounts: dict[str, Accounting] | None = None,
                        batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES
                        ) -> Iterator[tuple[str, FrameBatch]]:
        """The frame batches of TCP segment positions (record batches of
        :func:`~kafkaproto.capture.formats.ranges.segment_schema` sorted by
        capture, connection and capture order, as a Spark partition gets
        them; statistics rows are skipped), ``(capture name, batch)``.
        ``names``: capture number -> name; ``files``: (capture number, file
        rank) -> path, read mapped in memory."""
        accounts = accounts if accounts is not None else {}
        mapped = Files(dict(files))

        def extractor(cap: int):
            acc = accounts.setdefault(names[cap], Accounting())
            return Extractor(self.ports, acc, batch_rows=batch_rows, batch_bytes=batch_bytes, **self.limits)

        try:
            for cap, fb in connection_frames(batches, mapped, extractor):
                yield names[cap], fb
        finally:
            mapped.close()

    def read_task(self, task: Task, tables: Sequence[str] = ("frames",), columns: Mapping[str, Sequence[str]]
                  | None = None, filters=None, *, accounts: dict[str, Accounting] | None = None,
                  topic_ids: bool = False) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The rows one task gives of each of ``tables``, as ``(table, batch)``
        pairs, in one pass over its frames.  ``columns``: ``{table: names}``
        (default: every column); ``filters``: applied to every table that has
        their columns (an expression that fits none of them is a ValueError).
        Each capture's accounting is left in ``accounts``; ``topic_ids``: the
        ``topic_ids`` rows too (every topic id the captures' Metadata
        responses named)."""
        accounts = accounts if accounts is not None else {}
        return self.table_rows(self.frame_batches(task, accounts=accounts), tables, columns, filters,
                               accounts=accounts, topic_ids=topic_ids)

    def table_rows(self, frames: Iterable[tuple[str, FrameBatch]], tables: Sequence[str] = ("frames",),
                   columns: Mapping[str, Sequence[str]] | None = None, filters=None, *,
                   accounts: dict[str, Accounting] | None = None, topic_ids: bool = False,
                   decoders: dict[str, CaptureDecoder] | None = None) -> Iterator[tuple[str, pa.RecordBatch]]:
        """:meth:`read_task` over frame batches given (:meth:`frame_batches`,
        :meth:`position_frames`): ``accounts`` must be the one they fill.
        ``decoders``: each capture's decoder by name, to go on with (what
        spans batches: topic ids, the waits long polls asked for); those
        made here are added."""
        filt = Filters.of(filters)
        for k, e in enumerate(filt.exprs):
            if all(filt.reads(t)[k] is None for t in tables):
                raise ValueError(f"filter {e}: applies to none of the tables read ({', '.join(tables)}): "
                                 f"{_expr_problem(e, source_schema(tables[0]))}")
        rows = [_Rows(t, (columns or {}).get(t) or table_schema_names(t), filt) for t in tables]
        record_columns = _record_columns(rows)
        bodies = [r for r in rows if r.table not in ("frames", "unanswered")]
        accounts = accounts if accounts is not None else {}
        decoders = decoders if decoders is not None else {}
        for name, fb in frames:
            dec = decoders.get(name)
            if dec is None:
                dec = decoders[name] = CaptureDecoder(name, accounts[name], record_columns)
            decoded = None
            if bodies:
                want = np.zeros(len(fb), dtype=bool)
                for r in bodies:
                    want |= r.decode_rows(fb)
                sets = any(r.table in ("records", "record_sets") for r in bodies)
                decoded = dec.batch(fb, want, record_sets=sets) if len(fb) else []
            for r in rows:
                for b in r.of(name, fb, dec, decoded):
                    yield r.table, b
        if topic_ids:
            for dec in decoders.values():
                yield from dec.topic_id_rows()


def _redo(item):
    s, first = item
    return redo_range(s, first, s["capture"])


def index_range(task: RangeTask) -> list[pa.RecordBatch]:
    """One range of the index stage → its segment positions, the last batch its statistics row."""
    return list(read_range(task.path, task.start, task.end, capture=task.capture, rank=task.rank, first=task.first))


# ---------------------------------------------------------------------------
# reading a table


def source_schema(table: str) -> pa.Schema:
    """The Arrow schema of a dataset's table: ``frames`` is the walker's frame
    table with the capture's name first; the others are those of
    :mod:`kafkaproto.capture.tables`."""
    if table not in TABLES:
        raise ValueError(f"no table {table!r} (tables: {', '.join(TABLES)})")
    if table == "frames":
        from .frames import frame_schema

        return pa.schema([pa.field("capture", pa.string()), *frame_schema()])
    return table_schema(table)


def table_schema_names(table: str) -> list[str]:
    return source_schema(table).names


@dataclass(frozen=True)
class ReadOptions:
    """What a read builds: its table, columns and filters, and what damage does."""

    table: str
    columns: tuple[str, ...]
    filters: Filters
    damage: str = "record"

    @staticmethod
    def make(table: str, columns=None, filters=None, damage: str = "record") -> ReadOptions:
        schema = source_schema(table)
        names = tuple(schema.names) if columns is None else tuple(columns)
        unknown = [n for n in names if schema.get_field_index(n) < 0]
        if unknown:
            raise ValueError(f"table {table} has no column {', '.join(unknown)} (columns: {', '.join(schema.names)})")
        if damage not in ("record", "raise"):
            raise ValueError(f"damage must be 'record' or 'raise', not {damage!r}")
        return ReadOptions(table, names, Filters.of(filters, table), damage)


class CaptureReader:
    """The rows of a read, as a stream of :class:`pyarrow.RecordBatch`;
    ``problems`` lists the damage met so far and ``accounting`` each
    capture's :class:`~kafkaproto.capture.Accounting` (both complete once the
    stream is read); ``read_all()`` → one table; ``to_reader()`` → a
    :class:`pyarrow.RecordBatchReader`."""

    def __init__(self, dataset: CaptureDataset, tasks: Sequence[Task], opts: ReadOptions) -> None:
        self.dataset, self.tasks, self.opts = dataset, list(tasks), opts
        full = source_schema(opts.table)
        self.schema = pa.schema([full.field(n) for n in opts.columns])
        self.stats = getattr(tasks, "stats", {})
        self.problems: list[CaptureProblem] = list(getattr(tasks, "problems", []))
        self.accounting: dict[str, Accounting] = {}

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        o = self.opts
        if o.damage == "raise" and self.problems:
            raise CaptureDamageError(self.problems[0])
        for task in self.tasks:
            accounts: dict[str, Accounting] = {}
            for _table, batch in self.dataset.read_task(task, (o.table,), {o.table: o.columns}, o.filters,
                                                        accounts=accounts):
                if batch.num_rows:
                    yield batch
            for name, acc in accounts.items():
                self.accounting.setdefault(name, Accounting()).merge(acc)
                for error in acc.errors:
                    problem = CaptureProblem(name, error)
                    self.problems.append(problem)
                    if o.damage == "raise":
                        raise CaptureDamageError(problem)

        # the captures read in ranges: their files' ledgers, from the index stage
        for name, stats in self.stats.items():
            self.accounting.setdefault(name, Accounting()).merge(range_accounting(stats))

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self), schema=self.schema)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))


# ---------------------------------------------------------------------------
# filters


_CMP = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
        ">=": pc.greater_equal}
_NP = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
       ">=": np.greater_equal}


def _us(v) -> int:
    """A time (datetime: naive is UTC; a date; or microseconds since the epoch) → microseconds."""
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        delta = v - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(v, _dt.date):
        return _us(_dt.datetime(v.year, v.month, v.day))
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    raise TypeError(f"not a time: {v!r}")


def _expr_problem(expr: pc.Expression, schema: pa.Schema) -> str | None:
    """Why ``expr`` cannot filter rows of ``schema`` (a column it names that
    the schema lacks, operands no kernel takes, not a boolean), or None."""
    try:
        schema.empty_table().filter(expr)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        text = str(exc)
        m = re.search(r"No match for FieldRef\.Name\((.*?)\)", text)
        return f"no column {m.group(1)}" if m else text.splitlines()[0]
    return None


class Filters:
    """Filters of a read: ``(column, op, value)`` terms and pyarrow
    expressions, all of which a row must pass.  The terms are applied
    exactly to the rows given (:meth:`mask`) and read for what need not be
    read at all (api keys, time range, brokers, captures); an expression is
    applied to the rows only (:meth:`apply`): it can test anything pyarrow
    can, but leaves nothing unread."""

    __slots__ = ("terms", "exprs", "_reads")

    def __init__(self, terms: Sequence[tuple[str, str, object]] = (), exprs: Sequence[pc.Expression] = ()) -> None:
        self.terms = tuple(terms)
        self.exprs = tuple(exprs)
        self._reads: dict[str, list[frozenset | None]] = {}

    @staticmethod
    def of(filters, table: str | None = None) -> Filters:
        """``filters`` (None, a :class:`Filters`, terms: see
        :mod:`kafkaproto.filters`, a :class:`pyarrow.compute.Expression`, or a
        list of terms and expressions) checked against ``table``'s columns: a
        column it lacks, a value its column cannot hold, or an expression
        pyarrow cannot evaluate on the table as a filter is a ValueError."""
        if isinstance(filters, Filters):
            return filters
        exprs: list[pc.Expression] = []
        if isinstance(filters, pc.Expression):
            filters, exprs = None, [filters]
        elif isinstance(filters, list) and any(isinstance(f, pc.Expression) for f in filters):
            exprs = [f for f in filters if isinstance(f, pc.Expression)]
            filters = [f for f in filters if not isinstance(f, pc.Expression)]
        schema = source_schema(table) if table is not None else None
        terms = []
        for col, op, value in normalize(filters):
            if schema is not None:
                i = schema.get_field_index(col)
                if i < 0:
                    raise ValueError(f"filter on {col}: table {table} has no such column")
                _check_value(col, schema.field(i).type, op, value)
            if col == "ts" and op != "is_valid":
                try:
                    value = tuple(None if v is None else _us(v) for v in value) if op in ("in", "not in") \
                        else (None if value is None else _us(value))
                except TypeError as exc:
                    raise ValueError(f"filter on ts: {exc}") from None
            terms.append((col, op, value))
        if schema is not None:
            for e in exprs:
                problem = _expr_problem(e, schema)
                if problem:
                    raise ValueError(f"filter {e}: {problem} (table {table})")
        return Filters(terms, exprs)

    def __bool__(self) -> bool:
        return bool(self.terms or self.exprs)

    def columns(self, table: str) -> set[str]:
        """The columns of ``table`` the filters read: their terms' and those
        of the expressions that apply to it (:meth:`reads`)."""
        out = {c for c, _o, _v in self.terms}
        for cols in self.reads(table):
            out |= cols or set()
        return out

    def reads(self, table: str) -> list[frozenset | None]:
        """For each expression, the columns of ``table`` it reads, or None if
        it does not apply to the table (it names a column the table lacks, or
        pyarrow cannot evaluate it there): found once a table by evaluating it
        on the table's empty schema, whole and less each column in turn."""
        if not self.exprs:
            return []
        got = self._reads.get(table)
        if got is None:
            schema = source_schema(table)
            got = self._reads[table] = [None if _expr_problem(e, schema) else frozenset(
                name for i, name in enumerate(schema.names) if _expr_problem(e, schema.remove(i)))
                for e in self.exprs]
        return got

    def apply(self, table: str, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` (rows of ``table``, every column) less the rows an
        expression that applies to the table leaves out (false or null)."""
        for e, cols in zip(self.exprs, self.reads(table)):
            if cols is not None and batch.num_rows:
                got = pa.Table.from_batches([batch]).filter(e).combine_chunks().to_batches()
                batch = got[0] if got else batch.slice(0, 0)
        return batch

    # -- rows given ------------------------------------------------------------
    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """Which rows of ``batch`` pass every filter on its columns (None: all)."""
        out = None
        names = batch.schema.names
        for col, op, value in self.terms:
            if col not in names:
                continue
            arr = batch.column(names.index(col))
            m = _term_mask(arr, op, value)
            out = m if out is None else pc.and_(out, m)
        return out

    # -- what need not be read -------------------------------------------------
    def numbers(self, col: str, domain: np.ndarray) -> np.ndarray:
        """Which of ``domain`` (numbers) pass the filters on ``col``."""
        ok = np.ones(len(domain), dtype=bool)
        for c, op, value in self.terms:
            if c != col or op == "is_valid":
                continue
            if op in ("in", "not in"):
                vals = [v for v in value if isinstance(v, (int, np.integer)) and not isinstance(v, bool)]
                hit = np.isin(domain, np.array(vals, dtype=np.float64)) if vals else np.zeros(len(domain), bool)
                ok &= hit if op == "in" else ~hit
            elif value is None or not isinstance(value, (int, float, np.integer, np.floating)) \
                    or isinstance(value, bool):
                ok[:] = False
            else:
                ok &= _NP[op](domain.astype(np.float64), float(value))
        return ok

    def strings(self, col: str) -> set | None:
        """The values ``col`` may take (None: any), from its ``=`` and ``in`` filters."""
        got = None
        for c, op, value in self.terms:
            if c == col and op in ("==", "in"):
                vals = {v for v in (value if op == "in" else [value]) if v is not None}
                got = vals if got is None else got & vals
        return got

    def has(self, col: str) -> bool:
        return any(c == col for c, _o, _v in self.terms)

    def time_span(self) -> tuple[int, int] | None:
        """``[lo, hi]`` in microseconds that a row's ts must lie in, or None."""
        if not any(c == "ts" and op not in ("is_valid", "!=", "not in") for c, op, _v in self.terms):
            return None
        lo, hi = -(1 << 62), 1 << 62
        for c, op, value in self.terms:
            if c != "ts" or op in ("is_valid", "!=", "not in"):
                continue
            vals = [v for v in (value if op == "in" else [value]) if v is not None]
            if not vals:
                return (1, 0)
            if op in ("==", "in"):
                lo, hi = max(lo, min(vals)), min(hi, max(vals))
            elif op == ">":
                lo = max(lo, vals[0] + 1)
            elif op == ">=":
                lo = max(lo, vals[0])
            elif op == "<":
                hi = min(hi, vals[0] - 1)
            else:
                hi = min(hi, vals[0])
        return lo, hi

    def api_keys(self, table: str) -> np.ndarray | None:
        """Which api keys' frames may give rows (None: every key): a flag per
        int16 value, key ``k`` at ``k + 32768``."""
        keys = np.arange(-_KEY0, _KEY0, dtype=np.int64)
        ok = None
        if self.has("api_key"):
            ok = self.numbers("api_key", keys)
        names = self.strings("api")
        if names is not None:
            named = _named_keys(names)
            ok = named if ok is None else ok & named
        sources = self.strings("source")
        if sources is not None and table in ("records", "record_sets"):
            src = np.zeros(len(keys), dtype=bool)
            src[PRODUCE + _KEY0] = "produce" in sources
            src[FETCH + _KEY0] = "fetch" in sources
            ok = src if ok is None else ok & src
        return ok

    def connections(self, table: pa.Table) -> pa.Table:
        """Segment positions of the connections that may give rows: to one of
        the brokers named, with a packet in the time range (statistics rows kept)."""
        servers = self.strings("server")
        span = self.time_span()
        if servers is None and span is None:
            return table
        keys = ab.column(table, "key")
        keep = np.ones(len(keys), dtype=bool)
        if servers is not None:
            hit = np.zeros(len(keys), dtype=bool)
            fam = ab.column(table, "family")
            src, dst = _addresses(table["src"]), _addresses(table["dst"])
            sport, dport = ab.column(table, "sport"), ab.column(table, "dport")
            for text in servers:
                end = _endpoint(text)
                if end is None:
                    continue
                f, addr, port = end
                a = np.frombuffer(addr.ljust(16, b"\0"), dtype=np.uint8)
                hit |= (fam == f) & (((src == a).all(axis=1) & (sport == port)) |
                                     ((dst == a).all(axis=1) & (dport == port)))
            keep &= np.isin(keys, keys[hit])
        if span is not None:
            # a frame's time is that of one of its connection's packets: a
            # connection with no packet in the span gives no row in it
            ts = table["ts"]
            valid = ab.valid(ts)
            t = ab.to_numpy(ts) // 1000
            inside = valid & (t >= span[0]) & (t <= span[1])
            keep &= np.isin(keys, keys[inside])
        keep |= keys == STATS_KEY
        return table.filter(ab.bools(keep))


def _check_value(col: str, typ: pa.DataType, op: str, value) -> None:
    """A value a column of ``typ`` can be compared with (an integer column
    takes any integer: one past its type matches no row), else ValueError."""
    if op == "is_valid":
        return
    for v in (value if op in ("in", "not in") else (value,)):
        if v is None:
            continue
        if pa.types.is_timestamp(typ):
            if not isinstance(v, (_dt.date, int, np.integer)) or isinstance(v, bool):
                raise ValueError(f"filter on {col}: {v!r} is not a time")
        elif pa.types.is_integer(typ):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ValueError(f"filter on {col}: {v!r} is not an integer")
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
            if not isinstance(v, str):
                raise ValueError(f"filter on {col}: {v!r} is not a string")
        else:
            try:
                pa.scalar(v, typ)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
                raise ValueError(f"filter on {col}: {v!r} does not fit a column of type {typ}") from None


def _term_mask(arr: pa.Array, op: str, value) -> pa.Array:
    """Which values of ``arr`` pass one term (a null never passes, but for ``is_valid``)."""
    if op == "is_valid":
        return arr.is_valid()
    typ = arr.type
    if pa.types.is_timestamp(typ):
        arr, typ = arr.cast(pa.int64()), pa.int64()
    elif pa.types.is_integer(typ):
        # compare as int64, so that a value past the column's type (api_key
        # 70000) is a value no row has, not an error
        arr, typ = arr.cast(pa.int64()), pa.int64()
    if op in ("in", "not in"):
        vals = [v for v in value if v is not None]
        try:
            vals_arr = _values(vals, typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            vals_arr = pa.nulls(0, typ)
        m = pc.is_in(arr, value_set=vals_arr)
        if op == "not in":
            m = pc.invert(m)
        return ab.fill_null(pc.and_(m, arr.is_valid()), False)
    if value is None:
        return ab.bools(np.zeros(len(arr), dtype=bool))
    try:
        scalar = _values([value], typ)[0]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        # a value the column cannot hold (a string for a number, a number past int64)
        if pa.types.is_integer(typ) and isinstance(value, (int, float)) and not isinstance(value, bool):
            big = value > 0
            every = {"==": False, "!=": True, "<": big, "<=": big, ">": not big, ">=": not big}[op]
            return ab.fill_null(pc.and_(ab.bools(np.full(len(arr), every)), arr.is_valid()), False)
        raise ValueError(f"filter value {value!r} does not fit a column of type {arr.type}") from None
    return ab.fill_null(_CMP[op](arr, scalar), False)


def _values(values: list, typ: pa.DataType) -> pa.Array:
    """Filter values as an array of ``typ``: integers and strings from buffers (``pyarrow.array()``
    imports pandas), anything else through pyarrow (its errors as they are)."""
    if pa.types.is_integer(typ) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                        for v in values):
        if any(not np.iinfo(typ.to_pandas_dtype()).min <= v <= np.iinfo(typ.to_pandas_dtype()).max for v in values):
            raise OverflowError("past the column's type")
        return ab.numbers(values, typ)
    if (pa.types.is_string(typ) or pa.types.is_large_string(typ)) and all(isinstance(v, str) for v in values):
        return ab.strings(values, typ)
    return pa.array(values, typ)


def _addresses(arr) -> np.ndarray:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if not pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary(16))
    n = len(arr)
    return np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + n) * 16].reshape(n, 16)


def _endpoint(text: str):
    """``"10.0.0.1:9092"`` / ``"[::1]:9092"`` → (family, address bytes, port); None if neither."""
    import ipaddress

    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    return (4 if ip.version == 4 else 6), ip.packed, int(port)


_KEY_NAMES: dict[str, int] = {}


def _api_text(k: int) -> str:
    """A key's ``api`` text, as the decoder writes it."""
    if k not in APIS:
        return f"api{k}"
    try:
        return api_name(k)
    except KafkaProtocolError:
        return f"api{k}"


def _named_keys(names: set) -> np.ndarray:
    """The api keys whose ``api`` name is one of ``names`` (``api<key>`` for one without a schema)."""
    ok = np.zeros(1 << 16, dtype=bool)
    for n in names:
        if not isinstance(n, str):
            continue
        if n.startswith("api") and n[3:].lstrip("-").isdigit():
            k = int(n[3:])
            if -_KEY0 <= k < _KEY0 and _api_text(k) == n:
                ok[k + _KEY0] = True
            continue
        if not _KEY_NAMES:
            for k in APIS:
                _KEY_NAMES[_api_text(k)] = k
        k = _KEY_NAMES.get(n)
        if k is not None:
            ok[k + _KEY0] = True
    return ok


# ---------------------------------------------------------------------------
# frame batches -> one table's rows

_BODY = {"topics", "software_name", "software_version", "status", "trailing_bytes", "error", "wait_ms",
         "error_codes"}
_NAMED = {"topics", "topic"}
_RECORD_FIELDS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")


def record_columns_of(tables: Sequence[str], columns: Mapping[str, Sequence[str]] | None = None
                      ) -> list[str] | None:
    """What the records walk copies when ``tables`` are read with ``columns``
    (a :class:`~kafkaproto.capture.tables.CaptureDecoder`'s ``record_columns``)."""
    return _record_columns([_Rows(t, (columns or {}).get(t) or table_schema_names(t), Filters()) for t in tables])


def _record_columns(rows: list[_Rows]) -> list[str] | None:
    """What the records walk copies for these tables: the records columns
    asked for or filtered on (None: all); none when only record sets are read."""
    recs = [r for r in rows if r.table == "records"]
    if not recs:
        return [] if any(r.table == "record_sets" for r in rows) else None
    cols = set().union(*(set(r.names) | r.filters.columns("records") for r in recs))
    if set(_RECORD_FIELDS) <= cols:
        return None
    return [c for c in _RECORD_FIELDS if c in cols]


class _Rows:
    """One table's rows (the columns asked for, the filters applied) from
    the frame batches of a task."""

    def __init__(self, table: str, names: Sequence[str], filters: Filters) -> None:
        self.table, self.names, self.filters = table, list(names), filters
        self.schema = source_schema(table)
        self.keys = filters.api_keys(table)
        self.span = filters.time_span()
        self.servers = filters.strings("server")
        self.captures = filters.strings("capture")
        cols = set(names)
        read = filters.columns(table)
        if table in ("requests", "responses"):
            self.bodies = bool((cols | read) & _BODY)
        else:
            self.bodies = table in ("records", "record_sets")
        self.topics = bool((cols | read) & _NAMED)
        self.waits = table == "responses" and "wait_ms" in cols | read

    def of(self, capture: str, fb: FrameBatch, dec: CaptureDecoder, decoded) -> Iterator[pa.RecordBatch]:
        if self.captures is not None and capture not in self.captures:
            return
        if not len(fb) and not fb.unanswered:
            return
        if self.table == "frames":
            if not len(fb):
                return
            rb = fb.to_arrow()
            got = [pa.RecordBatch.from_arrays([repeat(capture, rb.num_rows), *rb.columns], schema=self.schema)]
        elif self.table == "unanswered":
            got = [b for _t, b in dec.unanswered(fb)]
        else:
            got = [b for t, b in (decoded or []) if t == self.table]
        for b in got:
            m = self.filters.mask(b)
            if m is not None:
                b = b.filter(m)
            if self.filters.exprs:
                b = self.filters.apply(self.table, b)
            yield b.select(self.names)

    def decode_rows(self, fb: FrameBatch) -> np.ndarray:
        """The rows whose bodies are decoded for this table: those that may
        give rows, and those that name what later rows show."""
        r = fb.rows
        n = len(r)
        if not self.bodies:
            return np.zeros(n, dtype=bool)
        keys = r["api_key"].astype(np.int64)
        paired = (r["flags"] & 1) != 0
        is_req = r["direction"] == 0
        want = paired.copy()
        if self.table == "requests":
            want &= is_req
        elif self.table == "responses":
            want &= ~is_req
        else:  # records and record sets: Produce requests, Fetch responses
            want &= (is_req & (keys == PRODUCE)) | (~is_req & (keys == FETCH))
        if self.keys is not None:
            want &= self.keys[keys + _KEY0]
        if self.span is not None:
            ts = r["ts"]
            us = ts // 1000
            want &= (ts != _NO_TS) & (us >= self.span[0]) & (us <= self.span[1])
        if self.servers is not None:
            conns = fb.conns
            ok = np.array([conns[i].server in self.servers for i in range(len(conns))], dtype=bool)
            want &= ok[r["conn"]] if len(ok) else False
        if self.topics:
            want |= paired & ~is_req & (keys == METADATA)
        if self.waits:  # a long poll's response shows the wait its request asked for
            polls = paired & is_req & np.isin(keys, list(WAITS))
            if self.keys is not None:
                polls &= self.keys[keys + _KEY0]
            want |= polls
        return want


# ---------------------------------------------------------------------------
# whole captures as (table, batch) pairs


def decode_capture(path, *, capture: str | None = None, ports=None, batch_rows: int = BATCH_ROWS,
                   batch_bytes: int = BATCH_BYTES) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Every row of one capture (a file, or the files of one rolled capture)
    as ``(table, batch)`` pairs, the ``topic_ids`` rows and then the
    ``accounting`` rows last.  ``capture`` names the capture in the rows
    (default: the file name).  A file that is no capture at all gives only
    accounting rows, with the reason in ``errors``."""
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if capture is None:
        capture = os.path.basename(os.fspath(paths[0]).rstrip("/"))
    ds = CaptureDataset([CaptureSource(capture, tuple(os.fspath(p) for p in paths), 0, len(paths) > 1)], ports=ports)
    accounts: dict[str, Accounting] = {}
    task = WholeTask(((capture, tuple(os.fspath(p) for p in paths)),))
    yield from ds.read_task(task, TASK_TABLES, accounts=accounts, topic_ids=True)
    yield "accounting", accounting_batch(capture, accounts.get(capture, Accounting()))
