"""The report's figures as partial aggregates: computed by each task over
the rows it writes, merged on the driver, with Arrow group-bys.

Every figure of the report is a sum, a count, a set or a percentile over the
rows of one or more captures, and every connection is decoded by exactly one
task.  So a task keeps, of each batch it writes, the few columns each figure
needs (:class:`TaskAggregates`, fed with the same Arrow batches), folded by
an Arrow ``GROUP BY`` whenever they grow (:class:`Groups`: memory follows
the number of groups, not of rows).  At its end one more group-by per
figure gives its ``connections`` rows and the figures' partial tables
(:data:`PARTS`), which go to the driver as Arrow (in one IPC buffer with
the task's manifest, :mod:`kafkaproto.report.tasks`); :func:`merge`
concatenates the tasks' parts and folds them with the same group-bys into
the report's numbers.  Python loops over small results only (an api, an
error code, a client id, a histogram bucket), never over the connections or
the frames.  The job needs no second pass over its tables, and nothing large
crosses into the JVM.

Latency percentiles come from a mergeable histogram (:func:`latency_bucket`):
values below 256 µs are kept exactly, larger ones in buckets 1/128 of their
size wide, so a percentile is within 0.4 % of the exact nearest-rank value;
the maximum is exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow import buffers as ab
from ..error_codes import error_name

__all__ = ["CONNECTIONS_SCHEMA", "PARTS", "Groups", "TaskAggregates", "latency_bucket", "merge", "percentile"]

TS = pa.timestamp("us", tz="UTC")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: The ``connections`` table: one row per Kafka connection of a capture.
CONNECTIONS_SCHEMA = pa.schema([
    ("capture", pa.string()),
    ("conn", pa.int64()),
    ("client", pa.string()),
    ("server", pa.string()),
    ("first_ts", TS),
    ("last_ts", TS),
    ("requests", pa.int64()),
    ("responses", pa.int64()),
    ("bytes_to_broker", pa.int64()),
    ("bytes_from_broker", pa.int64()),
    ("client_ids", pa.list_(pa.string())),
    ("undecodable", pa.int64()),
    ("software_name", pa.string()),
    ("software_version", pa.string()),
])

_BITS = 7  # mantissa bits kept above 2**_BITS: bucket width / value <= 1/128


def latency_bucket(values: np.ndarray) -> np.ndarray:
    """The histogram bucket of each (non-negative, integer) latency: the
    bucket's lowest value.  Exact below 256; above, the top 8 bits kept."""
    v = np.asarray(values, dtype=np.int64)
    v = np.maximum(v, 0)
    shift = np.zeros(len(v), dtype=np.int64)
    big = v >= (1 << (_BITS + 1))
    if big.any():
        # floor(log2) through float64, corrected where rounding moved it
        s = np.floor(np.log2(v[big].astype(np.float64))).astype(np.int64) - _BITS
        s = np.maximum(s, 0)
        vb = v[big]
        s += (vb >> s) >= (1 << (_BITS + 1))
        s -= (s > 0) & ((vb >> np.maximum(s, 0)) < (1 << _BITS))
        shift[big] = s
    return (v >> shift) << shift


def _bucket_width(low: int) -> int:
    return 1 << max(low.bit_length() - (_BITS + 1), 0)


def percentile(hist: dict[int, int], q: float, maximum: int) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 1) of a histogram
    ``{bucket: count}``: the middle of the bucket holding that rank, never
    above ``maximum``."""
    n = sum(hist.values())
    if not n:
        return 0.0
    rank = max(1, int(np.ceil(q * n)))
    seen = 0
    for low in sorted(hist):
        seen += hist[low]
        if seen >= rank:
            return float(min(low + (_bucket_width(low) - 1) / 2, maximum))
    return float(maximum)


# ---------------------------------------------------------------------------
# group-bys over a stream of batches

_ALL = pc.CountOptions(mode="all")  # every row, nulls too
_KEEP_NULLS = "keep nulls"  # first/last: the first (last) row's value, null or not


class _Beside(str):
    """first/last: the value in the row of another first (last) aggregate's value (named by its output)."""
#: how the partial results of an aggregate function fold into one
_FOLD = {"count": "sum", "sum": "sum", "min": "min", "max": "max", "first": "first", "last": "last"}
#: rows a :class:`Groups` keeps before it groups them
ROWS = 1 << 16
#: groups (in :data:`ROWS`) a :class:`Groups` keeps before it groups them again
_REFOLD = 16


def _aggregate(table: pa.Table, keys: list[str], aggs, fold: bool = False) -> pa.Table:
    """``GROUP BY keys`` with ``aggs`` ``[(output, column, function, options)]``;
    ``fold``: the table holds earlier results of the same aggregates (named by
    their outputs), to be folded into one.  ``first``/``last`` follow the row
    order (skipping nulls unless ``options`` is :data:`_KEEP_NULLS`; the row
    of another aggregate's value: :class:`_Beside`); the order of the
    groups is Arrow's (sort where it matters)."""
    spec, taken, rows = [], [], {}
    source = {out: out if fold else column for out, column, _, _ in aggs}
    for out, column, fn, opts in aggs:
        if fold:
            column, fn, opts = out, _FOLD[fn], None if fn == "count" else opts
        if fn in ("first", "last"):
            # the first (last) row's position, then its value: a third of Arrow's first/last on strings;
            # one position for the aggregates whose rows count alike (every row, or the same column's valid ones)
            values = table.column(column)
            by = source[opts] if isinstance(opts, _Beside) else column
            every = opts == _KEEP_NULLS or table.column(by).null_count == 0
            key = (fn, None if every else by)
            if key not in rows:
                at = np.arange(table.num_rows, dtype=np.int64)
                rows[key] = (len(spec), f"row {len(rows)}",
                             ab.numbers(at, _I64) if every else ab.masked(at, ab.valid(table.column(by)), _I64))
                spec.append((rows[key][1], "min" if fn == "first" else "max"))
            taken.append((rows[key][0], values))
        else:
            taken.append((len(spec), None))
            spec.append((column, fn) if opts is None else (column, fn, opts))
    for _, name, at in rows.values():
        table = table.append_column(name, at)
    g = _group_by(table, keys, spec)
    got = g.columns[len(keys):]
    cols = g.columns[:len(keys)] + [got[k] if values is None else values.take(got[k]) for k, values in taken]
    return pa.Table.from_arrays(cols, names=keys + [a[0] for a in aggs])


