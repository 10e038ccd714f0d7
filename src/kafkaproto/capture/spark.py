"""Captures as Spark tables: ``spark.read.format("kafkaproto.capture")``, a
Python data source (``pyspark.sql.datasource``, Spark 4.1 and later; classic
sessions and Spark Connect) over a capture dataset
(:func:`kafkaproto.capture.open_capture`).

>>> from kafkaproto import sources
>>> sources.register(spark)            # once per session: kafkaproto.capture and kafkaproto.log
>>> fetches = (spark.read.format("kafkaproto.capture").option("table", "responses")
...            .load("traffic.pcap").where("api = 'Fetch'"))
>>> fetches.groupBy("client_id").agg(F.expr("percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)"))

Tables (``table``): ``frames`` (the walker's frame table, no body decoded,
the capture's name first), ``requests``, ``responses``, ``records``,
``record_sets`` and ``unanswered``, in the columns of
:data:`kafkaproto.capture.tables.TABLE_COLUMNS`: the rows the report
writes, row for row.

Each path given to ``load`` is one capture, as the dataset takes them: a
pcap/pcapng file, a folder of the files of one rolled capture, tap output,
a raw request stream, or ``NAME=path,path``; glob patterns are expanded.
The driver and the executors must both reach the paths (a shared file
system).

Partitions are the dataset's tasks (:meth:`~kafkaproto.capture.CaptureDataset.plan`):
a capture of at most ``splitBytes`` is read whole by one task, small ones
together; a larger pcap/pcapng capture is indexed while Spark plans the
query (the record and TCP headers of its files, in C, no payload copied)
and its connections are dealt into partitions of about ``splitBytes`` of
payload.  A connection is never split.

Pushdown (needs ``spark.sql.python.filterPushdown.enabled``, which
:func:`register` sets): ``=``/``IN``/``<``/``<=``/``>``/``>=``/``IS NOT
NULL`` on ``api_key``, ``api``, ``ts``, ``server``, ``capture``, ``source``
(records, record sets) and ``direction`` (frames) are applied here, exactly
(translated by :func:`kafkaproto.filters.spark_term`, the log source's
translation too).  Frames of other api keys, other brokers or outside the
time range are not decoded; connections to other brokers, and connections
whose packets all lie outside the time range, are left out of the plan
before any payload is read (indexed captures).  Spark's Python data sources
are not told which columns a query uses: name them in a schema
(``.schema("client_id string, latency_us bigint")``) or ``option("columns",
"client_id,latency_us")`` and only those are built -- requests or responses
without a body column (``topics``, ``error_codes``, ``status``...) decode no
body at all.

Options: ``table`` (default ``frames``), ``columns``, ``splitBytes``
(default 128 MiB), ``ports`` (the brokers' ports, comma-separated; default:
Kafka connections are detected from their traffic), ``ignoreCorruptFiles``
(default false: a capture that is cut or damaged fails the query; true: it
is read as far as it goes, as the report does).

Streaming (``spark.readStream.format("kafkaproto.capture")``): one capture
that grows -- a folder tcpdump rolls its pcap files into (``-C``/``-G``),
one pcap or pcapng file being written, or the folder a running tap writes --
read by :class:`kafkaproto.capture.stream.GrowingCapture`:
every table, each row exactly once across micro-batches, rotated files
and restarts from the query's checkpoint (the walker's state between
micro-batches is kept in ``stateLocation``, a folder the driver and the
executors share; required).  Options besides the batch source's
``table``, ``columns``, ``ports`` and ``ignoreCorruptFiles``:
``startingPosition`` (``earliest``, the default, or ``latest``: what is
written from now on), ``maxBytesPerTrigger`` (capture bytes a micro-batch
reads at most; default: all there is), ``unansweredTimeout`` (a request
waiting longer than this, in capture time, is an ``unanswered`` row at once,
e.g. ``30s``; default: when its connection closes).  A micro-batch is one
task: the walk over a capture is one sequence.  ``trigger(availableNow=True)``
reads what is there when the query starts and stops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, SupportsTriggerAvailableNow

from .. import _options
from ..filters import spark_term
from .dataset import DEFAULT_SPLIT, CaptureDamageError, CaptureDataset, CaptureProblem, Filters, open_capture
from .dataset import source_schema as _schema
from .stream import GrowingCapture, Offset
from .tables import TABLES

__all__ = ["NAME", "KafkaCaptureDataSource", "register", "spark_schema"]

#: the source's format name
NAME = "kafkaproto.capture"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: the columns whose filters the reader takes (pushed into the walk, applied exactly)
TAKEN = ("api_key", "api", "ts", "server", "capture", "direction", "source")


def spark_schema(table: str, names: Sequence[str] | None = None):
    """The Spark schema of ``table`` (or of its columns ``names``)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = _schema(table)
    names = schema.names if names is None else list(names)
    return StructType([StructField(n, from_arrow_type(schema.field(n).type), True) for n in names])


