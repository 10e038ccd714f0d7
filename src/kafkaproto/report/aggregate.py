"""The report's figures as partial aggregates: computed by each Spark task
over the rows it writes, merged on the driver.

Every figure of the report is a sum, a count, a set or a percentile over the
rows of one or more captures, and every connection is decoded by exactly one
task.  So a task keeps small per-key totals while it writes its tables
(:class:`TaskAggregates`, fed with the same Arrow batches), writes its
``connections`` rows itself, and returns the totals as JSON;
:func:`merge` folds the tasks' totals into the report's numbers.  The job
needs no second pass over its tables, and nothing large crosses into the
JVM.

Latency percentiles come from a mergeable histogram (:func:`latency_bucket`):
values below 256 µs are kept exactly, larger ones in buckets 1/128 of their
size wide, so a percentile is within 0.4 % of the exact nearest-rank value;
the maximum is exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..error_codes import error_name

__all__ = ["CONNECTIONS_SCHEMA", "TaskAggregates", "latency_bucket", "merge", "percentile"]

TS = pa.timestamp("us", tz="UTC")

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


def _hist_into(into: dict, groups: pa.Table, keys: list[str], count: str = "bucket_count",
               most: str = "lat_max") -> None:
    """Latency histograms and maxima by ``keys``, from ``groups``: one row per
    ``keys`` and ``bucket`` with its ``count`` and maximum (``most``).  Read
    column by column (a batch of responses has about as many groups as rows)."""
    cols = [groups.column(k).to_pylist() for k in keys]
    ks = cols[0] if len(keys) == 1 else zip(*cols)
    for k, b, n, m in zip(ks, groups.column("bucket").to_pylist(), groups.column(count).to_pylist(),
                          groups.column(most).to_pylist()):
        got = into.get(k)
        if got is None:
            got = into[k] = {"max": 0, "hist": Counter()}
        got["hist"][b] += n
        if m > got["max"]:
            got["max"] = m


_SKIP_NULLS = pc.ScalarAggregateOptions(skip_nulls=True)
_KEEP_NULLS = pc.ScalarAggregateOptions(skip_nulls=False)


def _grouped(cols: dict[str, pa.Array], keys: list[str], aggs) -> pa.Table:
    """``GROUP BY keys`` over a few columns (groups in the order of their
    first row; ``first`` is the first in row order)."""
    return pa.table(cols).group_by(keys, use_threads=False).aggregate(aggs)


def _group(cols: dict[str, pa.Array], keys: list[str], aggs) -> list[dict]:
    """:func:`_grouped` as plain rows."""
    return _grouped(cols, keys, aggs).to_pylist()


class TaskAggregates:
    """The figures' totals over the rows of one task (one or more captures).

    Feed it every batch written (:meth:`add`, with the table's name), then
    :meth:`connections` gives the ``connections`` rows and :meth:`to_dict`
    the totals for :func:`merge`.
    """

    def __init__(self) -> None:
        # (capture, conn) -> connection totals
        self.conns: dict[tuple[str, int], dict] = {}
        # (capture, conn, client_id, api_key, api, api_version, removed) -> requests
        self.use: Counter = Counter()
        self.errors: Counter = Counter()  # (api, code) -> count
        self.latency: dict[str, dict] = {}  # api -> {"max", "hist": Counter}
        self.topics: dict[tuple[str, str], list[int]] = {}  # (source, topic) -> sets, batches, records, bytes
        self.codecs: dict[tuple[str, str], list[int]] = {}  # (source, codec) -> batches, records, bytes, sets
        self.decode_errors: Counter = Counter()  # (table, api, status, error) -> count
        # breakdowns: (capture, broker, api, code) -> count; (capture, broker, api) -> {"max", "hist"}
        self.errors_by: Counter = Counter()
        self.latency_by: dict[tuple[str, str, str], dict] = {}
        # long polls: api -> {"waits": Counter(wait ms), "waited": n at >= 90 % of their wait}
        self.waits: dict[str, dict] = {}
        self.early: dict[str, dict] = {}  # long polls answered before 90 % of their wait: api -> {"max", "hist"}
        self.unanswered: Counter = Counter()  # (capture, api, client_id) -> requests
        # the earliest few: ts, capture, api, version, client_id, conn, client, server
        self.unanswered_rows: list[list] = []
        self.topic_ids: dict[tuple[str, str], str] = {}  # (capture, topic id) -> name
        # frames with bytes after their message body: (kind, api, client_id) -> [frames, bytes]
        self.trailing: dict[tuple, list[int]] = {}

    # -- feeding ---------------------------------------------------------------
    def add(self, table: str, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        if table == "requests":
            self._frames(batch, True)
        elif table == "responses":
            self._frames(batch, False)
        elif table == "record_sets":
            self._record_sets(batch)
        elif table == "unanswered":
            self._unanswered(batch)
        elif table == "topic_ids":
            for r in batch.to_pylist():
                self.topic_ids[(r["capture"], r["topic_id"])] = r["topic"]

    _UNANSWERED_ROWS = 200

    def _unanswered(self, batch) -> None:
        col = batch.column
        cols = {"capture": col("capture"), "api": col("api"), "client_id": col("client_id")}
        for r in _group(cols, list(cols), [("api", "count")]):
            self.unanswered[(r["capture"], r["api"], r["client_id"])] += r["api_count"]
        rows = pa.table({k: col(k) for k in ("ts", "capture", "api", "api_version", "client_id", "conn", "client",
                                             "server")})
        rows = rows.sort_by([("ts", "ascending")]).slice(0, self._UNANSWERED_ROWS)
        for r in rows.to_pylist():
            ts = r["ts"]
            self.unanswered_rows.append([None if ts is None else ts.isoformat(), r["capture"], r["api"],
                                         r["api_version"], r["client_id"], r["conn"], r["client"], r["server"]])
        self.unanswered_rows.sort(key=lambda x: (x[0] is None, str(x[0])))
        del self.unanswered_rows[self._UNANSWERED_ROWS:]

    def _frames(self, batch, request: bool) -> None:
        col = batch.column
        kind = "requests" if request else "responses"
        undecodable = pc.equal(col("status"), "undecodable").fill_null(False).cast(pa.int64())
        cols = {"capture": col("capture"), "conn": col("conn"), "ts": col("ts").cast(pa.int64()),
                "size": col("size"), "undecodable": undecodable}
        for r in _group(cols, ["capture", "conn"], [("ts", "min"), ("ts", "max"), ("size", "sum"),
                                                     ("conn", "count"), ("undecodable", "sum")]):
            c = self._conn(r["capture"], r["conn"])
            # a frame without a time (pcapng simple packets, time stamps out of range) has a null ts
            c["first_ts"] = min((t for t in (c["first_ts"], r["ts_min"]) if t is not None), default=None)
            c["last_ts"] = max((t for t in (c["last_ts"], r["ts_max"]) if t is not None), default=None)
            c[kind] += r["conn_count"]
            c["bytes_to_broker" if request else "bytes_from_broker"] += r["size_sum"] or 0
            c["undecodable"] += r["undecodable_sum"] or 0
        # first address seen, every client id, the first software name a request gave (by groups: a
        # batch has few connections and client ids for its many frames)
        for r in _group({"capture": col("capture"), "conn": col("conn"), "client": col("client"),
                         "server": col("server")}, ["capture", "conn"], [("client", "first", _SKIP_NULLS),
                                                                         ("server", "first", _SKIP_NULLS)]):
            c = self.conns[(r["capture"], r["conn"])]
            if c["client"] is None:
                c["client"] = r["client_first"]
            if c["server"] is None:
                c["server"] = r["server_first"]
        for r in _group({"capture": col("capture"), "conn": col("conn"), "client_id": col("client_id")},
                        ["capture", "conn", "client_id"], []):
            self.conns[(r["capture"], r["conn"])]["client_ids"].add(r["client_id"])
        if request:
            named = col("software_name").is_valid()
            if pc.any(named).as_py():
                cols = {k: col(k).filter(named) for k in ("capture", "conn", "software_name", "software_version")}
                for r in _group(cols, ["capture", "conn"], [("software_name", "first", _KEEP_NULLS),
                                                             ("software_version", "first", _KEEP_NULLS)]):
                    c = self.conns[(r["capture"], r["conn"])]
                    if c["software_name"] is None:
                        c["software_name"] = r["software_name_first"]
                        c["software_version"] = r["software_version_first"]
        extra = col("trailing_bytes")
        if pc.sum(extra).as_py():
            has = pc.greater(extra, 0).fill_null(False)
            cols = {"api": col("api").filter(has), "client_id": col("client_id").filter(has),
                    "bytes": extra.filter(has).cast(pa.int64())}
            for r in _group(cols, ["api", "client_id"], [("bytes", "count"), ("bytes", "sum")]):
                got = self.trailing.setdefault((kind, r["api"], r["client_id"]), [0, 0])
                got[0] += r["bytes_count"]
                got[1] += r["bytes_sum"]
        if request:
            cols = {"capture": col("capture"), "conn": col("conn"), "client_id": col("client_id"),
                    "api_key": col("api_key"), "api": col("api"), "api_version": col("api_version"),
                    "removed": col("removed_in_kafka4")}
            for r in _group(cols, list(cols), [("conn", "count")]):
                self.use[(r["capture"], r["conn"], r["client_id"], r["api_key"], r["api"], r["api_version"],
                          bool(r["removed"]))] += r["conn_count"]
        else:
            codes = col("error_codes")
            if pc.sum(pc.list_value_length(codes).fill_null(0)).as_py():
                rows = pc.list_parent_indices(codes)
                cols = {"capture": col("capture").take(rows), "server": col("server").take(rows),
                        "api": col("api").take(rows), "code": pc.list_flatten(codes)}
                for r in _group(cols, list(cols), [("code", "count")]):
                    self.errors[(r["api"], r["code"])] += r["code_count"]
                    self.errors_by[(r["capture"], r["server"], r["api"], r["code"])] += r["code_count"]
            lat = col("latency_us")
            if lat.null_count < len(lat):
                ok = lat.is_valid()
                apis = col("api").filter(ok)
                vals = lat.filter(ok).to_numpy(zero_copy_only=False)
                buckets = pa.array(latency_bucket(vals))
                by = _grouped({"capture": col("capture").filter(ok), "server": col("server").filter(ok),
                               "api": apis, "bucket": buckets, "lat": pa.array(vals)},
                              ["capture", "server", "api", "bucket"], [("bucket", "count"), ("lat", "max")])
                _hist_into(self.latency_by, by, ["capture", "server", "api"])
                # by api alone: the same groups folded (fewer rows than the batch)
                _hist_into(self.latency, by.group_by(["api", "bucket"], use_threads=False).aggregate(
                    [("bucket_count", "sum"), ("lat_max", "max")]), ["api"], "bucket_count_sum", "lat_max_max")
                wait = col("wait_ms").filter(ok)
                if wait.null_count < len(wait):
                    has = wait.is_valid()
                    w_ms = wait.filter(has).to_numpy(zero_copy_only=False).astype(np.int64)
                    w_lat = vals[has.to_numpy(zero_copy_only=False)]
                    w_api = apis.filter(has)
                    waited = w_lat >= w_ms * 900  # at 90 % of its wait or later (µs): the broker waited it out
                    for r in _group({"api": w_api, "wait": pa.array(w_ms), "waited": pa.array(waited.astype(np.int64))},
                                    ["api", "wait"], [("waited", "sum"), ("wait", "count")]):
                        got = self.waits.setdefault(r["api"], {"waits": Counter(), "waited": 0})
                        got["waits"][r["wait"]] += r["wait_count"]
                        got["waited"] += r["waited_sum"]
                    early = ~waited
                    if early.any():
                        eb = pa.array(latency_bucket(w_lat[early]))
                        _hist_into(self.early, _grouped({"api": w_api.filter(pa.array(early)), "bucket": eb,
                                                         "lat": pa.array(w_lat[early])}, ["api", "bucket"],
                                                        [("bucket", "count"), ("lat", "max")]), ["api"])
        self._errors(batch, kind)

    def _errors(self, batch, kind: str) -> None:
        err = batch.column("error")
        if err.null_count == len(err):
            return
        ok = err.is_valid()
        if kind == "record_sets":
            n = pc.sum(ok.cast(pa.int64())).as_py()
            api = pa.nulls(n, pa.string())
            status = pa.nulls(n, pa.string())
        else:
            api = batch.column("api").filter(ok)
            status = batch.column("status").filter(ok)
        cols = {"api": api, "status": status, "error": err.filter(ok)}
        for r in _group(cols, ["api", "status", "error"], [("error", "count")]):
            self.decode_errors[(kind, r["api"], r["status"], r["error"])] += r["error_count"]

    def _record_sets(self, batch) -> None:
        col = batch.column
        cols = {"source": col("source"), "topic": col("topic"), "codec": col("codec"),
                "batches": col("batches").cast(pa.int64()), "records": col("records"), "bytes": col("bytes")}
        sums = [("batches", "sum"), ("records", "sum"), ("bytes", "sum"), ("source", "count")]
        for r in _group(cols, ["source", "topic"], sums):
            got = self.topics.setdefault((r["source"], r["topic"]), [0, 0, 0, 0])
            for k, v in enumerate((r["source_count"], r["batches_sum"], r["records_sum"], r["bytes_sum"])):
                got[k] += v or 0
        for r in _group(cols, ["source", "codec"], sums):
            got = self.codecs.setdefault((r["source"], r["codec"]), [0, 0, 0, 0])
            for k, v in enumerate((r["batches_sum"], r["records_sum"], r["bytes_sum"], r["source_count"])):
                got[k] += v or 0
        self._errors(batch, "record_sets")

    def _conn(self, capture: str, conn: int) -> dict:
        c = self.conns.get((capture, conn))
        if c is None:
            c = self.conns[(capture, conn)] = {
                "capture": capture, "conn": conn, "client": None, "server": None, "first_ts": None, "last_ts": None,
                "requests": 0, "responses": 0, "bytes_to_broker": 0, "bytes_from_broker": 0,
                "client_ids": set(), "undecodable": 0, "software_name": None, "software_version": None}
        return c

    # -- results ---------------------------------------------------------------
    def connections(self) -> pa.Table:
        """The ``connections`` rows (:data:`CONNECTIONS_SCHEMA`), by capture and connection."""
        rows = []
        for key in sorted(self.conns):
            c = dict(self.conns[key])
            c["client_ids"] = sorted(x for x in c["client_ids"] if x is not None)
            rows.append(c)
        return pa.Table.from_pylist(rows, schema=CONNECTIONS_SCHEMA)

    def to_dict(self) -> dict:
        """The totals as JSON-able lists, for :func:`merge`."""
        # the software a connection named in ApiVersions: "name version"
        software = {k: None if c["software_name"] is None else
                    " ".join(x for x in (c["software_name"], c["software_version"]) if x is not None)
                    for k, c in self.conns.items()}
        use: Counter = Counter()
        for (capture, conn, client_id, key, api, version, removed), n in self.use.items():
            use[(client_id, software.get((capture, conn)), key, api, version, removed)] += n
        clients: dict[str | None, dict] = {}
        for (capture, conn), c in self.conns.items():
            sw = software[(capture, conn)]
            ids = sorted(x for x in c["client_ids"] if x is not None) or [None]
            for cid in ids:
                got = clients.setdefault(cid, {"connections": [], "software": set(), "addresses": set()})
                got["connections"].append([capture, conn])
                if sw is not None:
                    got["software"].add(sw)
                if c["client"] is not None:
                    got["addresses"].add(c["client"])
        return {
            "connections": len(self.conns),
            "api_use": [list(k) + [n] for k, n in use.items()],
            "clients": [[cid, v["connections"], sorted(v["software"]), sorted(v["addresses"])]
                        for cid, v in clients.items()],
            "errors": [[api, code, n] for (api, code), n in self.errors.items()],
            "latency": [[api, v["max"], sorted(v["hist"].items())] for api, v in self.latency.items()],
            "topics": [list(k) + v for k, v in self.topics.items()],
            "codecs": [list(k) + v for k, v in self.codecs.items()],
            "decode_errors": [list(k) + [n] for k, n in self.decode_errors.items()],
            "errors_by": [list(k) + [n] for k, n in self.errors_by.items()],
            "latency_by": [list(k) + [v["max"], sorted(v["hist"].items())] for k, v in self.latency_by.items()],
            "waits": [[api, sorted(v["waits"].items()), v["waited"],
                       [e["max"], sorted(e["hist"].items())] if (e := self.early.get(api)) else None]
                      for api, v in self.waits.items()],
            "unanswered": [list(k) + [n] for k, n in self.unanswered.items()],
            "unanswered_rows": self.unanswered_rows,
            "topic_ids": [list(k) + [v] for k, v in self.topic_ids.items()],
            "trailing": [list(k) + v for k, v in self.trailing.items()],
        }


def merge(parts: Iterable[dict], data) -> None:
    """Fold the tasks' :meth:`TaskAggregates.to_dict` into ``data`` (a
    :class:`~kafkaproto.report.job.ReportData`): its api use, clients,
    errors, latency, topics, codecs and decode errors."""
    use: Counter = Counter()
    clients: dict[str | None, dict] = {}
    errors: Counter = Counter()
    latency: dict[str, dict] = {}
    topics: dict[tuple[str, str], list[int]] = {}
    codecs: dict[tuple[str, str], list[int]] = {}
    bad: Counter = Counter()
    errors_by: Counter = Counter()
    latency_by: dict[tuple, dict] = {}
    waits: dict[str, dict] = {}
    unanswered: Counter = Counter()
    unanswered_rows: list[list] = []
    topic_ids: dict[tuple[str, str], str] = {}
    trailing: dict[tuple, list[int]] = {}
    connections = 0
    for p in parts:
        connections += p["connections"]
        for *k, n in p.get("errors_by", ()):
            errors_by[tuple(k)] += n
        for capture, server, api, mx, hist in p.get("latency_by", ()):
            got = latency_by.setdefault((capture, server, api), {"max": 0, "hist": Counter()})
            got["max"] = max(got["max"], mx)
            for b, c in hist:
                got["hist"][b] += c
        for api, wv, waited, early in p.get("waits", ()):
            got = waits.setdefault(api, {"waits": Counter(), "waited": 0, "early": {"max": 0, "hist": Counter()}})
            for w, c in wv:
                got["waits"][w] += c
            got["waited"] += waited
            if early:
                got["early"]["max"] = max(got["early"]["max"], early[0])
                for b, c in early[1]:
                    got["early"]["hist"][b] += c
        for *k, n in p.get("unanswered", ()):
            unanswered[tuple(k)] += n
        unanswered_rows += p.get("unanswered_rows", ())
        for capture, tid, name in p.get("topic_ids", ()):
            topic_ids[(capture, tid)] = name
        for kind, api, cid, frames, nbytes in p.get("trailing", ()):
            got = trailing.setdefault((kind, api, cid), [0, 0])
            got[0] += frames
            got[1] += nbytes
        for *k, n in p["api_use"]:
            use[tuple(k)] += n
        for cid, conns, sw, addrs in p["clients"]:
            got = clients.setdefault(cid, {"connections": set(), "software": set(), "addresses": set()})
            got["connections"].update(tuple(c) for c in conns)
            got["software"].update(sw)
            got["addresses"].update(addrs)
        for api, code, n in p["errors"]:
            errors[(api, code)] += n
        for api, mx, hist in p["latency"]:
            got = latency.setdefault(api, {"max": 0, "hist": Counter()})
            got["max"] = max(got["max"], mx)
            for b, c in hist:
                got["hist"][b] += c
        for table, into in ((p["topics"], topics), (p["codecs"], codecs)):
            for a, b, *v in table:
                got = into.setdefault((a, b), [0] * len(v))
                for k, x in enumerate(v):
                    got[k] += x
        for *k, n in p["decode_errors"]:
            bad[tuple(k)] += n
    data.totals["connections"] = connections

    def num(x):
        return -1 if x is None else x

    data.api_use = sorted(({"client_id": k[0], "software": k[1], "api_key": k[2], "api": k[3], "api_version": k[4],
                            "requests": n, "removed": bool(k[5])} for k, n in use.items()),
                          key=lambda d: (str(d["client_id"]), str(d["software"]), num(d["api_key"]),
                                         num(d["api_version"])))
    data.clients = sorted(({"client_id": cid, "connections": len(v["connections"]), "software": sorted(v["software"]),
                            "hosts": sorted({a.rsplit(":", 1)[0] for a in v["addresses"]})}
                           for cid, v in clients.items()), key=lambda d: str(d["client_id"]))
    data.errors = sorted(({"api": api, "code": code, "error": error_name(code), "count": n}
                          for (api, code), n in errors.items()), key=lambda d: (-d["count"], str(d["api"]), d["code"]))
    data.latency = sorted(({"api": api, "count": sum(v["hist"].values()),
                            **{f"p{int(q * 100)}": percentile(v["hist"], q, v["max"]) / 1000 for q in (0.5, 0.9, 0.99)},
                            "max": v["max"] / 1000} for api, v in latency.items()),
                          key=lambda d: (-d["count"], str(d["api"])))
    data.topics = sorted(({"source": s, "topic": t, "sets": v[0], "batches": v[1], "records": v[2], "bytes": v[3]}
                          for (s, t), v in topics.items()), key=lambda d: (-d["bytes"], d["source"], str(d["topic"])))
    data.codecs = sorted(({"source": s, "codec": c, "batches": v[0], "records": v[1], "bytes": v[2], "sets": v[3]}
                          for (s, c), v in codecs.items()), key=lambda d: (d["source"], -d["bytes"], str(d["codec"])))
    data.errors_by = sorted(({"capture": k[0], "broker": k[1], "api": k[2], "code": k[3], "error": error_name(k[3]),
                              "count": n} for k, n in errors_by.items()),
                            key=lambda d: (-d["count"], str(d["capture"]), str(d["broker"]), str(d["api"]), d["code"]))
    data.latency_by = sorted(({"capture": k[0], "broker": k[1], "api": k[2], "count": sum(v["hist"].values()),
                               **{f"p{int(q * 100)}": percentile(v["hist"], q, v["max"]) / 1000
                                  for q in (0.5, 0.9, 0.99)}, "max": v["max"] / 1000}
                              for k, v in latency_by.items()),
                             key=lambda d: (str(d["api"]), str(d["capture"]), str(d["broker"])))
    for row in data.latency:
        w = waits.get(row["api"])
        if w is None:
            continue
        n = sum(w["waits"].values())
        row["wait_ms"] = max(w["waits"].items(), key=lambda kv: (kv[1], kv[0]))[0]  # the wait most requests asked
        row["waits"] = sorted(w["waits"])[:5]
        row["waited_out"] = w["waited"] / n if n else 0.0
        e = w["early"]
        row["early_count"] = sum(e["hist"].values())
        row["early_p50"] = percentile(e["hist"], 0.5, e["max"]) / 1000
        row["early_p99"] = percentile(e["hist"], 0.99, e["max"]) / 1000
    data.trailing = sorted(({"kind": k[0], "api": k[1], "client_id": k[2], "frames": v[0], "bytes": v[1]}
                            for k, v in trailing.items()), key=lambda d: (-d["frames"], d["kind"], str(d["api"])))
    data.unanswered = sorted(({"capture": k[0], "api": k[1], "client_id": k[2], "requests": n}
                              for k, n in unanswered.items()),
                             key=lambda d: (-d["requests"], str(d["capture"]), str(d["api"]), str(d["client_id"])))
    unanswered_rows.sort(key=lambda x: (x[0] is None, str(x[0]), str(x[1]), x[5] or 0))
    data.unanswered_rows = [dict(zip(("ts", "capture", "api", "api_version", "client_id", "conn", "client", "server"),
                                     r)) for r in unanswered_rows[:TaskAggregates._UNANSWERED_ROWS]]
    data.topic_ids = {f"{c}|{t}": n for (c, t), n in sorted(topic_ids.items())}
    # topics named by id in the tables: named here, from the capture's Metadata responses
    names = {t: n for (_c, t), n in topic_ids.items()}
    if names:
        merged: dict[tuple[str, str], dict] = {}
        for r in data.topics:
            r["topic"] = names.get(r["topic"], r["topic"])
            got = merged.get((r["source"], r["topic"]))
            if got is None:
                merged[(r["source"], r["topic"])] = r
            else:
                for k in ("sets", "batches", "records", "bytes"):
                    got[k] += r[k]
        data.topics = sorted(merged.values(), key=lambda d: (-d["bytes"], d["source"], str(d["topic"])))
    data.decode_errors = [{"table": k[0], "api": k[1], "status": k[2], "error": k[3], "count": n}
                          for k, n in sorted(bad.items(), key=lambda kv: (-kv[1], tuple(str(x) for x in kv[0])))[:50]]