def _group_by(table: pa.Table, keys: list[str], spec) -> pa.Table:
    """:func:`~kafkaproto.arrow.buffers.group_by`, the keys first, then the
    aggregates.  A key with one value in every row (the capture, in a task
    that reads one) groups nothing: it is left out of the hashing (a string
    key costs more than comparing each of its values with the first) and
    put back.  One key is grouped by whatever it holds (some aggregates,
    ``distinct``, have no form without a key)."""
    same = {k: table.column(k)[0] for k in keys[:-1] if _one_value(table.column(k))}
    grouped = [k for k in keys if k not in same]
    g = ab.group_by(table, grouped, spec)
    # the keys, then the aggregates (in pyarrow before 14, the other way round)
    if g.column_names[:len(grouped)] != grouped:
        g = g.select(list(range(len(spec), g.num_columns)) + list(range(len(spec))))
    by_key = dict(zip(grouped, g.columns))
    return pa.Table.from_arrays([by_key[k] if k not in same else pa.repeat(same[k], g.num_rows) for k in keys] +
                                g.columns[len(grouped):], names=keys + g.column_names[len(grouped):])


def _one_value(col) -> bool:
    """Whether ``col`` (two rows or more) holds the same value, not null, in every row."""
    if len(col) < 2 or col.null_count:
        return False
    return pc.all(pc.equal(col, col[0])).as_py()


class Groups:
    """``GROUP BY keys`` over a stream of columns (:meth:`add`), with
    ``aggs`` ``[(output, column, function, options)]`` (``count``, ``sum``,
    ``min``, ``max``, ``first``, ``last``; no aggregate: the distinct keys).

    The rows are kept as they come and grouped once they pass ``rows`` (four
    times as many each time grouping hardly made fewer of them, up to
    :data:`_REFOLD` times, and never more than :data:`_REFOLD` times
    :data:`ROWS` unless ``rows`` is more); the groups so far are grouped
    again when they pass :data:`_REFOLD` times ``rows`` and have doubled
    since the last time.  So memory follows the number of groups, a row is
    grouped a few times at most (where the groups are nearly as many as the
    rows, about once), and ``first``/``last`` keep the order of the rows."""

    def __init__(self, keys: list[str], aggs=(), rows: int | None = None) -> None:
        self.keys = list(keys)
        self.aggs = [(*a, None)[:4] for a in aggs]
        self.rows = rows or ROWS
        self._raw: list[pa.Table] = []
        self._raw_rows = 0
        self._done: list[pa.Table] = []
        self._done_rows = 0
        self._floor = _REFOLD * self.rows
        self._more = 1  # rows kept before grouping them, in ``rows``
        self._most = max(self.rows, _REFOLD * ROWS)  # and never more than these

    def add(self, cols: Mapping[str, pa.Array]) -> None:
        t = pa.table(dict(cols))
        if not t.num_rows:
            return
        self._raw.append(t)
        self._raw_rows += t.num_rows
        if self._raw_rows >= min(self._more * self.rows, self._most):
            self._group()

    def _group(self, final: bool = False) -> None:
        if self._raw:
            g = _aggregate(_concat(self._raw), self.keys, self.aggs)
            if g.num_rows * 2 > self._raw_rows:  # hardly fewer groups than rows: keep more rows before the next
                self._more = min(4 * self._more, _REFOLD)
            self._raw, self._raw_rows = [], 0
            self._done.append(g)
            self._done_rows += g.num_rows
        if len(self._done) > 1 and (final or self._done_rows >= self._floor):
            g = _aggregate(_concat(self._done), self.keys, self.aggs, fold=True)
            self._done, self._done_rows = [g], g.num_rows
            self._floor = max(_REFOLD * self.rows, 2 * g.num_rows)

    def table(self, schema: pa.Schema | None = None) -> pa.Table | None:
        """The groups (keys, then the outputs), cast to ``schema`` if given;
        None (or an empty ``schema`` table) when no row came."""
        self._group(final=True)
        if not self._done:
            return None if schema is None else ab.empty_table(schema)
        t = self._done[0]
        return t if schema is None else t.select(schema.names).cast(schema)


def _sorted(table: pa.Table, by: list[tuple[str, str]]) -> pa.Table:
    """``table.sort_by(by)``, the keys with one value in every row left out."""
    keys = [(k, o) for k, o in by if not _one_value(table.column(k))]
    return table.sort_by(keys) if keys else table


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _counts(n: int, value: int) -> pa.Array:
    return ab.constant_int(value, n, _I64)


# ---------------------------------------------------------------------------
# the parts a task hands the driver

_S, _L, _I64, _I32, _I16 = pa.string(), pa.large_string(), pa.int64(), pa.int32(), pa.int16()


def _part(keys, values) -> tuple[pa.Schema, list[str], list[tuple]]:
    """A part's schema, keys and how its values fold (``(name, type, function[, options])``)."""
    schema = pa.schema(list(keys) + [(n, t) for n, t, *_ in values])
    return schema, [k for k, _ in keys], [(n, n, fn, o[0] if o else None) for n, _, fn, *o in values]


