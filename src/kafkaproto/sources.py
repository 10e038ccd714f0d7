"""Captures as Spark tables: ``spark.read.format("kafkaproto.capture")``, a
Python data source (``pyspark.sql.datasource``, Spark 4.1 and later; classic
sessions and Spark Connect).

>>> from kafkaproto import sources
>>> sources.register(spark)            # once per session: kafkaproto.capture and kafkaproto.log
>>> fetches = (spark.read.format("kafkaproto.capture").option("table", "responses")
...            .load("traffic.pcap").where("api = 'Fetch'"))
>>> fetches.groupBy("client_id").agg(F.expr("percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)"))

Tables (``table``): ``frames`` (the capture walker's frame table, no body
decoded: :func:`kafkaproto.capture.frames.frame_schema` with the capture's
name first), ``requests``, ``responses``, ``records``, ``record_sets`` and
``unanswered``, in the columns of the report's tables
(:data:`kafkaproto.report.decode.TABLE_COLUMNS`): the rows the report
writes, row for row.

Each path given to ``load`` is one capture, as the report takes them: a
pcap/pcapng file, a folder of the files of one rolled capture, tap output,
a raw request stream, or ``NAME=path,path``; glob patterns are expanded.
The driver and the executors must both reach the paths (a shared file
system).

Partitions: a capture of at most ``splitBytes`` is read whole by one task,
small ones together (up to ``splitBytes`` in all).  A larger pcap/pcapng
capture is indexed while Spark plans the query: the record and TCP headers
of its files are read (in C, no payload copied) into TCP segment
positions, which are grouped by connection into partitions of about
``splitBytes`` of payload; a task gets its connections' positions and reads
their payloads from the files.  A connection is never split, so each task
reassembles, frames and pairs exactly what a whole read would.

Pushdown (needs ``spark.sql.python.filterPushdown.enabled``, which
:func:`register` sets): ``=``/``IN``/``<``/``<=``/``>``/``>=``/``IS NOT
NULL`` on ``api_key``, ``api``, ``ts``, ``server``, ``capture``, ``source``
(records, record sets) and ``direction`` (frames) are applied here, exactly.
Frames of other api keys, other brokers or outside the time range are not
decoded; connections to other brokers, and connections whose packets all
lie outside the time range, are left out of the plan before any payload is
read (indexed captures).  Spark's Python data sources are not told which
columns a query uses: name them in a schema (``.schema("client_id string,
latency_us bigint")``) or ``option("columns", "client_id,latency_us")`` and
only those are built -- requests or responses without a body column
(``topics``, ``error_codes``, ``status``...) decode no body at all.

Options: ``table`` (default ``frames``), ``columns``, ``splitBytes``
(default 128 MiB), ``ports`` (the brokers' ports, comma-separated; default:
Kafka connections are detected from their traffic), ``ignoreCorruptFiles``
(default false: a capture that is cut or damaged fails the query; true: it
is read as far as it goes, as the report does).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)

from .capture import Accounting, read_frame_batches
from .capture.frames import BATCH_BYTES, BATCH_ROWS, FrameBatch, frame_schema
from .errors import KafkaProtocolError
from .log import spark as _log_source
from .log._read import _us
from .log.spark import _flag, _list
from .report.decode import FETCH, METADATA, PRODUCE, WAITS, CaptureDecoder, _repeat
from .report.decode import table_schema as _report_schema

__all__ = ["CAPTURE", "TABLES", "CaptureCorruptError", "KafkaCaptureDataSource", "register", "source_schema",
           "spark_schema"]

#: the capture source's format name
CAPTURE = "kafkaproto.capture"
#: the tables it reads
TABLES = ("frames", "requests", "responses", "records", "record_sets", "unanswered")
DEFAULT_SPLIT = 128 << 20
#: captures that share a task: at most this many
_GROUP_MAX = 64
#: segment positions fed to the walker between two looks at its sink
_FEED_ROWS = 8192
_NO_TS = np.iinfo(np.int64).min
_TS = pa.timestamp("us", tz="UTC")

# columns of requests / responses that need the frame's body decoded
_BODY = {"topics", "software_name", "software_version", "status", "trailing_bytes", "error", "wait_ms",
         "error_codes"}
# columns named from the topic ids Metadata responses gave earlier on the connection
_NAMED = {"topics", "topic"}
# the records columns kafkaproto.arrow.records builds (the others are the frame's)
_KEY0 = 1 << 15  # api key k's flag is at k + _KEY0 (keys are int16)
_RECORD_FIELDS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")


class CaptureCorruptError(KafkaProtocolError):
    """A capture could not be read to its end (cut, damaged, not a capture),
    and ``ignoreCorruptFiles`` is not set."""


def source_schema(table: str) -> pa.Schema:
    """The Arrow schema of one of the source's :data:`TABLES`."""
    if table == "frames":
        return pa.schema([pa.field("capture", pa.string()), *frame_schema()])
    if table not in TABLES:
        raise ValueError(f"{CAPTURE} has no table {table!r} (tables: {', '.join(TABLES)})")
    return _report_schema(table)


