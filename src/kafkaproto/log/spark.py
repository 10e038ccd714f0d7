"""Kafka's log as a Spark table: ``spark.read.format("kafkaproto.log")``, a
Python data source (``pyspark.sql.datasource``, Spark 4.1 and later).

>>> from kafkaproto.log import spark as klog
>>> klog.register(spark)                                    # once per session
>>> df = spark.read.format("kafkaproto.log").load("s3://backups/kafka/data")
>>> df.where("topic = 'orders' AND offset >= 1000 AND timestamp >= '2024-05-01'").select("offset", "value")

One Spark partition per segment, or per byte range of a large one (split
at ``.index`` entries, ``splitBytes`` each); the columns of
:data:`kafkaproto.log.LOG_SCHEMA`.  Filters on ``topic`` and ``partition``
(``=``, ``IN``) choose the folders; on ``offset`` and ``timestamp`` (``=``,
``<``, ``<=``, ``>``, ``>=``) they choose the segments and, through the
index files, where in them to start and stop; they are applied exactly, so
Spark need not apply them again.  A damaged region met while reading is a
row whatever the filters (nulls, but ``topic``, ``partition``, ``segment``,
``position`` and ``error``): damage is never filtered away.  Spark's Python data sources are not told
which columns a query uses: give the columns in a schema
(``.schema("offset long, value binary")``) or ``.option("columns",
"offset,value")``, and only those are built.

Options: ``path`` (or ``load(path)``; several, comma-separated: a broker's
``log.dirs``), ``isolation`` (``read_uncommitted`` / ``read_committed``),
``control`` (transaction markers as rows), ``checkCrc``, ``topics``,
``partitions`` (comma-separated), ``deleted`` (read ``-delete`` folders
too), ``decoder`` (an internal topic's typed table: ``offsets``,
``transaction-log``, ``share-group-state``, ``cluster-metadata``,
``remote-log-metadata``; see :mod:`kafkaproto.log.internal`),
``splitBytes`` (128 MiB), ``windowBytes`` (8 MiB), ``damage`` (``rows``:
a row with ``error`` per damaged region, the default when ``error`` is a
column; ``raise``: fail the task, the default otherwise), ``columns``.
Object storage: any URI pyarrow reads (``s3://bucket/path?region=...&
endpoint_override=...``, credentials from the environment as usual).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..filters import spark_term
from . import LogDamageError, ReadOptions, open_log
from ._files import resolve
from ._read import LOG_SCHEMA, NAMES, Bounds, _us, read_task
from ._scan import DEFAULT_WINDOW

__all__ = ["NAME", "KafkaLogDataSource", "register", "spark_schema"]

NAME = "kafkaproto.log"
_BOUNDED = {"offset", "timestamp", "topic", "partition"}
_CMP = {"==", ">", ">=", "<", "<="}
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
DEFAULT_SPLIT = 128 << 20


def spark_schema(names=NAMES, decoder=None):
    """The Spark schema of the columns ``names`` of :data:`LOG_SCHEMA` (or of a decoder's table:
    :func:`kafkaproto.log.internal.internal_schema`)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    if decoder is not None:
        from .internal import internal_schema

        return StructType([StructField(f.name, from_arrow_type(f.type), True) for f in internal_schema(decoder)])
    return StructType([StructField(n, from_arrow_type(LOG_SCHEMA.field(n).type), True) for n in names])


def register(spark, *, pushdown: bool = True) -> None:
    """Register the data source with a session (classic or Spark Connect).

    Spark hands filters to a Python data source only with
    ``spark.sql.python.filterPushdown.enabled``; ``pushdown=True`` turns it on
    for the session (without it, offset and time filters would read every
    segment whole, then filter).
    """
    if pushdown:
        spark.conf.set(PUSHDOWN_CONF, "true")
        spark.dataSource.register(KafkaLogDataSource)
    else:
        spark.dataSource.register(KafkaLogDataSourceNoPushdown)


def _flag(options, name: str, default: bool) -> bool:
    v = options.get(name)
    return default if v is None else str(v).strip().lower() in ("1", "true", "yes", "on")


def _int_option(options, name: str, value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"kafkaproto.log: option {name} must be a whole number, not {value!r}") from None


def _list(options, name: str):
    v = options.get(name)
    if v is None or not str(v).strip():
        return None
    return [x.strip() for x in str(v).split(",") if x.strip()]


class _Partition(InputPartition):
    def __init__(self, task, txn):
        super().__init__(None)
        self.task, self.txn = task, txn


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkaproto.log")``: Kafka log folders as a table (see the module doc)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _names(self):
        cols = _list(self.options, "columns")
        return tuple(cols) if cols else NAMES

    def schema(self):
        return spark_schema(self._names(), self.options.get("decoder"))

    def reader(self, schema):
        return _PushdownReader(self.options, schema)


class KafkaLogDataSourceNoPushdown(KafkaLogDataSource):
    def reader(self, schema):
        return _Reader(self.options, schema)


