"""Opening and reading a Kafka log (:func:`open_log`): see the package's documentation."""


from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from .._limits import DEFAULT_MAX_HEADERS_PER_BATCH, DEFAULT_MAX_HEADERS_PER_RECORD, DEFAULT_MAX_RECORDS_PER_BATCH
from ..arrow.buffers import numbers, strings
from ..errors import KafkaProtocolError
from ..records import DEFAULT_MAX_DECOMPRESSED_SIZE
from ._files import Partition, Segment, discover, resolve
from ._read import NAMES, Bounds, Task, plan_partition, read_task, schema_of
from ._scan import DEFAULT_WINDOW, LogProblem, Scan
from ._txn import Transactions, partition_transactions

__all__ = ["Log", "LogDamageError", "LogReader", "ReadOptions", "open_log"]

ISOLATIONS = ("read_uncommitted", "read_committed")


class LogDamageError(KafkaProtocolError):
    """A damaged region of a segment, with ``damage="raise"`` (``problem``: the :class:`LogProblem`)."""

    def __init__(self, problem: LogProblem):
        self.problem = problem
        super().__init__(problem.message, "log segment", problem.position, None)
        self.args = (str(problem),)


@dataclass(frozen=True)
class ReadOptions:
    """How records are read (what a Spark task needs besides its :class:`Task`)."""

    names: tuple
    bounds: Bounds
    isolation: str = "read_uncommitted"
    control: bool = False
    check_crc: bool = True
    window: int = DEFAULT_WINDOW
    damage: str = "rows"
    limits: tuple = ()
    #: an internal topic's decoder (:mod:`kafkaproto.log.internal`): its typed table instead of the records
    decoder: str | None = None

    @staticmethod
    def make(columns=None, *, offsets=None, timestamps=None, topics=None, partitions=None,
             isolation="read_uncommitted", control=False, check_crc=True, window=DEFAULT_WINDOW, damage="rows",
             max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
             max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
             max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH, decoder=None) -> ReadOptions:
        if decoder is not None:
            from .internal import DECODERS, SOURCE_COLUMNS

            if decoder not in DECODERS:
                raise ValueError(f"no decoder {decoder!r} (decoders: {', '.join(DECODERS)})")
            if columns is not None:
                raise ValueError("a decoder's table has its own columns: give columns or decoder, not both")
            columns = SOURCE_COLUMNS
            topics = [DECODERS[decoder][1]] if topics is None else topics
        names = NAMES if columns is None else tuple(columns)
        unknown = [n for n in names if n not in NAMES]
        if unknown:
            raise ValueError(f"no such column: {', '.join(unknown)} (columns: {', '.join(NAMES)})")
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, not {isolation!r}")
        if damage not in ("rows", "raise"):
            raise ValueError(f"damage must be 'rows' or 'raise', not {damage!r}")
        limits = (("max_decompressed_size", max_decompressed_size), ("max_records_per_batch", max_records_per_batch),
                  ("max_headers_per_record", max_headers_per_record), ("max_headers_per_batch", max_headers_per_batch))
        return ReadOptions(names, Bounds.of(offsets, timestamps, topics, partitions), isolation, bool(control),
                           bool(check_crc), int(window), damage, limits, decoder)


class LogReader:
    """The records of a read, as a stream of :class:`pyarrow.RecordBatch` (one per
    window of a segment, or per damaged region); ``problems`` lists the damage
    met so far.  ``read_all()`` → one table; ``to_reader()`` → a
    :class:`pyarrow.RecordBatchReader`."""

    def __init__(self, log: Log, tasks: list[Task], opts: ReadOptions, txns: dict):
        self.log, self.tasks, self.opts, self._txns = log, tasks, opts, txns
        if opts.decoder is not None:
            from .internal import internal_schema

            self.schema = internal_schema(opts.decoder)
        else:
            self.schema = schema_of(opts.names)
        self.problems: list[LogProblem] = []

    def __iter__(self):
        o = self.opts
        limits = dict(o.limits)
        for task in self.tasks:
            seg = task.segment
            txn = self._txns.get((seg.topic, seg.partition))
            seen = len(self.problems)
            for table in read_task(self.log.fs, task, o.names, o.bounds, txn=txn, control=o.control,
                                   check_crc=o.check_crc, window=o.window, limits=limits, problems=self.problems):
                if o.damage == "raise" and len(self.problems) > seen:
                    raise LogDamageError(self.problems[seen])
                if o.decoder is not None:
                    from .internal import internal_table

                    table = internal_table(o.decoder, table)
                yield from table.to_batches()

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self), schema=self.schema)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))