#: The figures' partial tables: name -> (schema, keys, how the values fold).
#: A task's tables are grouped by their keys; the driver concatenates every
#: task's and groups them again the same way (:func:`merge`).
PARTS: dict[str, tuple[pa.Schema, list[str], list[tuple]]] = {
    # requests by client id, the software its connection named, api and version
    "api_use": _part([("client_id", _S), ("software", _S), ("api_key", _I16), ("api", _S), ("api_version", _I16),
                      ("removed", pa.bool_())], [("requests", _I64, "sum")]),
    # connections by client id, software and client host (each connection counts once per client id)
    "clients": _part([("client_id", _S), ("software", _S), ("host", _S)], [("connections", _I64, "sum")]),
    "errors_by": _part([("capture", _S), ("server", _S), ("api", _S), ("code", _I16)], [("count", _I64, "sum")]),
    # latency histograms: responses by capture, broker, api and latency bucket
    "latency_by": _part([("capture", _S), ("server", _S), ("api", _S), ("bucket", _I64)],
                        [("count", _I64, "sum"), ("max", _I64, "max")]),
    # long polls by the wait asked (ms), and how many were answered at 90 % of it or later
    "waits": _part([("api", _S), ("wait", _I64)], [("count", _I64, "sum"), ("waited", _I64, "sum")]),
    # long polls answered early: a latency histogram by api
    "early": _part([("api", _S), ("bucket", _I64)], [("count", _I64, "sum"), ("max", _I64, "max")]),
    "topics": _part([("source", _S), ("topic", _L)], [("sets", _I64, "sum"), ("batches", _I64, "sum"),
                                                      ("records", _I64, "sum"), ("bytes", _I64, "sum")]),
    "codecs": _part([("source", _S), ("codec", _S)], [("batches", _I64, "sum"), ("records", _I64, "sum"),
                                                      ("bytes", _I64, "sum"), ("sets", _I64, "sum")]),
    "decode_errors": _part([("table", _S), ("api", _S), ("status", _S), ("error", _L)], [("count", _I64, "sum")]),
    "unanswered": _part([("capture", _S), ("api", _S), ("client_id", _S)], [("requests", _I64, "sum")]),
    # topic ids and the names the captures' Metadata responses gave them, in the order first seen
    "topic_ids": _part([("capture", _S), ("topic_id", _S)], [("topic", _L, "last", _KEEP_NULLS)]),
    "trailing": _part([("kind", _S), ("api", _S), ("client_id", _S)], [("frames", _I64, "sum"),
                                                                       ("bytes", _I64, "sum")]),
    "connections": _part([], [("connections", _I64, "sum")]),
}
#: the earliest requests without a response (not a group-by: rows, by time)
UNANSWERED_ROWS_SCHEMA = pa.schema([("ts", TS), ("capture", _S), ("api", _S), ("api_version", _I16),
                                    ("client_id", _S), ("conn", _I64), ("client", _S), ("server", _S)])
_UNANSWERED_ROWS = 200


def _grouped(table: pa.Table, name: str) -> pa.Table:
    """``table`` (rows of the part ``name``, from one task or many) grouped by its keys."""
    schema, keys, aggs = PARTS[name]
    return _aggregate(table, keys, aggs, fold=True).select(schema.names).cast(schema)


def _earliest(rows: pa.Table) -> pa.Table:
    """The first :data:`_UNANSWERED_ROWS` rows by time (no time last; a stable sort)."""
    return rows.sort_by([("ts", "ascending")]).slice(0, _UNANSWERED_ROWS)