def register(spark, *, pushdown: bool = True) -> None:
    """Register the data source with a session (classic or Spark Connect);
    ``pushdown=True`` turns on ``spark.sql.python.filterPushdown.enabled``
    (a reader that takes filters fails without it), ``pushdown=False``
    registers a reader that takes none."""
    if pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.dataSource.register(KafkaCaptureDataSource)
    else:
        spark.dataSource.register(KafkaCaptureDataSourceNoPushdown)


class KafkaCaptureDataSource(DataSource):
    """``spark.read.format("kafkaproto.capture")``: captured Kafka traffic as tables (see the module's text)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _table(self) -> str:
        table = str(self.options.get("table") or "frames").strip().lower()
        if table not in TABLES:
            raise ValueError(f"option table: {NAME} has no table {table!r} (tables: {', '.join(TABLES)})")
        return table

    def schema(self):
        return spark_schema(self._table(), _options.names(self.options, "columns"))

    def reader(self, schema):
        return _PushdownReader(self.options, self._table(), schema)

    def streamReader(self, schema):
        return _StreamReader(self.options, self._table(), schema)


class KafkaCaptureDataSourceNoPushdown(KafkaCaptureDataSource):
    def reader(self, schema):
        return _Reader(self.options, self._table(), schema)


class _Task(InputPartition):
    """One task of the dataset's plan (a WholeTask or a SegmentTask)."""

    def __init__(self, task) -> None:
        super().__init__(None)
        self.task = task


def _columns(table: str, schema) -> tuple:
    """The names of the columns ``schema`` asks of ``table``, each checked to be one of its."""
    names = tuple(f.name for f in schema.fields)
    full = _schema(table)
    unknown = [n for n in names if full.get_field_index(n) < 0]
    if unknown:
        raise ValueError(f"{NAME} table {table} has no column {', '.join(unknown)} "
                         f"(columns: {', '.join(full.names)})")
    return names


class _Reader(DataSourceReader):
    def __init__(self, options, table: str, schema) -> None:
        self.table, self.schema = table, schema
        self.names = _columns(table, schema)
        self.paths = _options.paths(options, NAME)
        self.split = _options.size(options, "splitBytes", DEFAULT_SPLIT)
        self.ports = _options.ports(options)
        self.ignore_corrupt = _options.flag(options, "ignoreCorruptFiles", False)
        self.terms: list = []

    def _dataset(self) -> CaptureDataset:
        return open_capture(self.paths, ports=self.ports)

    # -- planning (the driver) -------------------------------------------------
    def partitions(self):
        plan = self._dataset().plan(self.split, filters=Filters.of(self.terms, self.table))
        self._corrupt(plan.problems)
        return [_Task(t) for t in plan] or [_Task(None)]

    def _corrupt(self, problems: Sequence[CaptureProblem]) -> None:
        if problems and not self.ignore_corrupt:
            raise CaptureDamageError(problems[0], "option ignoreCorruptFiles=true reads it as far as it goes")

    # -- reading (the executors) -----------------------------------------------
    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if partition.task is None:
            return
        ds = CaptureDataset([], ports=self.ports)
        accounts: dict = {}
        rows = ds.read_task(partition.task, (self.table,), {self.table: self.names},
                            Filters.of(self.terms, self.table), accounts=accounts)
        yield from _as_spark(rows, self.schema)
        self._corrupt([CaptureProblem(name, e) for name, acc in accounts.items() for e in acc.errors])