_SEGMENTS = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("base_offset", pa.int64()), ("next_offset", pa.int64()),
    ("file", pa.string()), ("bytes", pa.int64()), ("index_bytes", pa.int64()), ("timeindex_bytes", pa.int64()),
    ("txnindex_bytes", pa.int64()), ("state", pa.string())])


class Log:
    """The partitions found under a path: see :func:`open_log`."""

    def __init__(self, fs: pafs.FileSystem, root: str, partitions: list[Partition], problems: list[LogProblem]):
        self.fs, self.root, self.partitions = fs, root, partitions
        #: what was left out when the folders were listed, and damage found since (index files, snapshots)
        self.problems = problems
        self._txns: dict = {}
        #: the topics :func:`open_log` was asked for (Kafka's own among them are read)
        self.named_topics: frozenset = frozenset()

    def __repr__(self) -> str:
        n = sum(len(p.segments) for p in self.partitions)
        return f"Log({self.root!r}: {len(self.partitions)} partitions, {n} segments)"

    def segments(self) -> pa.Table:
        """One row per segment: topic, partition, base offset, its file and size, its index files' sizes."""
        segs = [(p, s) for p in self.partitions for s in p.segments]

        def ints(get, typ):
            return numbers([get(p, s) for p, s in segs], typ)

        nexts = [s.next_offset for _, s in segs]
        next_col = numbers([-1 if v is None else v for v in nexts], pa.int64())
        if None in nexts:
            import numpy as np

            valid = np.packbits(np.array([v is not None for v in nexts]), bitorder="little")
            next_col = pa.Array.from_buffers(pa.int64(), len(nexts), [pa.py_buffer(valid), next_col.buffers()[1]])
        return pa.Table.from_arrays([
            strings([s.topic for _, s in segs], pa.string()), ints(lambda p, s: s.partition, pa.int32()),
            ints(lambda p, s: s.base_offset, pa.int64()), next_col, strings([s.path for _, s in segs], pa.string()),
            ints(lambda p, s: s.size, pa.int64()), ints(lambda p, s: s.index_size, pa.int64()),
            ints(lambda p, s: s.timeindex_size, pa.int64()), ints(lambda p, s: s.txnindex_size, pa.int64()),
            strings([p.state for p, _ in segs], pa.string())], schema=_SEGMENTS)

    def transactions(self, part: Partition, *, window: int = DEFAULT_WINDOW, check_crc: bool = True) -> Transactions:
        """The aborted and open transactions of a partition (kept once found)."""
        key = (part.topic, part.partition, part.state)
        got = self._txns.get(key)
        if got is None:
            got = self._txns[key] = partition_transactions(self.fs, part, self.problems, window=window,
                                                           check_crc=check_crc)
        return got

    def plan(self, opts: ReadOptions, split_bytes: int | None = None) -> tuple[list[Task], dict]:
        """The tasks of a read, and the transactions of their partitions (read_committed).  Kafka's own
        topics found by listing a log dir are read only when named (``topics``, or a decoder)."""
        from .internal import INTERNAL_TOPICS

        tasks, txns = [], {}
        named = set(opts.bounds.topics or ()) | set(self.named_topics)
        for part in self.partitions:
            if part.listed and part.topic in INTERNAL_TOPICS and part.topic not in named:
                continue
            got = plan_partition(self.fs, part, opts.bounds, split_bytes=split_bytes)
            if got and opts.isolation == "read_committed":
                txns[(part.topic, part.partition)] = self.transactions(part, window=opts.window,
                                                                       check_crc=opts.check_crc)
            tasks += got
        return tasks, txns

    def read(self, columns=None, **kw) -> LogReader:
        """The records (``columns`` of :data:`LOG_SCHEMA`, all by default) as a :class:`LogReader`.

        Keyword arguments:
            offsets: ``(first, end)``: offsets ``first <= offset < end`` (None: unbounded);
                found with the ``.index`` files, whole segments outside are not opened.
            timestamps: ``(start, end)``: record timestamps ``start <= t < end`` (datetimes,
                naive ones UTC, or milliseconds).  The ``.timeindex`` files move the start:
                records before it are older (timestamps are the largest so far there);
                the end filters only (a producer's timestamps need not grow).
            topics, partitions: only these.
            isolation: ``"read_committed"`` leaves out the records of aborted transactions
                (the ``.txnindex`` files, and ABORT markers) and of transactions still
                open when the log was copied (its producer snapshot, and the batches after it).
            control: control records (transaction markers) are rows too (``isControl`` true).
            check_crc: verify each batch's checksum (a mismatch is damage).
            window: bytes of a segment read and walked at a time.
            damage: ``"rows"`` (a row per damaged region) or ``"raise"``.
            decoder: read an internal topic as its typed table (``"offsets"``, ``"transaction-log"``,
                ``"share-group-state"``, ``"cluster-metadata"``, ``"remote-log-metadata"``:
                :mod:`kafkaproto.log.internal`); its topic is read unless ``topics`` says otherwise.
            max_decompressed_size, max_records_per_batch: caps per batch, as in
                :func:`kafkaproto.records.decode` (a batch past one is damage).
            max_headers_per_record, max_headers_per_batch: the same.
        """
        opts = ReadOptions.make(columns, **kw)
        tasks, txns = self.plan(opts)
        return LogReader(self, tasks, opts, txns)

    def read_table(self, columns=None, **kw) -> pa.Table:
        """:meth:`read`, whole, as one table."""
        return self.read(columns, **kw).read_all()

    def scan(self, segment: Segment, **kw) -> Scan:
        """The batches of one segment (:class:`Window` items) and its damage (:class:`LogProblem`), in file order."""
        return Scan(self.fs, segment, **kw)