def spark_schema(table: str, names: Sequence[str] | None = None):
    """The Spark schema of ``table`` (or of its columns ``names``)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    schema = source_schema(table)
    names = schema.names if names is None else list(names)
    return StructType([StructField(n, from_arrow_type(schema.field(n).type), True) for n in names])


def register(spark, *, pushdown: bool = True) -> None:
    """Register kafkaproto's data sources with a session (classic or Spark
    Connect): ``kafkaproto.capture`` and ``kafkaproto.log``
    (:mod:`kafkaproto.log.spark`).

    Spark hands filters to a Python data source only with
    ``spark.sql.python.filterPushdown.enabled``; ``pushdown=True`` turns it
    on for the session (a reader that takes filters fails when it is off).
    ``pushdown=False`` registers readers that take none: Spark filters what
    they give."""
    _log_source.register(spark, pushdown=pushdown)
    spark.dataSource.register(KafkaCaptureDataSource if pushdown else KafkaCaptureDataSourceNoPushdown)


# ---------------------------------------------------------------------------
# options


def _paths(options) -> list[str]:
    """``load(path)`` gives ``path``; ``load([a, b])`` gives ``paths`` (a JSON list)."""
    got: list[str] = []
    if options.get("path"):
        got.append(str(options["path"]))
    raw = options.get("paths")
    if raw:
        try:
            more = json.loads(raw)
        except ValueError:
            more = [raw]
        got += [str(p) for p in (more if isinstance(more, list) else [more])]
    if not got:
        raise ValueError(f"{CAPTURE} needs a path: spark.read.format('{CAPTURE}').load(PATH)")
    return got


def _size(text) -> int:
    t = str(text).strip().lower().replace("ib", "").rstrip("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    return int(float(t[:-1] if t[-1:] in "kmg" else t) * scale)


# ---------------------------------------------------------------------------
# the data source


class KafkaCaptureDataSource(DataSource):
    """``spark.read.format("kafkaproto.capture")``: captured Kafka traffic as tables (see the module's text)."""

    @classmethod
    def name(cls) -> str:
        return CAPTURE

    def _table(self) -> str:
        table = str(self.options.get("table") or "frames").strip().lower()
        source_schema(table)  # a clear error for a table that does not exist
        return table

    def schema(self):
        return spark_schema(self._table(), _list(self.options, "columns"))

    def reader(self, schema):
        return _PushdownReader(self.options, self._table(), schema)


class KafkaCaptureDataSourceNoPushdown(KafkaCaptureDataSource):
    def reader(self, schema):
        return _Reader(self.options, self._table(), schema)


class _Whole(InputPartition):
    """Captures read whole by one task: ``[(name, paths)]``."""

    def __init__(self, items: list[tuple[str, list[str]]]) -> None:
        super().__init__(None)
        self.items = items


class _Segments(InputPartition):
    """Some connections of one indexed capture: their TCP segment positions
    (Arrow IPC, compressed), sorted by connection and capture order, and the
    capture's files by rank."""

    def __init__(self, name: str, files: dict[int, str], positions: bytes, segments: int) -> None:
        super().__init__(None)
        self.name, self.files, self.positions, self.segments = name, files, positions, segments


class _Reader(DataSourceReader):
    def __init__(self, options, table: str, schema) -> None:
        self.table = table
        self.paths = _paths(options)
        self.names = tuple(f.name for f in schema.fields)
        full = source_schema(table)
        unknown = [n for n in self.names if full.get_field_index(n) < 0]
        if unknown:
            raise ValueError(f"{CAPTURE} table {table} has no column {', '.join(unknown)} "
                             f"(columns: {', '.join(full.names)})")
        self.schema = schema
        self.split = _size(options.get("splitBytes", DEFAULT_SPLIT))
        if self.split <= 0:
            raise ValueError(f"splitBytes must be positive, not {options.get('splitBytes')!r}")
        ports = _list(options, "ports")
        self.ports = None if ports is None else sorted({int(p) for p in ports})
        self.ignore_corrupt = _flag(options, "ignoreCorruptFiles", False)
        self.filters = _Filters()

    # -- planning (the driver) -------------------------------------------------
    def partitions(self):
        from .report.job import capture_list, group_captures

        caps = capture_list(self.paths)
        keep = self.filters.captures
        if keep is not None:
            caps = [c for c in caps if c["name"] in keep]
        whole = [c for c in caps if not c["packets"] or c["bytes"] <= self.split]
        parts: list[InputPartition] = [_Whole(g) for g in group_captures(whole, self.split, _GROUP_MAX)]
        for c in caps:
            if c["packets"] and c["bytes"] > self.split:
                parts += self._indexed(c)
        return parts or [_Whole([])]

    def _indexed(self, cap: dict) -> list[InputPartition]:
        """One capture's partitions: its files indexed here, its connections
        (those the filters leave) dealt into partitions of about ``split``
        bytes of payload."""
        from .capture.formats.ranges import file_order, read_range, segment_schema
        from .report.job import partition_connections

        files = file_order(cap["paths"])
        batches = []
        for rank, path in enumerate(files):
            got = list(read_range(path, 0, os.path.getsize(path), rank=rank))
            stats = json.loads(got[-1].column("info")[0].as_py())
            if stats["error"]:
                self._corrupt(cap["name"], [stats["error"]])
            batches += got[:-1]
        table = pa.Table.from_batches(batches, schema=segment_schema())
        table = self.filters.connections(table)
        if not table.num_rows:
            return []
        payload = int(pc.sum(table["caplen"]).as_py() or 0)
        parts = partition_connections(table, max(1, -(-payload // self.split)))
        by_rank = dict(enumerate(files))
        return [_Segments(cap["name"], by_rank, _ipc(p.drop_columns(["info"])), p.num_rows) for p in parts]

    def _corrupt(self, name: str, errors: list[str]) -> None:
        if errors and not self.ignore_corrupt:
            raise CaptureCorruptError(f"capture {name} could not be read to its end: {'; '.join(errors)} "
                                      f"(option ignoreCorruptFiles=true reads it as far as it goes)")

    # -- reading (the executors) -----------------------------------------------
    def read(self, partition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        rows = _Rows(self.table, self.names, self.filters)
        if isinstance(partition, _Segments):
            got = self._segment_batches(partition, rows)
        else:
            got = self._whole_batches(partition, rows)
        for batch in got:
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays([batch.column(i).cast(target.field(i).type)
                                                  for i in range(batch.num_columns)], schema=target)

    def _whole_batches(self, partition: _Whole, rows: _Rows) -> Iterator[pa.RecordBatch]:
        for name, paths in partition.items:
            acc = Accounting()
            dec = CaptureDecoder(name, acc, rows.record_columns)
            batches = read_frame_batches(paths[0] if len(paths) == 1 else list(paths), ports=self.ports, acc=acc)
            while True:
                try:
                    fb = next(batches)
                except StopIteration:
                    break
                except (ValueError, OSError) as exc:  # not a capture at all (CaptureFormatError), unreadable
                    acc.errors.append(f"{name}: {exc}")
                    break
                yield from rows.of(name, fb, dec)
            self._corrupt(name, acc.errors)

    def _segment_batches(self, partition: _Segments, rows: _Rows) -> Iterator[pa.RecordBatch]:
        from .capture.formats.ranges import Files, connection_frames
        from .capture.walker.streams import Extractor

        acc = Accounting()
        dec = CaptureDecoder(partition.name, acc, rows.record_columns)
        files = Files({(0, rank): path for rank, path in partition.files.items()})
        try:
            positions = _from_ipc(partition.positions).to_batches(max_chunksize=_FEED_ROWS)
            for _cap, fb in connection_frames(positions, files, lambda cap: Extractor(
                    self.ports, acc, batch_rows=BATCH_ROWS, batch_bytes=BATCH_BYTES)):
                yield from rows.of(partition.name, fb, dec)
        finally:
            files.close()


class _PushdownReader(_Reader):
    def pushFilters(self, filters):
        for f in filters:
            if not self.filters.take(f, self.table):
                yield f


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


# ---------------------------------------------------------------------------
# filters


_OPS = {EqualTo: "==", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}
# the columns whose filters are taken, per table
_TAKEN = {"api_key", "api", "ts", "server", "capture", "direction", "source"}


class _Filters:
    """The filters a reader took: applied exactly to the rows it gives
    (:meth:`mask`), and read for what need not be read at all (api keys,
    time range, brokers, captures)."""

    def __init__(self) -> None:
        self.terms: list[tuple[str, str, object]] = []  # (column, op, value): op in _OPS, "in", "notnull"

    def take(self, f, table: str) -> bool:
        attr = getattr(f, "attribute", ())
        if len(attr) != 1:
            return False
        col = attr[0]
        schema = source_schema(table)
        if col not in _TAKEN or schema.get_field_index(col) < 0:
            return False
        if isinstance(f, IsNotNull):
            self.terms.append((col, "notnull", None))
            return True
        op = "in" if isinstance(f, In) else _OPS.get(type(f))
        if op is None:
            return False
        values = list(f.value) if op == "in" else [f.value]
        if col == "ts" and not all(v is None or isinstance(v, _dt.date) for v in values):
            return False
        try:
            if col == "ts":
                values = [None if v is None else _us(v) for v in values]
            elif col == "api_key":
                if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in values):
                    return False
            elif not all(v is None or isinstance(v, str) for v in values):
                return False
        except (TypeError, ValueError, OverflowError):
            return False
        self.terms.append((col, op, values if op == "in" else values[0]))
        return True

    # -- rows given ------------------------------------------------------------
    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """Which rows of ``batch`` pass every filter (None: all)."""
        out = None
        for col, op, value in self.terms:
            arr = batch.column(batch.schema.get_field_index(col))
            if op == "notnull":
                m = arr.is_valid()
            elif op == "in":
                vals = [v for v in value if v is not None]
                vals = pa.array(vals, _TS) if col == "ts" else pa.array(vals, arr.type)
                m = pc.is_in(arr, value_set=vals)
                m = pc.and_(m, arr.is_valid())
            else:
                if value is None:
                    m = pa.array(np.zeros(len(arr), dtype=bool))
                else:
                    scalar = pa.scalar(value, _TS) if col == "ts" else pa.scalar(value, arr.type)
                    m = {"==": pc.equal, ">": pc.greater, ">=": pc.greater_equal, "<": pc.less,
                         "<=": pc.less_equal}[op](arr, scalar)
                m = pc.fill_null(m, False)
            out = m if out is None else pc.and_(out, m)
        return out

    # -- what need not be read -------------------------------------------------
    def _values(self, col: str, domain: np.ndarray) -> np.ndarray:
        """Which of ``domain`` pass the filters on ``col`` (numbers)."""
        ok = np.ones(len(domain), dtype=bool)
        for c, op, value in self.terms:
            if c != col or op == "notnull":
                continue
            if op == "in":
                ok &= np.isin(domain, [v for v in value if v is not None])
            elif value is None:
                ok[:] = False
            else:
                ok &= {"==": np.equal, ">": np.greater, ">=": np.greater_equal, "<": np.less,
                       "<=": np.less_equal}[op](domain, value)
        return ok

    def _strings(self, col: str) -> set | None:
        """The values ``col`` may take (None: any), from its = and IN filters."""
        got = None
        for c, op, value in self.terms:
            if c == col and op in ("==", "in"):
                vals = {v for v in (value if op == "in" else [value]) if v is not None}
                got = vals if got is None else got & vals
        return got

    @property
    def captures(self) -> set | None:
        return self._strings("capture")

    def time_span(self) -> tuple[int, int] | None:
        """``[lo, hi]`` in microseconds that a row's ts must lie in, or None."""
        if not any(c == "ts" for c, _op, _v in self.terms):
            return None
        lo, hi = -(1 << 62), 1 << 62
        for c, op, value in self.terms:
            if c != "ts" or op == "notnull":
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
        int16 value, key ``k`` at ``k + 32768`` (a frame's key may be any)."""
        keys = np.arange(-(1 << 15), 1 << 15, dtype=np.int64)
        ok = None
        if any(c == "api_key" for c, _o, _v in self.terms):
            ok = self._values("api_key", keys)
        names = self._strings("api")
        if names is not None:
            named = _named_keys(names)
            ok = named if ok is None else ok & named
        sources = self._strings("source")
        if sources is not None and table in ("records", "record_sets"):
            src = np.zeros(len(keys), dtype=bool)
            src[PRODUCE + _KEY0] = "produce" in sources
            src[FETCH + _KEY0] = "fetch" in sources
            ok = src if ok is None else ok & src
        return ok

    # -- connections left out of an indexed capture --------------------------
    def connections(self, table: pa.Table) -> pa.Table:
        """The segment positions of the connections that may give rows: to
        one of the brokers named, with a packet in the time range."""
        servers = self._strings("server")
        span = self.time_span()
        if servers is None and span is None:
            return table
        keys = table["key"].to_numpy()
        keep = np.ones(len(keys), dtype=bool)
        if servers is not None:
            hit = np.zeros(len(keys), dtype=bool)
            fam = table["family"].to_numpy()
            src = _addresses(table["src"])
            dst = _addresses(table["dst"])
            sport, dport = table["sport"].to_numpy(), table["dport"].to_numpy()
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
            valid = ts.is_valid().to_numpy(zero_copy_only=False)
            t = ts.fill_null(0).to_numpy(zero_copy_only=False) // 1000
            inside = valid & (t >= span[0]) & (t <= span[1])
            keep &= np.isin(keys, keys[inside])
        return table.filter(pa.array(keep))


def _addresses(arr) -> np.ndarray:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
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


def _named_keys(names: set) -> np.ndarray:
    """The api keys whose ``api`` name is one of ``names`` (``api<key>`` for one without a schema)."""
    if not _KEY_NAMES:
        from .messages import APIS, api_name

        for k in range(-(1 << 15), 1 << 15):
            _KEY_NAMES[f"api{k}"] = k
        for k in APIS:
            try:
                _KEY_NAMES[api_name(k)] = k
            except KafkaProtocolError:
                pass
    ok = np.zeros(1 << 16, dtype=bool)
    for n in names:
        k = _KEY_NAMES.get(n)
        if k is not None and n == _api_text(k):
            ok[k + _KEY0] = True
    return ok


def _api_text(k: int) -> str:
    """A key's ``api`` text, as the decoder writes it."""
    from .messages import APIS, api_name

    if k not in APIS:
        return f"api{k}"
    try:
        return api_name(k)
    except KafkaProtocolError:
        return f"api{k}"


# ---------------------------------------------------------------------------
# frame batches → a table's rows


class _Rows:
    """One table's rows (the columns asked for, the filters applied) from
    the frame batches of a task."""

    def __init__(self, table: str, names: Sequence[str], filters: _Filters) -> None:
        self.table, self.names, self.filters = table, list(names), filters
        self.keys = filters.api_keys(table)
        self.span = filters.time_span()
        self.servers = filters._strings("server")
        cols = set(names)
        if table in ("requests", "responses"):
            self.bodies = bool(cols & _BODY)
        else:
            self.bodies = table in ("records", "record_sets")
        self.topics = bool(cols & _NAMED)
        #: what the records walk copies: the records columns asked for; none for record sets
        self.record_columns: list[str] | None = None
        if table == "records" and not set(_RECORD_FIELDS) <= cols:
            self.record_columns = [c for c in _RECORD_FIELDS if c in cols]
        elif table == "record_sets":
            self.record_columns = []
        self.waits = table == "responses" and "wait_ms" in cols

    def of(self, capture: str, fb: FrameBatch, dec: CaptureDecoder) -> Iterator[pa.RecordBatch]:
        if not len(fb) and not fb.unanswered:
            return
        if self.table == "frames":
            rb = fb.to_arrow()
            rb = pa.RecordBatch.from_arrays([_repeat(capture, rb.num_rows), *rb.columns],
                                            schema=source_schema("frames"))
            got = [rb]
        elif self.table == "unanswered":
            got = [b for _t, b in dec.unanswered(fb)]
        else:
            sets = self.table in ("records", "record_sets")
            got = [b for t, b in dec.batch(fb, self._decode(fb), record_sets=sets) if t == self.table]
        for b in got:
            m = self.filters.mask(b)
            if m is not None:
                b = b.filter(m)
            yield b.select(self.names)

    def _decode(self, fb: FrameBatch) -> np.ndarray:
        """The rows whose bodies are decoded: those that may give rows, and
        those that name what later rows show."""
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