def _as_spark(rows, schema) -> Iterator[pa.RecordBatch]:
    """The batches of ``(table, batch)`` pairs in the types of the Spark ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(schema, timezone="UTC")
    for _table, batch in rows:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays([batch.column(i).cast(target.field(i).type)
                                              for i in range(batch.num_columns)], schema=target)


class _PushdownReader(_Reader):
    def pushFilters(self, filters):
        schema = _schema(self.table)
        for f in filters:
            term = spark_term(f)
            if term is not None and term[0] in TAKEN and schema.get_field_index(term[0]) >= 0:
                try:
                    Filters.of([term], self.table)
                except ValueError:  # a value the column cannot hold: Spark applies it
                    yield f
                    continue
                self.terms.append(term)
            else:
                yield f


class _Batch(InputPartition):
    """One micro-batch: the capture's bytes from ``start`` to ``end`` (offsets as dicts)."""

    def __init__(self, start: dict, end: dict) -> None:
        super().__init__(None)
        self.start, self.end = start, end


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafkaproto.capture")`` (see the module's text)."""

    def __init__(self, options, table: str, schema) -> None:
        self.table, self.schema = table, schema
        self.names = _columns(table, schema)
        paths = _options.paths(options, NAME)
        if len(paths) != 1:
            raise ValueError(f"a {NAME} stream reads one capture (a folder of rolled pcap/pcapng files or the "
                             f"tap's folder, or one such file), not {len(paths)}")
        self.path = paths[0]
        self.state = options.get("stateLocation")
        if not self.state:
            raise ValueError(f"a {NAME} stream needs option stateLocation: a folder the driver and the executors "
                             "share, where the walker's state is kept between micro-batches")
        self.ports = _options.ports(options)
        self.starting = str(options.get("startingPosition") or "earliest").strip().lower()
        if self.starting not in ("earliest", "latest"):
            raise ValueError(f"option startingPosition must be earliest or latest, not {self.starting!r}")
        self.max_bytes = _options.size(options, "maxBytesPerTrigger", 0) if options.get("maxBytesPerTrigger") \
            else None
        self.timeout = _options.duration(options, "unansweredTimeout")
        self.ignore_corrupt = _options.flag(options, "ignoreCorruptFiles", False)
        self.target: dict | None = None

    def _capture(self) -> GrowingCapture:
        return GrowingCapture(self.path, self.state, ports=self.ports, unanswered_after=self.timeout)

    # -- the driver --------------------------------------------------------------
    def initialOffset(self) -> dict:
        return self._capture().initial(self.starting).to_dict()

    def getDefaultReadLimit(self):
        return ReadAllAvailable() if self.max_bytes is None else ReadMaxBytes(self.max_bytes)

    def latestOffset(self, start: dict, limit) -> dict:
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        return self._capture().latest(start, max_bytes, self.target).to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        cap = self._capture()
        self.target = cap.latest(cap.initial("earliest")).to_dict()

    def reportLatestOffset(self):
        return None

    def partitions(self, start: dict, end: dict):
        if Offset.of(start) == Offset.of(end):
            return []
        return [_Batch(start, end)]

    def commit(self, end: dict) -> None:
        self._capture().commit(end, (self.table,), {self.table: self.names})

    # -- an executor -------------------------------------------------------------
    def read(self, partition) -> Iterator[pa.RecordBatch]:
        problems: list = []
        rows = self._capture().read(partition.start, partition.end, (self.table,), {self.table: self.names},
                                    problems=problems)
        yield from _as_spark(rows, self.schema)
        if problems and not self.ignore_corrupt:
            raise CaptureDamageError(problems[0], "option ignoreCorruptFiles=true reads it as far as it goes")