def open_log(where, *, filesystem=None, topics=None, partitions=None, deleted: bool = False,
             states=None) -> Log:
    """Open a Kafka log folder: a partition folder (``orders-0``), a log dir
    (every partition folder in it), or a topic (``<log dir>/orders``: the
    folders ``orders-<n>`` beside it); a local path, a URI any pyarrow
    filesystem reads (``s3://bucket/path?endpoint_override=...``), or a path
    in ``filesystem``.  A list of them (a broker's several ``log.dirs``)
    opens them all.

    ``topics`` / ``partitions`` keep only those.  A deleted topic's folders
    (``...-delete``) are read with ``deleted=True``; ``states`` names the
    folder kinds to read precisely (``("", "delete", "future", "stray")``).
    """
    wanted = states if states is not None else (("", "delete") if deleted else ("",))
    places = list(where) if isinstance(where, (list, tuple)) else [where]
    fs = root = None
    parts, problems = [], []
    for place in places:
        pfs, path = resolve(place, filesystem)
        fs = fs or pfs
        root = root or path
        found, notes = discover(pfs, path, topics=None if topics is None else set(topics),
                                partitions=None if partitions is None else set(partitions), states=wanted)
        parts += found
        problems += [LogProblem(kind, p, None, None, text) for kind, p, text in notes]
    parts.sort(key=lambda p: (p.topic, p.partition, p.state))
    log = Log(fs, os.fspath(root) if root else "", parts, problems)
    log.named_topics = frozenset(topics or ())
    return log