class TaskAggregates:
    """The figures' totals over the rows of one task (one or more captures).

    Feed it every batch written (:meth:`add`, with the table's name), then
    :meth:`connections` gives the ``connections`` rows and :meth:`parts` the
    partial tables for :func:`merge`.  ``rows``: how many rows a group-by
    keeps before it groups them (:class:`Groups`).
    """

    def __init__(self, rows: int | None = None) -> None:
        def groups(keys, *aggs):
            return Groups(keys, aggs, rows)

        conn = ["capture", "conn"]
        # per connection: times, frames and bytes each way, the first addresses seen, the first
        # software name a request gave with its version
        self.frames = groups(conn, ("first_ts", "ts", "min"), ("last_ts", "ts", "max"),
                             ("requests", "request", "sum"), ("responses", "response", "sum"),
                             ("bytes_to_broker", "to_broker", "sum"), ("bytes_from_broker", "from_broker", "sum"),
                             ("undecodable", "undecodable", "sum"), ("client", "client", "first"),
                             ("server", "server", "first"), ("software_name", "software_name", "first"),
                             ("software_version", "software_version", "first", _Beside("software_name")))
        self.client_ids = groups([*conn, "client_id"])
        # requests by client id, api and version, for each connection's software: keyed by the software
        # (few groups) once the connection has named it, by the connection until then (keyed by numbers
        # where the groups are many, 3x faster than by strings: an api's name and removed flag follow
        # from its key and version, and are kept apart, in few groups)
        self.use = groups([*conn, "client_id", "api_key", "api_version"], ("requests", "conn", "count", _ALL))
        self.use_named = groups(["client_id", "software", "api_key", "api_version"],
                                ("requests", "software", "count", _ALL))
        self._named = _Named()
        self.apis = groups(["api_key", "api_version", "api", "removed"])
        self.errors_by = groups(["capture", "server", "api", "code"], ("count", "code", "count", _ALL))
        # (a histogram bucket by broker and api: nearly as many groups as rows where the brokers are many --
        # 65 k rows gave 48 k groups on the bench's 105 MB capture of 501 brokers --, so its rows, five
        # narrow columns, are kept 16 times longer before they are grouped: once, most often)
        self.latency_by = Groups(["capture", "server", "api_key", "bucket"],
                                 [("count", "bucket", "count", _ALL), ("max", "lat", "max")],
                                 _REFOLD * (rows or ROWS))
        self.waits = groups(["api", "wait"], ("count", "wait", "count", _ALL), ("waited", "waited", "sum"))
        self.early = groups(["api", "bucket"], ("count", "bucket", "count", _ALL), ("max", "lat", "max"))
        sums = (("batches", "batches", "sum"), ("records", "records", "sum"), ("bytes", "bytes", "sum"),
                ("sets", "source", "count", _ALL))
        self.topics = groups(["source", "topic"], *sums)
        self.codecs = groups(["source", "codec"], *sums)
        self.decode_errors = {kind: groups(["api", "status", "error"], ("count", "error", "count", _ALL))
                              for kind in ("requests", "responses", "record_sets")}
        self.unanswered = groups(["capture", "api", "client_id"], ("requests", "api", "count", _ALL))
        self.unanswered_rows = ab.empty_table(UNANSWERED_ROWS_SCHEMA)
        self.topic_ids = groups(["capture", "topic_id"], ("topic", "topic", "last", _KEEP_NULLS),
                                ("seen", "seen", "min"))
        self._topic_rows = 0
        # frames with bytes after their message body, by kind
        self.trailing = {kind: groups(["api", "client_id"], ("frames", "bytes", "count", _ALL),
                                      ("bytes", "bytes", "sum"))
                         for kind in ("requests", "responses")}
        self._connections: pa.Table | None = None

    # -- feeding ---------------------------------------------------------------
    def add(self, table: str, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self._connections = None
        if table == "requests":
            self._frames(batch, True)
        elif table == "responses":
            self._frames(batch, False)
        elif table == "record_sets":
            self._record_sets(batch)
        elif table == "unanswered":
            self._unanswered(batch)
        elif table == "topic_ids":
            col = batch.column
            n = batch.num_rows
            seen = ab.numbers(np.arange(self._topic_rows, self._topic_rows + n, dtype=np.int64), _I64)
            self._topic_rows += n
            self.topic_ids.add({"capture": col("capture"), "topic_id": col("topic_id"), "topic": col("topic"),
                                "seen": seen})

    def _unanswered(self, batch) -> None:
        col = batch.column
        self.unanswered.add({"capture": col("capture"), "api": col("api"), "client_id": col("client_id")})
        rows = pa.table({k: col(k) for k in UNANSWERED_ROWS_SCHEMA.names}).cast(UNANSWERED_ROWS_SCHEMA)
        self.unanswered_rows = _earliest(pa.concat_tables([self.unanswered_rows, rows]))

    def _frames(self, batch, request: bool) -> None:
        col = batch.column
        n = batch.num_rows
        kind = "requests" if request else "responses"
        size, zero, one = col("size"), _counts(n, 0), _counts(n, 1)
        none = None if request else pa.nulls(n, _S)
        self.frames.add({"capture": col("capture"), "conn": col("conn"), "ts": col("ts").cast(pa.int64()),
                         "request": one if request else zero, "response": zero if request else one,
                         "to_broker": size if request else zero, "from_broker": zero if request else size,
                         "undecodable": ab.fill_null(pc.equal(col("status"), ab.scalar("undecodable", _S)),
                                                     False).cast(pa.int64()),
                         "client": col("client"), "server": col("server"),
                         "software_name": col("software_name") if request else none,
                         "software_version": col("software_version") if request else none})
        self.client_ids.add({"capture": col("capture"), "conn": col("conn"), "client_id": col("client_id")})
        if request:
            self._use(batch)
        self.apis.add({"api_key": col("api_key"), "api_version": col("api_version"), "api": col("api"),
                       "removed": ab.fill_null(col("removed_in_kafka4"), False)})
        extra = col("trailing_bytes")
        if pc.sum(extra).as_py():
            has = ab.fill_null(pc.greater(extra, ab.scalar(0, extra.type)), False)
            self.trailing[kind].add({"api": col("api").filter(has), "client_id": col("client_id").filter(has),
                                     "bytes": extra.filter(has).cast(pa.int64())})
        if not request:
            self._responses(batch)
        self._errors(batch, kind)

    def _use(self, batch) -> None:
        col = batch.column
        by_capture = list(_Named.by_capture(col("capture")))
        self._named.add(by_capture, col("conn"), col("software_name"), col("software_version"))
        code = self._named.codes(by_capture, col("conn"))
        named = code >= 0
        cols = {"client_id": col("client_id"), "api_key": col("api_key"), "api_version": col("api_version")}
        if named.any():
            self.use_named.add({"software": ab.numbers(code[named], _I32),
                                **{k: v.filter(ab.bools(named)) for k, v in cols.items()}})
        if not named.all():
            rest = ab.bools(~named)
            self.use.add({"capture": col("capture").filter(rest), "conn": col("conn").filter(rest),
                          **{k: v.filter(rest) for k, v in cols.items()}})

    def _responses(self, batch) -> None:
        col = batch.column
        codes = col("error_codes")
        if pc.sum(ab.fill_null(pc.list_value_length(codes), 0)).as_py():
            rows = pc.list_parent_indices(codes)
            self.errors_by.add({"capture": col("capture").take(rows), "server": col("server").take(rows),
                                "api": col("api").take(rows), "code": pc.list_flatten(codes)})
        lat = col("latency_us")
        if lat.null_count == len(lat):
            return
        ok = lat.is_valid()
        apis = col("api").filter(ok)
        vals = ab.to_numpy(lat.filter(ok))
        self.latency_by.add({"capture": col("capture").filter(ok), "server": col("server").filter(ok),
                             "api_key": col("api_key").filter(ok), "bucket": ab.numbers(latency_bucket(vals), _I64),
                             "lat": ab.numbers(vals, _I64)})
        wait = col("wait_ms").filter(ok)
        if wait.null_count == len(wait):
            return
        has = wait.is_valid()
        w_ms = ab.to_numpy(wait.filter(has)).astype(np.int64)
        w_lat = vals[ab.to_numpy(has)]
        w_api = apis.filter(has)
        waited = w_lat >= w_ms * 900  # at 90 % of its wait or later (µs): the broker waited it out
        self.waits.add({"api": w_api, "wait": ab.numbers(w_ms, _I64), "waited": ab.numbers(waited, _I64)})
        early = ~waited
        if early.any():
            self.early.add({"api": w_api.filter(ab.bools(early)),
                            "bucket": ab.numbers(latency_bucket(w_lat[early]), _I64),
                            "lat": ab.numbers(w_lat[early], _I64)})

    def _errors(self, batch, kind: str) -> None:
        err = batch.column("error")
        if err.null_count == len(err):
            return
        ok = err.is_valid()
        if kind == "record_sets":
            n = len(err) - err.null_count
            api = status = pa.nulls(n, pa.string())
        else:
            api = batch.column("api").filter(ok)
            status = batch.column("status").filter(ok)
        self.decode_errors[kind].add({"api": api, "status": status, "error": err.filter(ok)})

    def _record_sets(self, batch) -> None:
        col = batch.column
        cols = {"source": col("source"), "topic": col("topic"), "codec": col("codec"),
                "batches": col("batches").cast(pa.int64()), "records": col("records"), "bytes": col("bytes")}
        self.topics.add({k: cols[k] for k in ("source", "topic", "batches", "records", "bytes")})
        self.codecs.add({k: cols[k] for k in ("source", "codec", "batches", "records", "bytes")})
        self._errors(batch, "record_sets")

    # -- results ---------------------------------------------------------------
    def connections(self) -> pa.Table:
        """The ``connections`` rows (:data:`CONNECTIONS_SCHEMA`), by capture and connection."""
        if self._connections is not None:
            return self._connections
        by_conn = [("capture", "ascending"), ("conn", "ascending")]
        frames = self.frames.table()
        if frames is None:
            self._connections = ab.empty_table(CONNECTIONS_SCHEMA)
            return self._connections
        t = _sorted(frames, by_conn)
        # every connection's client ids (its frames' keys are those of the frames' groups), sorted, nulls aside
        ids = _sorted(_group_by(self.client_ids.table(), ["capture", "conn"],
                                [("client_id", "distinct", pc.CountOptions(mode="only_valid"))]), by_conn)
        assert ids.num_rows == t.num_rows
        cols = {name: t.column(name) for name in CONNECTIONS_SCHEMA.names if name != "client_ids"}
        cols["client_ids"] = _sort_lists(ids.column("client_id_distinct"))
        for name in ("first_ts", "last_ts"):
            cols[name] = cols[name].cast(TS)
        for name in ("requests", "responses", "bytes_to_broker", "bytes_from_broker", "undecodable"):
            cols[name] = ab.fill_null(cols[name], 0)
        self._connections = pa.table(cols).select(CONNECTIONS_SCHEMA.names).cast(CONNECTIONS_SCHEMA)
        return self._connections

    def parts(self) -> dict[str, pa.Table]:
        """The partial tables for :func:`merge` (:data:`PARTS`, and the earliest unanswered requests)."""
        conns = self.connections()
        software = _software(conns.column("software_name"), conns.column("software_version"))
        apis = self.apis.table(_APIS)
        out = {"api_use": self._api_use(conns, software, apis), "clients": _clients(conns, software)}
        for name in ("errors_by", "waits", "early", "topics", "codecs", "unanswered"):
            out[name] = getattr(self, name).table(PARTS[name][0])
        for name in ("topics", "codecs"):  # a set's batches, records and bytes may be null: none
            t = out[name]
            for k in ("sets", "batches", "records", "bytes"):
                t = t.set_column(t.schema.get_field_index(k), k, ab.fill_null(t.column(k), 0))
            out[name] = t
        lat = self.latency_by.table(pa.schema([("capture", _S), ("server", _S), ("api_key", _I16), ("bucket", _I64),
                                               ("count", _I64), ("max", _I64)]))
        lat = lat.append_column("api", _lookup(_code(lat["api_key"]), _code(apis["api_key"]), apis["api"]))
        out["latency_by"] = lat.select(PARTS["latency_by"][0].names).cast(PARTS["latency_by"][0])
        out["decode_errors"] = _with_key("table", {k: g.table() for k, g in self.decode_errors.items()},
                                         "decode_errors")
        out["trailing"] = _with_key("kind", {k: g.table() for k, g in self.trailing.items()}, "trailing")
        ids = self.topic_ids.table()
        out["topic_ids"] = ab.empty_table(PARTS["topic_ids"][0]) if ids is None else \
            ids.sort_by("seen").select(PARTS["topic_ids"][0].names).cast(PARTS["topic_ids"][0])
        out["connections"] = pa.table({"connections": ab.numbers([conns.num_rows], _I64)})
        out["unanswered_rows"] = self.unanswered_rows
        return out

    def _api_use(self, conns: pa.Table, software, apis: pa.Table) -> pa.Table:
        """Requests by client id, the software their connection named, api and version."""
        keys = ["client_id", "software", "api_key", "api_version"]
        use = self.use.table(pa.schema([("capture", _S), ("conn", _I64), ("client_id", _S), ("api_key", _I16),
                                        ("api_version", _I16), ("requests", _I64)]))
        use = use.append_column("software", software.take(_rows_of(conns, use))).select(keys + ["requests"])
        named = self.use_named.table(pa.schema([("client_id", _S), ("software", _I32), ("api_key", _I16),
                                                ("api_version", _I16), ("requests", _I64)]))
        named = named.set_column(1, "software", self._named.names().take(named.column("software")))
        use = _aggregate(pa.concat_tables([use, named]), keys, [("requests", "requests", "sum", None)])
        use = use.append_column("api", _lookup(_code(use["api_key"]), _code(apis["api_key"]), apis["api"]))
        use = use.append_column("removed", _lookup(_code(use["api_key"], use["api_version"]),
                                                   _code(apis["api_key"], apis["api_version"]), apis["removed"]))
        return use.select(PARTS["api_use"][0].names).cast(PARTS["api_use"][0])


def _software(name, version):
    """The software a connection named in ApiVersions: "name version" (the name alone without a version)."""
    # (not null_handling="skip": pyarrow 26 then drops the rows where both are null)
    return pc.if_else(version.is_valid(), pc.binary_join_element_wise(name, version, ab.scalar(" ", _S)), name)


class _Named:
    """The software each connection named (the first request that gave a
    name, with the version beside it: "name version"), as the requests come:
    for each capture, the connections so far sorted, and a code for each
    (the software's place in :meth:`names`).  A batch's rows come split by
    capture (:meth:`by_capture`, once for :meth:`add` and :meth:`codes`)."""

    def __init__(self) -> None:
        self._conns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._names: dict[str, None] = {}  # in the order first named: a name's code is its place

    def add(self, by_capture, conn, name, version) -> None:
        if name.null_count == len(name):
            return
        valid = pc.and_(name.is_valid(), conn.is_valid())
        has = ab.to_numpy(valid)
        software = _software(name.filter(valid), version.filter(valid))
        for sw in pc.unique(software).to_pylist():
            self._names.setdefault(sw)
        codes = np.full(len(has), -1, dtype=np.int32)
        codes[has] = ab.to_numpy(pc.index_in(software, value_set=self.names()))
        conn = ab.to_numpy(ab.fill_null(conn, 0))
        for cap, rows in by_capture:
            rows = rows[has[rows]]
            if not len(rows):
                continue
            known, known_codes = self._conns.get(cap, (np.empty(0, np.int64), np.empty(0, np.int32)))
            new, first = np.unique(conn[rows], return_index=True)  # each connection's first naming row
            fresh = ~_find(known, new)[1]
            keys = np.concatenate([known, new[fresh]])
            vals = np.concatenate([known_codes, codes[rows[first[fresh]]]])
            order = np.argsort(keys, kind="stable")
            self._conns[cap] = (keys[order], vals[order])

    def codes(self, by_capture, conn) -> np.ndarray:
        """Each row's software code, -1 where its connection has named none so far."""
        out = np.full(len(conn), -1, dtype=np.int32)
        if not self._conns:
            return out
        valid = None if conn.null_count == 0 else ab.to_numpy(conn.is_valid())
        conn = ab.to_numpy(ab.fill_null(conn, 0))
        for cap, rows in by_capture:
            got = self._conns.get(cap)
            if got is None:
                continue
            keys, vals = got
            at, hit = _find(keys, conn[rows])
            if valid is not None:
                hit &= valid[rows]
            out[rows[hit]] = vals[at[hit]]
        return out

    def names(self) -> pa.Array:
        return ab.strings(list(self._names), _S)

    @staticmethod
    def by_capture(capture):
        """(capture, its rows) for each capture of the rows (a task's rows are of one capture, or a few)."""
        captures = pc.unique(capture).to_pylist()
        if len(captures) == 1:
            yield captures[0], np.arange(len(capture), dtype=np.int64)
            return
        at = ab.to_numpy(pc.index_in(capture, value_set=ab.strings(captures, _S)))
        for k, cap in enumerate(captures):
            yield cap, np.flatnonzero(at == k)


def _find(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``values`` looked up in ``keys`` (ascending) by a binary search:
    (its place, whether it is there)."""
    if not len(keys):
        return np.zeros(len(values), dtype=np.int64), np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return at, keys[at] == values


def _rows_of(conns: pa.Table, t: pa.Table) -> pa.Array:
    """The row of ``conns`` (sorted by capture and connection) of each of
    ``t``'s (capture, conn), which ``conns`` holds: by capture (a task has
    few), a binary search of the connection."""
    captures = pc.unique(conns.column("capture"))
    mine = ab.to_numpy(pc.index_in(conns.column("capture"), value_set=captures))
    theirs = ab.to_numpy(pc.index_in(t.column("capture"), value_set=captures))
    conn, want = ab.to_numpy(conns.column("conn")), ab.to_numpy(t.column("conn"))
    starts = np.searchsorted(mine, np.arange(len(captures) + 1))
    rows = np.zeros(len(want), dtype=np.int64)
    for k in range(len(captures)):
        at = np.flatnonzero(theirs == k)
        rows[at] = starts[k] + np.searchsorted(conn[starts[k]:starts[k + 1]], want[at])
    return ab.numbers(rows, _I64)


#: an api's name and removed-in-Kafka-4.0 flag by key and version
_APIS = pa.schema([("api_key", _I16), ("api_version", _I16), ("api", _S), ("removed", pa.bool_())])


def _clients(conns: pa.Table, software) -> pa.Table:
    """Connections by client id, software and client host: each connection
    once per client id it used (none: a null client id)."""
    ids = conns.column("client_ids").combine_chunks()
    lengths = pc.list_value_length(ids)
    empty = np.flatnonzero((ab.to_numpy(lengths) == 0) & ab.valid(lengths))
    rows = pa.chunked_array([pc.list_parent_indices(ids).cast(_I64), ab.numbers(empty, _I64)]).combine_chunks()
    host = pc.replace_substring_regex(conns.column("client"), pattern=":[^:]*$", replacement="")
    return _grouped(pa.table({"client_id": pa.chunked_array([pc.list_flatten(ids), pa.nulls(len(empty), _S)]),
                              "software": software.take(rows), "host": host.take(rows),
                              "connections": _counts(len(rows), 1)}), "clients")


def _code(key, version=None) -> np.ndarray:
    """An api key, or (api key, version), as one number (null too), to look up."""
    k = ab.to_numpy(ab.fill_null(pc.cast(key, _I64), -(1 << 20)))
    if version is None:
        return k
    return k * (1 << 22) + ab.to_numpy(ab.fill_null(pc.cast(version, _I64), -(1 << 20)))


def _lookup(codes: np.ndarray, known: np.ndarray, values) -> pa.Array:
    """``values`` at the first of ``known`` equal to each of ``codes``."""
    return values.take(pc.index_in(ab.numbers(codes, _I64), value_set=ab.numbers(known, _I64)))


def _sort_lists(lists) -> pa.Array:
    """Each list's values in ascending order (the offsets kept)."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values = pc.list_flatten(lists)
    order = pc.sort_indices(pa.table({"p": pc.list_parent_indices(lists), "v": values}),
                            [("p", "ascending"), ("v", "ascending")])
    offsets = pc.subtract(lists.offsets, lists.offsets[0])
    return pa.ListArray.from_arrays(offsets, values.take(order))


def _with_key(key: str, tables: dict[str, pa.Table | None], name: str) -> pa.Table:
    """Tables of one part by a key's value (the value as the ``key`` column)."""
    schema = PARTS[name][0]
    got = [t.append_column(key, ab.constant_string(k, t.num_rows)) for k, t in tables.items() if t is not None]
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in got]) if got else ab.empty_table(schema)