class _Reader(DataSourceReader):
    def __init__(self, options, schema):
        paths = options.get("path") or options.get("paths")
        if not paths:
            raise ValueError("kafkaproto.log needs a path: spark.read.format('kafkaproto.log').load(PATH)")
        self.paths = [p.strip() for p in str(paths).strip("[]").replace('"', "").split(",") if p.strip()]
        self.decoder = options.get("decoder") or None
        self.names = tuple(f.name for f in schema.fields)
        if self.decoder is None:
            unknown = [n for n in self.names if n not in NAMES]
            if unknown:
                raise ValueError(f"kafkaproto.log has no column {', '.join(unknown)} (columns: {', '.join(NAMES)})")
        self.schema = schema
        damage = options.get("damage") or ("rows" if "error" in self.names else "raise")
        topics = _list(options, "topics")
        parts = _list(options, "partitions")
        self.opts = ReadOptions.make(
            None if self.decoder else self.names, topics=topics,
            partitions=None if parts is None else [_int_option(options, "partitions", p) for p in parts],
            isolation=options.get("isolation", "read_uncommitted"), control=_flag(options, "control", False),
            check_crc=_flag(options, "checkCrc", True),
            window=_int_option(options, "windowBytes", options.get("windowBytes", DEFAULT_WINDOW)),
            damage=damage, decoder=self.decoder)
        self.split = _int_option(options, "splitBytes", options.get("splitBytes", DEFAULT_SPLIT))
        self.deleted = _flag(options, "deleted", False)

    def _log(self):
        return open_log(self.paths if len(self.paths) > 1 else self.paths[0], deleted=self.deleted)

    def partitions(self):
        log = self._log()
        tasks, txns = log.plan(self.opts, split_bytes=self.split)
        if not tasks:
            return [_Partition(None, None)]
        return [_Partition(t, txns.get((t.segment.topic, t.segment.partition))) for t in tasks]

    def read(self, partition):
        from pyspark.sql.pandas.types import to_arrow_schema

        if partition.task is None:
            return
        target = to_arrow_schema(self.schema, timezone="UTC")
        o = self.opts
        task = partition.task
        fs, _ = resolve(self.paths[0])  # no listing on the executors: the task names its files
        problems = []
        for table in read_task(fs, task, o.names, o.bounds, txn=partition.txn, control=o.control,
                               check_crc=o.check_crc, window=o.window, limits=dict(o.limits), problems=problems):
            if problems and o.damage == "raise":
                raise LogDamageError(problems[0])
            if self.decoder is not None:
                from .internal import internal_table

                table = internal_table(self.decoder, table).select(list(self.names))
            cols = [table.column(k).cast(target.field(k).type) for k in range(table.num_columns)]
            yield from pa.Table.from_arrays(cols, schema=target).to_batches()


class _PushdownReader(_Reader):
    def pushFilters(self, filters):
        # each filter as the capture source reads it (kafkaproto.filters.spark_term), then as bounds
        b = self.opts.bounds
        lo, hi, t0, t1, inc = b.offset_from, b.offset_to, b.time_from, b.time_to, b.time_to_inclusive
        topics, parts = b.topics, b.partitions
        for f in filters:
            term = spark_term(f)
            if term is None:
                yield f
                continue
            col, op, value = term
            if op == "is_valid" and col in _BOUNDED:
                continue  # true of every record; a damaged region's row is reported whatever the filters
            exact = True
            if col == "offset" and op == "in":
                if value and all(isinstance(v, int) for v in value):
                    lo, hi = _max(lo, min(value)), _min(hi, max(value) + 1)
                exact = False  # narrowed, not applied: Spark keeps the filter
            elif col == "offset" and isinstance(value, int) and not isinstance(value, bool) and op in _CMP:
                if op == "==":
                    lo, hi = _max(lo, value), _min(hi, value + 1)
                elif op == ">":
                    lo = _max(lo, value + 1)
                elif op == ">=":
                    lo = _max(lo, value)
                elif op == "<":
                    hi = _min(hi, value)
                else:
                    hi = _min(hi, value + 1)
            elif col == "timestamp" and op in _CMP and value is not None:
                v = _us(value)
                if op == "==":
                    t0, (t1, inc) = _max(t0, v), _tmin(t1, inc, v, True)
                elif op == ">":
                    t0 = _max(t0, v + 1)
                elif op == ">=":
                    t0 = _max(t0, v)
                elif op == "<":
                    t1, inc = _tmin(t1, inc, v, False)
                else:
                    t1, inc = _tmin(t1, inc, v, True)
            elif col in ("topic", "partition") and op in ("==", "in"):
                values = set(value) if op == "in" else {value}
                if col == "topic":
                    topics = values if topics is None else topics & values
                else:
                    parts = values if parts is None else parts & values
            else:
                exact = False
            if not exact:
                yield f
        self.opts = _replace(self.opts, Bounds(lo, hi, t0, t1, inc,
                                               None if topics is None else frozenset(topics),
                                               None if parts is None else frozenset(parts)))


def _max(a, b):
    return b if a is None else max(a, b)


def _min(a, b):
    return b if a is None else min(a, b)


def _tmin(t1, inc, v, v_inc):
    """The tighter of two upper time bounds (value, inclusive)."""
    if t1 is None or v < t1 or (v == t1 and not v_inc):
        return v, v_inc
    return t1, inc


def _replace(opts: ReadOptions, bounds: Bounds) -> ReadOptions:
    from dataclasses import replace

    return replace(opts, bounds=bounds)
