"""The Spark job: captures in, Parquet tables and the report's numbers out.

One Spark task per capture (``RDD.mapPartitions``) runs
:func:`kafkaproto.report.decode.write_tables`: it decodes the capture
(reading, reassembly, framing and pairing are sequential within a capture;
captures run in parallel) and writes one Parquet file per table with
pyarrow, returning only a manifest of what it wrote.  Records and frames
never cross into the JVM: converting millions of nested rows there cost 20
times the decoding.  The same task keeps the figures' partial totals over
the rows it writes and writes its captures' ``connections`` rows
(:mod:`kafkaproto.report.aggregate`); the manifest carries those totals, the
driver keeps the files of the tasks that succeeded and merges the totals.
One pass over the captures, no second job over the tables.

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
from .aggregate import merge
from .decode import TABLE_COLUMNS, accounting_from_dict

__all__ = ["ReportData", "run_job", "session"]

TABLES = ("connections", *TABLE_COLUMNS)  # every table the job writes


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

        # In local mode the driver's JVM only schedules tasks: its client
        # compiler alone and the serial collector start it about a second
        # sooner and make the first job faster (1.9-2.1 s vs 2.3-2.9 s here).
        conf.setdefault("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
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


def _decode_fn(out: str, ports):
    """The task: decode the captures of its partition, write their tables,
    return what it wrote (the manifest: a few small dicts per capture, the
    first carrying the capture's accounting and figure totals as JSON)."""

    def run(captures):
        from pyarrow import fs as pafs
        from pyspark import TaskContext

        from .aggregate import TaskAggregates
        from .decode import write_tables

        fs, base = pafs.FileSystem.from_uri(out)
        ctx = TaskContext.get()
        attempt = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}" if ctx else "00000-0"
        for k, (name, path) in enumerate(captures):
            agg = TaskAggregates()
            written, acc = write_tables(path, base, f"part-{attempt}-{k:03d}", capture=name, ports=ports,
                                        filesystem=fs, aggregates=agg)
            info = json.dumps(acc.to_dict())
            totals = json.dumps(agg.to_dict())
            for i, (t, f, n) in enumerate(written):
                yield {"capture": name, "table": t, "file": f, "rows": n, "accounting": info if i == 0 else None,
                       "aggregates": totals if i == 0 else None}

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
    for table in TABLES:
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
        # the RDD API: the manifest is a few small dicts, and a Python RDD job
        # starts in a third of the time a first DataFrame job takes (no
        # query planning or code generation in a cold JVM)
        rdd = spark.sparkContext.parallelize([(c["name"], c["path"]) for c in order], max(1, len(order)))
        uri = out.resolve().as_uri() if "://" not in str(out) else str(out)
        ctx = _Progress(spark, caps) if progress else None
        try:
            if ctx:
                ctx.__enter__()
            manifest = rdd.mapPartitions(_decode_fn(uri, sorted(ports) if ports else None)).collect()
            data.decode_seconds = time.monotonic() - t0
            _keep_only(out, {Path(r["file"]).name for r in manifest})
            for r in manifest:
                if r["accounting"]:
                    acc = accounting_from_dict(json.loads(r["accounting"]))
                    data.accounting_by_capture[r["capture"]] = acc
            data.accounting = Accounting()
            for acc in data.accounting_by_capture.values():
                data.accounting.merge(acc)
            for table in TABLES:
                data.tables[table] = str(out / table)
            counts: Dict[str, int] = {}
            for r in manifest:
                counts[r["table"]] = counts.get(r["table"], 0) + r["rows"]
            data.totals = {"requests": counts.get("requests", 0), "responses": counts.get("responses", 0),
                           "records": counts.get("records", 0), "record_sets": counts.get("record_sets", 0)}
            merge((json.loads(r["aggregates"]) for r in manifest if r["aggregates"]), data)
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    finally:
        if own:
            spark.stop()
    data.seconds = time.monotonic() - t0
    (out / "report.json").write_text(data.to_json())
    return data