# ---------------------------------------------------------------------------
# the driver's fold


def _bit_length(v: np.ndarray) -> np.ndarray:
    return np.frexp(v.astype(np.float64))[1].astype(np.int64)  # exact below 2**53


def _percentiles(table: pa.Table, keys: list[str]) -> list[dict]:
    """One row per group of ``keys`` of a latency part (a row per key and
    bucket): its keys, ``count``, ``p50``, ``p90``, ``p99`` and ``max`` in
    ms, as :func:`percentile` gives them from the group's histogram (the
    maximum never below 0: a negative latency counts in the first bucket)."""
    if not table.num_rows:
        return []
    # each row's group as one number (each key's value by its place among the key's distinct values, null
    # apart), then the rows by group and bucket: half the time of sorting by the keys' strings
    group = np.zeros(table.num_rows, dtype=np.int64)
    for k in keys:
        col = table.column(k)
        values = pc.unique(col)
        if group.max(initial=0) >= (1 << 62) // (len(values) + 1):  # numbered afresh before it could overflow
            group = np.unique(group, return_inverse=True)[1].astype(np.int64)
        group = group * (len(values) + 1) + ab.to_numpy(ab.fill_null(pc.index_in(col, value_set=values), -1)) + 1
    order = np.lexsort((ab.to_numpy(table.column("bucket")), group))
    t = table.take(ab.numbers(order, _I64))
    group = group[order]
    first = np.ones(len(group), dtype=bool)
    first[1:] = group[1:] != group[:-1]
    starts = np.flatnonzero(first)
    counts, buckets = ab.to_numpy(t.column("count")), ab.to_numpy(t.column("bucket"))
    total = np.add.reduceat(counts, starts)
    top = np.maximum(np.maximum.reduceat(ab.to_numpy(t.column("max")), starts), 0)
    seen = np.cumsum(counts)
    before = seen[starts] - counts[starts]
    got = {"count": total.tolist()}
    for q in (0.5, 0.9, 0.99):
        rank = np.maximum(1, np.ceil(q * total).astype(np.int64))
        low = buckets[np.searchsorted(seen, before + rank)]  # the first bucket where the rank is reached
        width = np.left_shift(1, np.maximum(_bit_length(low) - (_BITS + 1), 0))
        got[f"p{int(q * 100)}"] = (np.minimum(low + (width - 1) / 2, top) / 1000).tolist()
    got["max"] = (top / 1000).tolist()
    cols = {k: t.column(k).take(ab.numbers(starts, _I64)).to_pylist() for k in keys} | got
    return [dict(zip(cols, row)) for row in zip(*cols.values())]


