"""The Spark job: captures in, Parquet tables and the report's numbers out.

One Spark task per capture (``mapInArrow``) runs
:func:`kafkaproto.report.decode.write_tables`: it decodes the capture
(reading, reassembly, framing and pairing are sequential within a capture;
captures run in parallel) and writes one Parquet file per table with
pyarrow, returning only a manifest of what it wrote.  Records and frames
never cross into the JVM: converting millions of nested rows there cost 20
times the decoding.  The driver keeps the files of the tasks that succeeded,
then Spark reads the tables back (column pruning keeps this cheap) for the
connections table and every figure of the report.

Runs on ``local[*]`` by default and on any ``--master`` unchanged, as long as
the executors can read the capture paths and have kafkaproto installed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..capture import Accounting
from ..error_codes import error_name
from .decode import TABLE_COLUMNS, accounting_from_dict

__all__ = ["ReportData", "run_job", "session"]

TABLES = ("connections", "requests", "responses", "records", "record_sets", "accounting")


@dataclass
class ReportData:
    """Everything the summary and the HTML page show (plain Python values)."""

    out: str = ""
    captures: List[Dict[str, object]] = field(default_factory=list)  # name, path, bytes
    input_bytes: int = 0
    seconds: float = 0.0
    decode_seconds: float = 0.0  # until every capture was decoded and its tables written
    master: str = ""
    cores: int = 1
    totals: Dict[str, int] = field(default_factory=dict)
    accounting: Optional[Accounting] = None
    accounting_by_capture: Dict[str, Accounting] = field(default_factory=dict)
    #: rows: client_id, software, api, api_key, api_version, requests, removed
    api_use: List[Dict[str, object]] = field(default_factory=list)
    clients: List[Dict[str, object]] = field(default_factory=list)
    errors: List[Dict[str, object]] = field(default_factory=list)  # api, code, error, count
    latency: List[Dict[str, object]] = field(default_factory=list)  # api, count, p50, p90, p99, max (ms)
    topics: List[Dict[str, object]] = field(default_factory=list)  # source, topic, sets, batches, records, bytes
    codecs: List[Dict[str, object]] = field(default_factory=list)  # source, codec, batches, records, bytes
    decode_errors: List[Dict[str, object]] = field(default_factory=list)  # table, api, status, error, count
    tables: Dict[str, str] = field(default_factory=dict)  # table -> path

    @property
    def removed(self) -> List[Dict[str, object]]:
        return [r for r in self.api_use if r["removed"]]

    def to_json(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k not in ("accounting", "accounting_by_capture")}
        d["accounting"] = self.accounting.to_dict() if self.accounting else None
        return json.dumps(d, indent=1, default=str)


# ---------------------------------------------------------------------------
# the session


def session(master: Optional[str] = None, conf: Optional[Dict[str, str]] = None):
    """A SparkSession for the job: ``local[*]`` unless ``master`` says otherwise.

    Local masters go through :func:`kafkaproto.spark.local_session` (workers
    run this interpreter); any other master is used as given, with the
    Python of the cluster's own configuration.
    """
    conf = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "false",
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
            "spark.ui.showConsoleProgress": "false", "spark.sql.adaptive.enabled": "true",
            **(conf or {})}
    master = master or "local[*]"
    if master.startswith("local"):
        from .. import spark as kps

        cores = master[len("local["):-1] if master.startswith("local[") else "1"
        return kps.local_session("kafkaproto-report", cores=cores, conf=conf)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("kafkaproto-report") \
        .config("spark.sql.session.timeZone", "UTC")
    for k, v in conf.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


# ---------------------------------------------------------------------------
# progress


class _Progress:
    """Prints, every few seconds while the job runs, how many captures (and
    bytes of them) are done: one task per capture, in the order of the list."""

    def __init__(self, spark, captures, out=sys.stderr, every: float = 3.0) -> None:
        self.sc = spark.sparkContext
        self.captures = captures
        self.total = sum(c["bytes"] for c in captures)
        self.out = out
        self.every = every
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()
        self.phase = "decoding captures"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self.stop_event.wait(self.every):
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            stages = [s for s in stages if s is not None]
            if not stages:
                continue
            done = sum(s.numCompletedTasks for s in stages)
            total = sum(s.numTasks for s in stages)
            active = sum(s.numActiveTasks for s in stages)
            elapsed = time.monotonic() - self.t0
            print(f"[report {elapsed:6.1f}s] {self.phase}: {done}/{total} tasks done, {active} running "
                  f"({len(self.captures)} captures, {self.total / 1e6:.1f} MB)", file=self.out, flush=True)


# ---------------------------------------------------------------------------
# the job


MANIFEST_SCHEMA = "capture string, table string, file string, rows long, accounting string"


def _decode_fn(out: str, ports):
    """The task: decode the captures of its partition, write their tables,
    return what it wrote (small rows: the manifest)."""

    def run(batches):
        import pyarrow as pa
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        from .decode import write_tables

        fs, base = pafs.FileSystem.from_uri(out)
        ctx = TaskContext.get()
        attempt = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}" if ctx else "00000-0"
        for batch in batches:
            names = batch.column("name").to_pylist()
            for k, (name, path) in enumerate(zip(names, batch.column("path").to_pylist())):
                written, acc = write_tables(path, base, f"part-{attempt}-{k:03d}", capture=name, ports=ports,
                                            filesystem=fs)
                info = json.dumps(acc.to_dict())
                yield pa.RecordBatch.from_pylist(
                    [{"capture": name, "table": t, "file": f, "rows": n, "accounting": info if i == 0 else None}
                     for i, (t, f, n) in enumerate(written)],
                    schema=pa.schema([("capture", pa.string()), ("table", pa.string()), ("file", pa.string()),
                                      ("rows", pa.int64()), ("accounting", pa.string())]))

    return run


def _capture_list(paths: Sequence[str]) -> List[Dict[str, object]]:
    caps = []
    seen: Counter = Counter()
    for p in paths:
        path = os.path.abspath(os.fspath(p))
        name = os.path.basename(path.rstrip("/")) or path
        seen[name] += 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        if os.path.isdir(path):
            size = sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())
        else:
            size = os.path.getsize(path)
        caps.append({"name": name, "path": path, "bytes": size})
    return caps


def _keep_only(out: Path, files) -> None:
    """Remove table files no successful task reported (failed attempts, earlier runs)."""
    for table in TABLE_COLUMNS:
        folder = out / table
        if folder.is_dir():
            for f in folder.iterdir():
                if f.name not in files:
                    f.unlink()


def run_job(paths: Sequence[str], out, *, spark=None, master: Optional[str] = None, ports=None,
            progress: bool = True, conf: Optional[Dict[str, str]] = None, log=sys.stderr) -> ReportData:
    """Decode ``paths`` on Spark, write the tables under ``out``, and return
    the report's numbers.  ``spark``: an existing session (kept open);
    otherwise one is made for ``master`` and stopped at the end."""
    from pyspark.sql import functions as F

    t0 = time.monotonic()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    caps = _capture_list(paths)
    own = spark is None
    if own:
        spark = session(master, conf)
    data = ReportData(out=str(out), captures=caps, input_bytes=sum(c["bytes"] for c in caps),
                      master=spark.sparkContext.master, cores=spark.sparkContext.defaultParallelism)
    try:
        # largest captures first: they bound the run's length
        order = sorted(caps, key=lambda c: -c["bytes"])
        rdd = spark.sparkContext.parallelize([(c["name"], c["path"]) for c in order], max(1, len(order)))
        cap_df = spark.createDataFrame(rdd, "name string, path string")
        uri = out.resolve().as_uri() if "://" not in str(out) else str(out)
        ctx = _Progress(spark, caps) if progress else None
        try:
            if ctx:
                ctx.__enter__()
            manifest = cap_df.mapInArrow(_decode_fn(uri, sorted(ports) if ports else None), MANIFEST_SCHEMA) \
                .collect()
            data.decode_seconds = time.monotonic() - t0
            _keep_only(out, {Path(r["file"]).name for r in manifest})
            for r in manifest:
                if r["accounting"]:
                    acc = accounting_from_dict(json.loads(r["accounting"]))
                    data.accounting_by_capture[r["capture"]] = acc
            data.accounting = Accounting()
            for acc in data.accounting_by_capture.values():
                data.accounting.merge(acc)
            for table in TABLE_COLUMNS:
                data.tables[table] = str(out / table)
            if ctx:
                ctx.phase = "connections and figures"
            read = {t: spark.read.parquet(str(out / t)) for t in ("requests", "responses", "record_sets")}
            frames = read["requests"].select("capture", "conn", "client", "server", "ts", "size", "client_id",
                                             "status", F.lit("request").alias("table")) \
                .unionByName(read["responses"].select("capture", "conn", "client", "server", "ts", "size",
                                                      "client_id", "status", F.lit("response").alias("table")))
            software = read["requests"].where(F.col("software_name").isNotNull()) \
                .groupBy("capture", "conn").agg(F.first("software_name").alias("sw_name"),
                                                F.first("software_version").alias("sw_version"))
            conns = frames.groupBy("capture", "conn").agg(
                F.first("client").alias("client"), F.first("server").alias("server"),
                F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"),
                F.sum(F.when(F.col("table") == "request", 1).otherwise(0)).alias("requests"),
                F.sum(F.when(F.col("table") == "response", 1).otherwise(0)).alias("responses"),
                F.sum(F.when(F.col("table") == "request", F.col("size")).otherwise(0)).alias("bytes_to_broker"),
                F.sum(F.when(F.col("table") == "response", F.col("size")).otherwise(0)).alias("bytes_from_broker"),
                F.array_sort(F.collect_set("client_id")).alias("client_ids"),
                F.sum(F.when(F.col("status") == "undecodable", 1).otherwise(0)).alias("undecodable"),
            ).join(software, ["capture", "conn"], "left") \
                .withColumnRenamed("sw_name", "software_name").withColumnRenamed("sw_version", "software_version")
            conns.coalesce(1).write.mode("overwrite").parquet(str(out / "connections"))
            data.tables["connections"] = str(out / "connections")
            conns = spark.read.parquet(str(out / "connections"))
            counts = {}
            for r in manifest:
                counts[r["table"]] = counts.get(r["table"], 0) + r["rows"]
            _figures(spark, read, conns, counts, data)
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    finally:
        if own:
            spark.stop()
    data.seconds = time.monotonic() - t0
    (out / "report.json").write_text(data.to_json())
    return data


def _figures(spark, read, conns, counts, data: ReportData) -> None:
    from pyspark.sql import functions as F

    col = F.col
    data.totals = {"requests": counts.get("requests", 0), "responses": counts.get("responses", 0),
                   "records": counts.get("records", 0), "record_sets": counts.get("record_sets", 0),
                   "connections": conns.count()}
    # clients and what they use; software comes from ApiVersions on the same connection
    conn_sw = conns.select("capture", "conn", "software_name", "software_version")
    req = read["requests"].select("capture", "conn", "client_id", "api_key", "api",
                                                       "api_version", "removed_in_kafka4") \
        .join(conn_sw, ["capture", "conn"], "left")
    sw = F.when(col("software_name").isNotNull(),
                F.concat_ws(" ", col("software_name"), col("software_version"))).otherwise(F.lit(None))
    use = req.withColumn("software", sw).groupBy("client_id", "software", "api_key", "api", "api_version",
                                                 "removed_in_kafka4").count()
    data.api_use = sorted(({"client_id": r["client_id"], "software": r["software"], "api_key": r["api_key"],
                            "api": r["api"], "api_version": r["api_version"], "requests": r["count"],
                            "removed": bool(r["removed_in_kafka4"])} for r in use.collect()),
                          key=lambda d: (str(d["client_id"]), str(d["software"]), d["api_key"] if d["api_key"]
                                         is not None else -1, d["api_version"] if d["api_version"] is not None
                                         else -1))
    cl = conns.withColumn("client_id", F.explode_outer("client_ids")).withColumn(
        "software", F.when(col("software_name").isNotNull(),
                           F.concat_ws(" ", col("software_name"), col("software_version")))) \
        .groupBy("client_id").agg(F.countDistinct("capture", "conn").alias("connections"),
                                  F.array_sort(F.collect_set("software")).alias("software"),
                                  F.array_sort(F.collect_set("client")).alias("addresses"))
    data.clients = sorted(({"client_id": r["client_id"], "connections": r["connections"],
                            "software": list(r["software"]), "hosts": sorted({a.rsplit(":", 1)[0]
                                                                              for a in r["addresses"]})}
                           for r in cl.collect()), key=lambda d: str(d["client_id"]))
    # errors by api
    resp = read["responses"]
    errs = resp.select("api", F.explode("error_codes").alias("code")).groupBy("api", "code").count()
    data.errors = sorted(({"api": r["api"], "code": r["code"], "error": error_name(r["code"]), "count": r["count"]}
                          for r in errs.collect()), key=lambda d: (-d["count"], str(d["api"]), d["code"]))
    # latency percentiles per api (milliseconds)
    lat = resp.where(col("latency_us").isNotNull()).groupBy("api").agg(
        F.count("*").alias("n"),
        F.percentile_approx("latency_us", [0.5, 0.9, 0.99], 10000).alias("p"),
        F.max("latency_us").alias("max"))
    data.latency = sorted(({"api": r["api"], "count": r["n"], "p50": r["p"][0] / 1000, "p90": r["p"][1] / 1000,
                            "p99": r["p"][2] / 1000, "max": r["max"] / 1000} for r in lat.collect()),
                          key=lambda d: -d["count"])
    # bytes and records per topic, codec mix
    sets = read["record_sets"]
    tp = sets.groupBy("source", "topic").agg(F.count("*").alias("sets"), F.sum("batches").alias("batches"),
                                             F.sum("records").alias("records"), F.sum("bytes").alias("bytes"))
    data.topics = sorted(({"source": r["source"], "topic": r["topic"], "sets": r["sets"], "batches": r["batches"],
                           "records": r["records"], "bytes": r["bytes"]} for r in tp.collect()),
                         key=lambda d: (-d["bytes"], d["source"], str(d["topic"])))
    cc = sets.groupBy("source", "codec").agg(F.sum("batches").alias("batches"), F.sum("records").alias("records"),
                                             F.sum("bytes").alias("bytes"), F.count("*").alias("sets"))
    data.codecs = sorted(({"source": r["source"], "codec": r["codec"], "batches": r["batches"],
                           "records": r["records"], "bytes": r["bytes"], "sets": r["sets"]} for r in cc.collect()),
                         key=lambda d: (d["source"], -d["bytes"]))
    # frames and record sets that did not decode, by reason
    bad = read["requests"].select(F.lit("requests").alias("table"), "api", "status", "error") \
        .unionByName(read["responses"].select(F.lit("responses").alias("table"), "api", "status", "error")) \
        .unionByName(sets.select(F.lit("record_sets").alias("table"), F.lit(None).cast("string").alias("api"),
                                 F.lit(None).cast("string").alias("status"), "error")) \
        .where(col("error").isNotNull()).groupBy("table", "api", "status", "error").count() \
        .orderBy(F.desc("count")).limit(50)
    data.decode_errors = [{"table": r["table"], "api": r["api"], "status": r["status"], "error": r["error"],
                           "count": r["count"]} for r in bad.collect()]