def merge(parts: Mapping[str, pa.Table], data) -> None:
    """Fold the tasks' :meth:`TaskAggregates.parts` (each part's tables of
    every task concatenated, in the tasks' order) into ``data`` (a
    :class:`~kafkaproto.report.job.ReportData`): its connections, api use,
    clients, errors, latency, waits, topics, codecs, decode errors, requests
    without a response, topic ids and frames with trailing bytes."""
    # one task's parts are grouped already
    fold = parts["connections"].num_rows > 1
    g = {name: _grouped(parts[name], name) if fold else parts[name] for name in PARTS
         if name not in ("topic_ids", "connections")}
    data.totals["connections"] = pc.sum(parts["connections"].column("connections")).as_py() or 0

    def num(x):
        return -1 if x is None else x

    data.api_use = sorted(({"client_id": r["client_id"], "software": r["software"], "api_key": r["api_key"],
                            "api": r["api"], "api_version": r["api_version"], "requests": r["requests"],
                            "removed": bool(r["removed"])} for r in g["api_use"].to_pylist()),
                          key=lambda d: (str(d["client_id"]), str(d["software"]), num(d["api_key"]),
                                         num(d["api_version"])))
    clients: dict[str | None, dict] = {}
    for r in g["clients"].to_pylist():  # a row per client id, software and host
        got = clients.setdefault(r["client_id"], {"connections": 0, "software": set(), "hosts": set()})
        got["connections"] += r["connections"]
        if r["software"] is not None:
            got["software"].add(r["software"])
        if r["host"] is not None:
            got["hosts"].add(r["host"])
    data.clients = sorted(({"client_id": cid, "connections": v["connections"], "software": sorted(v["software"]),
                            "hosts": sorted(v["hosts"])} for cid, v in clients.items()),
                          key=lambda d: str(d["client_id"]))
    errors = _aggregate(g["errors_by"], ["api", "code"], [("count", "count", "sum", None)])
    data.errors = sorted(({"api": r["api"], "code": r["code"], "error": error_name(r["code"]), "count": r["count"]}
                          for r in errors.to_pylist()), key=lambda d: (-d["count"], str(d["api"]), d["code"]))
    data.errors_by = sorted(({"capture": r["capture"], "broker": r["server"], "api": r["api"], "code": r["code"],
                              "error": error_name(r["code"]), "count": r["count"]}
                             for r in g["errors_by"].to_pylist()),
                            key=lambda d: (-d["count"], str(d["capture"]), str(d["broker"]), str(d["api"]), d["code"]))
    by_api = _aggregate(g["latency_by"], ["api", "bucket"], [("count", "count", "sum", None),
                                                             ("max", "max", "max", None)])
    data.latency = sorted(_percentiles(by_api, ["api"]), key=lambda d: (-d["count"], str(d["api"])))
    data.latency_by = sorted(({"capture": r["capture"], "broker": r["server"], **r} for r in
                              _percentiles(g["latency_by"], ["capture", "server", "api"])),
                             key=lambda d: (str(d["api"]), str(d["capture"]), str(d["broker"])))
    for r in data.latency_by:
        del r["server"]
    waits: dict[str, dict] = {}
    for r in g["waits"].to_pylist():  # a row per api and wait asked
        got = waits.setdefault(r["api"], {"waits": Counter(), "waited": 0})
        got["waits"][r["wait"]] += r["count"]
        got["waited"] += r["waited"]
    early = {r["api"]: r for r in _percentiles(g["early"], ["api"])}
    for row in data.latency:
        w = waits.get(row["api"])
        if w is None:
            continue
        n = sum(w["waits"].values())
        row["wait_ms"] = max(w["waits"].items(), key=lambda kv: (kv[1], kv[0]))[0]  # the wait most requests asked
        row["waits"] = sorted(w["waits"])[:5]
        row["waited_out"] = w["waited"] / n if n else 0.0
        e = early.get(row["api"], {"count": 0, "p50": 0.0, "p99": 0.0})
        row["early_count"] = e["count"]
        row["early_p50"] = e["p50"]
        row["early_p99"] = e["p99"]
    data.trailing = sorted(g["trailing"].to_pylist(), key=lambda d: (-d["frames"], d["kind"], str(d["api"])))
    data.unanswered = sorted(g["unanswered"].to_pylist(),
                             key=lambda d: (-d["requests"], str(d["capture"]), str(d["api"]), str(d["client_id"])))
    rows = parts["unanswered_rows"]
    rows = rows.append_column("at", ab.fill_null(rows.column("conn"), 0)).sort_by(
        [("ts", "ascending"), ("capture", "ascending"), ("at", "ascending")]).slice(0, _UNANSWERED_ROWS)
    # (a tz-aware time stamp's to_pylist() imports pandas: the microseconds, then the time)
    rows = rows.select(UNANSWERED_ROWS_SCHEMA.names)
    data.unanswered_rows = rows.set_column(0, "ts", rows.column("ts").cast(_I64)).to_pylist()
    for r in data.unanswered_rows:
        r["ts"] = None if r["ts"] is None else (_EPOCH + timedelta(microseconds=r["ts"])).isoformat()
    # topic ids: the last name given, in the order first seen over the tasks in order
    ids = parts["topic_ids"]
    if fold:
        ids = _aggregate(ids.append_column("seen", ab.numbers(np.arange(ids.num_rows), _I64)),
                         ["capture", "topic_id"], [("topic", "topic", "last", _KEEP_NULLS),
                                                   ("seen", "seen", "min", None)])
        ids = ids.sort_by("seen")
    ids = ids.to_pylist()
    data.topic_ids = {f"{r['capture']}|{r['topic_id']}": r["topic"]
                      for r in sorted(ids, key=lambda r: (r["capture"], r["topic_id"]))}
    names = {r["topic_id"]: r["topic"] for r in ids}
    topics = g["topics"]
    if names:  # topics named by id in the tables: named here, from the capture's Metadata responses
        at = pc.index_in(topics.column("topic").cast(_S), value_set=ab.strings(list(names), _S))
        named = pc.coalesce(ab.strings(list(names.values()), _L).take(at), topics.column("topic"))
        topics = _grouped(topics.set_column(topics.schema.get_field_index("topic"), "topic", named), "topics")
    data.topics = sorted(topics.to_pylist(), key=lambda d: (-d["bytes"], d["source"], str(d["topic"])))
    data.codecs = sorted(({"source": r["source"], "codec": r["codec"], "batches": r["batches"], "records": r["records"],
                           "bytes": r["bytes"], "sets": r["sets"]} for r in g["codecs"].to_pylist()),
                         key=lambda d: (d["source"], -d["bytes"], str(d["codec"])))
    bad = g["decode_errors"]
    if bad.num_rows > 50:  # the 50 most frequent (and every row tied with the 50th), then in Python's order
        counts = ab.to_numpy(bad.column("count"))
        bad = bad.filter(ab.bools(counts >= np.partition(counts, -50)[-50]))
    data.decode_errors = sorted(({"table": r["table"], "api": r["api"], "status": r["status"], "error": r["error"],
                                  "count": r["count"]} for r in bad.to_pylist()),
                                key=lambda d: (-d["count"], str(d["table"]), str(d["api"]), str(d["status"]),
                                               str(d["error"])))[:50]
