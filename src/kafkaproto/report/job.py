"""The Spark job: captures in, Parquet tables and the report's numbers out,
with DataFrame operations only (``mapInArrow``), so the same job runs on a
classic session (``local[*]``, a standalone or YARN cluster) and on a Spark
Connect session (``sc://host:port``), which has no RDD API.

A *capture* is one file (pcap, pcapng, tap output, raw requests), a folder
of pcap/pcapng files (``tcpdump -C``/``-G`` rolls one capture into many), or
``NAME=path,path...``.  Two ways through:

- **whole file** (a capture that is one file, unless it is larger than
  ``whole_file_max`` on a session of :data:`SPLIT_MIN_CORES` cores or more;
  every tap table or raw stream): one task reads, reassembles,
  frames, pairs and decodes it, and writes its tables
  (:func:`kafkaproto.report.decode.write_tables`);
- **segments** (a capture of several files, or one larger file): each file
  is cut into byte ranges of ``range_bytes``; a first stage reads every range
  in parallel into TCP segments (:mod:`kafkaproto.capture.segments`), they
  are repartitioned by connection and sorted into capture order, and each
  task of the second stage reassembles, frames, pairs and decodes its
  connections and writes their tables
  (:func:`kafkaproto.report.decode.write_segment_tables`).

Both give the same rows for the same capture (a test checks it).  The tasks
return only a manifest (files written, each capture's accounting, the
figures' partial totals, :mod:`kafkaproto.report.aggregate`); the driver
keeps the files of the attempts that succeeded, merges the totals and writes
the ``accounting`` and ``topic_ids`` tables.  Records and frames never cross
into the JVM except as the segments' shuffle.

The executors must be able to read the capture paths and write ``out``
(a shared file system, or any URI pyarrow reaches), and have kafkaproto
installed (a wheel in their image, or a packed environment through
``spark.archives``).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..capture import Accounting
from ..capture.segments import packet_files
from .aggregate import merge
from .decode import TASK_TABLES, accounting_batch, accounting_from_dict

__all__ = ["RANGE_BYTES", "SPLIT_MIN_CORES", "WHOLE_FILE_MAX", "ReportData", "capture_list", "run_job", "session"]

TABLES = ("connections", *TASK_TABLES, "accounting", "topic_ids")  # every table the job writes
#: byte ranges the segment path cuts files into
RANGE_BYTES = 128 << 20
#: a capture that is one file of at most this many bytes is read whole, by one
#: task, on a session of at least SPLIT_MIN_CORES cores; on fewer cores every
#: one-file capture is read whole (measured: one task reads a file at about 5
#: times the per-core speed of the byte-range path, whose segments cross a
#: shuffle, so splitting pays from about 6 cores on)
WHOLE_FILE_MAX = 256 << 20
SPLIT_MIN_CORES = 6
_MANIFEST_FIELDS = (("kind", "string"), ("capture", "string"), ("table", "string"), ("file", "string"),
                    ("rows", "int64"), ("json", "string"))


@dataclass
class ReportData:
    """Everything the summary and the HTML page show (plain Python values)."""

    out: str = ""
    captures: list[dict[str, object]] = field(default_factory=list)  # name, path(s), bytes, files, path taken
    input_bytes: int = 0
    seconds: float = 0.0
    decode_seconds: float = 0.0  # until every capture was decoded and its tables written
    master: str = ""
    cores: int | None = None
    tasks: dict[str, int] = field(default_factory=dict)  # whole files, ranges, segment partitions
    totals: dict[str, int] = field(default_factory=dict)
    accounting: Accounting | None = None
    accounting_by_capture: dict[str, Accounting] = field(default_factory=dict)
    #: rows: client_id, software, api, api_key, api_version, requests, removed
    api_use: list[dict[str, object]] = field(default_factory=list)
    clients: list[dict[str, object]] = field(default_factory=list)
    errors: list[dict[str, object]] = field(default_factory=list)  # api, code, error, count
    errors_by: list[dict[str, object]] = field(default_factory=list)  # capture, broker, api, code, error, count
    latency: list[dict[str, object]] = field(default_factory=list)  # api, count, p50, p90, p99, max (ms), waits
    latency_by: list[dict[str, object]] = field(default_factory=list)  # capture, broker, api, count, p50...
    unanswered: list[dict[str, object]] = field(default_factory=list)  # capture, api, client_id, requests
    #: frames with bytes after their message body: kind (requests/responses), api, client_id, frames, bytes
    trailing: list[dict[str, object]] = field(default_factory=list)
    unanswered_rows: list[dict[str, object]] = field(default_factory=list)  # the earliest, one per request
    topics: list[dict[str, object]] = field(default_factory=list)  # source, topic, sets, batches, records, bytes
    topic_ids: dict[str, str] = field(default_factory=dict)  # "capture|topic id" -> name
    codecs: list[dict[str, object]] = field(default_factory=list)  # source, codec, batches, records, bytes
    decode_errors: list[dict[str, object]] = field(default_factory=list)  # table, api, status, error, count
    tables: dict[str, str] = field(default_factory=dict)  # table -> path

    @property
    def removed(self) -> list[dict[str, object]]:
        return [r for r in self.api_use if r["removed"]]

    def to_json(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k not in ("accounting", "accounting_by_capture")}
        d["accounting"] = self.accounting.to_dict() if self.accounting else None
        d["accounting_by_capture"] = {k: v.to_dict() for k, v in self.accounting_by_capture.items()}
        return json.dumps(d, indent=1, default=str)


# ---------------------------------------------------------------------------
# the session


def session(master: str | None = None, conf: dict[str, str] | None = None, remote: str | None = None):
    """A SparkSession for the job: ``local[*]`` unless ``master`` says otherwise,
    or a Spark Connect session when ``remote`` is given (``sc://host:port``).

    Local masters go through :func:`kafkaproto.spark.local_session` (workers
    run this interpreter); any other master is used as given, with the
    Python of the cluster's own configuration.
    """
    if remote:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.remote(remote).config("spark.sql.session.timeZone", "UTC")
        for k, v in (conf or {}).items():
            builder = builder.config(k, v)
        return builder.getOrCreate()
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


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


class _Progress:
    """Prints, every few seconds while the job runs, how many tasks are done
    (classic sessions; a Spark Connect client has no status tracker)."""

    def __init__(self, spark, captures, out=sys.stderr, every: float = 3.0) -> None:
        self.sc = spark.sparkContext
        self.captures = captures
        self.total = sum(c["bytes"] for c in captures)
        self.out = out
        self.every = every
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()

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
            names = ", ".join(sorted({s.name.split(" at ")[0] for s in stages}))[:60]
            print(f"[report {elapsed:6.1f}s] {done}/{total} tasks done, {active} running ({names}; "
                  f"{len(self.captures)} captures, {self.total / 1e6:.1f} MB)", file=self.out, flush=True)


# ---------------------------------------------------------------------------
# captures


def capture_list(captures: Sequence[str] | Mapping[str, object]) -> list[dict[str, object]]:
    """The captures of a run: ``[{"name", "paths", "bytes", "packets"}]``.

    ``captures``: paths (a file; a folder: a roll of pcap/pcapng files, or
    tap output; a glob pattern; ``NAME=path,path...``), or ``{name: path or
    [paths]}``.  ``packets``: the capture is pcap/pcapng files (it can be read
    in byte ranges and across files); otherwise it is read whole.
    """
    items = list(captures.items()) if isinstance(captures, Mapping) else [(None, c) for c in captures]
    out: list[dict[str, object]] = []
    seen: Counter = Counter()
    for name, spec in items:
        if name is None and isinstance(spec, str) and re.match(r"^[^/=]+=", spec) and not os.path.exists(spec):
            name, spec = spec.split("=", 1)
            spec = spec.split(",")
        specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
        paths: list[str] = []
        for sp in specs:
            sp = os.fspath(sp)
            found = sorted(glob.glob(sp)) if any(ch in sp for ch in "*?[") and not os.path.exists(sp) else [sp]
            if not found:
                raise FileNotFoundError(f"no file matches {sp}")
            paths += [os.path.abspath(p) for p in found]
        packets = False
        if len(paths) == 1 and os.path.isdir(paths[0]):
            rolled = packet_files(paths[0])
            if rolled:
                packets = True
                folder = paths[0]
                paths = rolled
            else:
                folder = None
        else:
            folder = None
        if not packets:
            from ..capture import capture_kind

            kinds = {capture_kind(p) for p in paths}
            packets = kinds <= {"pcap", "pcapng"}
            if not packets and len(paths) > 1:
                raise ValueError(f"capture {name or paths[0]}: only pcap/pcapng files can make one capture "
                                 f"together ({', '.join(sorted(kinds))})")
        if name is None:
            base = folder or paths[0]
            name = os.path.basename(base.rstrip("/")) or base
        seen[name] += 1
        if seen[name] > 1:
            name = f"{name}#{seen[name]}"
        size = 0
        for p in paths:
            size += sum(f.stat().st_size for f in Path(p).iterdir() if f.is_file()) if os.path.isdir(p) \
                else os.path.getsize(p)
        out.append({"name": name, "paths": paths, "bytes": size, "packets": packets, "files": len(paths)})
    return out


def _keep_only(fs, base: str, files) -> None:
    """Remove table files no successful task reported (failed attempts, earlier runs)."""
    from pyarrow import fs as pafs

    for table in TABLES:
        for info in fs.get_file_info(pafs.FileSelector(f"{base}/{table}", allow_not_found=True)):
            if info.type == pafs.FileType.File and info.base_name not in files:
                fs.delete_file(info.path)


# ---------------------------------------------------------------------------
# the tasks (module-level functions: what Spark pickles is small)


def _manifest_schema():
    import pyarrow as pa

    return pa.schema([(n, getattr(pa, t)()) for n, t in _MANIFEST_FIELDS])


def _manifest(rows: list[dict]):
    import pyarrow as pa

    schema = _manifest_schema()
    return pa.RecordBatch.from_pylist([{k: r.get(k) for k, _ in _MANIFEST_FIELDS} for r in rows], schema=schema)


def _part(prefix: str) -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    attempt = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}" if ctx else "00000-0-0"
    return f"{prefix}-{attempt}"


def _whole_files(items, out: str, ports):
    """Stage of the whole-file captures: one id per task -> its capture."""

    def run(batches):
        from pyarrow import fs as pafs

        from .aggregate import TaskAggregates
        from .decode import write_tables

        fs, base = pafs.FileSystem.from_uri(out)
        for batch in batches:
            for i in batch.column(0).to_pylist():
                name, path = items[i]
                agg = TaskAggregates()
                written, acc = write_tables(path, base, _part(f"w{i:05d}"), capture=name, ports=ports,
                                            filesystem=fs, aggregates=agg)
                rows = [{"kind": "file", "capture": name, "table": t, "file": f, "rows": n} for t, f, n in written]
                rows.append({"kind": "accounting", "capture": name, "json": json.dumps(acc.to_dict())})
                rows.append({"kind": "aggregates", "json": json.dumps(agg.to_dict())})
                yield _manifest(rows)

    return run


def _read_ranges(items):
    """Stage 1 of the segment path: one id per task -> its byte range's segments."""

    def run(batches):
        from ..capture.segments import read_range

        for batch in batches:
            for i in batch.column(0).to_pylist():
                cap, rank, path, start, end = items[i]
                yield from read_range(path, start, end, capture=cap, rank=rank)

    return run


def _decode_segments(names, out: str, ports):
    """Stage 2: the connections of one partition (sorted segments) -> tables."""

    def run(batches):
        from pyarrow import fs as pafs

        from .aggregate import TaskAggregates
        from .decode import write_segment_tables

        fs, base = pafs.FileSystem.from_uri(out)
        agg = TaskAggregates()
        written, accs = write_segment_tables(batches, names, base, _part("s"), ports=ports, filesystem=fs,
                                             aggregates=agg)
        rows = [{"kind": "file", "table": t, "file": f, "rows": n} for t, f, n in written]
        rows += [{"kind": "accounting", "capture": c, "json": json.dumps(a.to_dict())} for c, a in accs.items()]
        rows.append({"kind": "aggregates", "json": json.dumps(agg.to_dict())})
        yield _manifest(rows)

    return run


# ---------------------------------------------------------------------------
# the job


def plan(caps: list[dict[str, object]], range_bytes: int = RANGE_BYTES, whole_file_max: int = WHOLE_FILE_MAX,
         cores: int = 1):
    """``(whole, ranges)``: the whole-file tasks ``[(name, path)]`` and the
    byte ranges ``[(capture number, file rank, path, start, end)]``; each
    capture is marked with the way it takes (``path``: ``whole``/``segments``).
    Ranges are at most ``range_bytes``, and as many as it takes to fill
    whole rounds of ``cores`` tasks."""
    from ..capture.segments import file_order, plan_ranges

    whole, split = [], []
    for k, c in enumerate(caps):
        if not c["packets"] or (len(c["paths"]) == 1 and c["bytes"] <= whole_file_max):
            c["path"] = "whole"
            whole.append((c["name"], c["paths"][0]))
        else:
            c["path"] = "segments"
            split.append(k)
    total = sum(caps[k]["bytes"] for k in split)
    if total:
        rounds = -(-total // (range_bytes * max(cores, 1)))
        range_bytes = max(1 << 16, -(-total // (rounds * max(cores, 1))))
    ranges = []
    for k in split:
        for rank, path in enumerate(file_order(caps[k]["paths"])):
            for start, end in plan_ranges(path, range_bytes):
                ranges.append((k, rank, path, start, end))
    return whole, ranges


def _cores(spark) -> int | None:
    if not _is_connect(spark):
        return spark.sparkContext.defaultParallelism
    try:
        master = spark.conf.get("spark.master", None) or ""
    except Exception:  # noqa: BLE001 - a server that will not say
        master = ""
    m = re.match(r"local\[(\d+)\]", master)
    return int(m.group(1)) if m else None


def run_job(paths, out, *, spark=None, master: str | None = None, remote: str | None = None, ports=None,
            progress: bool = True, conf: dict[str, str] | None = None, log=sys.stderr,
            range_bytes: int = RANGE_BYTES, whole_file_max: int | None = None,
            partitions: int | None = None) -> ReportData:
    """Decode the captures ``paths`` (see :func:`capture_list`) on Spark, write
    the tables under ``out``, and return the report's numbers.  ``spark``: an
    existing session, classic or Spark Connect (kept open); otherwise one is
    made for ``master`` or ``remote`` and stopped at the end.
    ``range_bytes``/``whole_file_max``: how captures are split
    (:data:`RANGE_BYTES`; ``whole_file_max`` None: :data:`WHOLE_FILE_MAX` on
    :data:`SPLIT_MIN_CORES` cores or more, else no limit); ``partitions``: tasks of the segment path's second stage
    (default: about ``range_bytes`` each, in whole rounds of the session's
    cores)."""

    from pyarrow import fs as pafs

    t0 = time.monotonic()
    uri = _uri(out)
    fs, base = pafs.FileSystem.from_uri(uri)
    fs.create_dir(base, recursive=True)
    caps = capture_list(paths)
    own = spark is None
    if own:
        spark = session(master, conf, remote=remote)
    connect = _is_connect(spark)
    data = ReportData(out=os.fspath(out), captures=caps, input_bytes=sum(c["bytes"] for c in caps),
                      master=(remote or "Spark Connect") if connect else spark.sparkContext.master,
                      cores=_cores(spark))
    try:
        # largest first: they bound the run's length
        caps.sort(key=lambda c: -c["bytes"])
        if whole_file_max is None:
            whole_file_max = WHOLE_FILE_MAX if (data.cores or 0) >= SPLIT_MIN_CORES else 1 << 62
        whole, ranges = plan(caps, range_bytes, whole_file_max, data.cores or 2)
        ranges.sort(key=lambda r: -(r[4] - r[3]))
        ports_ = sorted(ports) if ports else None
        names = [c["name"] for c in caps]
        frames = []
        if whole:
            frames.append(spark.range(0, len(whole), 1, len(whole))
                          .mapInArrow(_whole_files(whole, uri, ports_), _MANIFEST_DDL))
        nparts = 0
        if ranges:
            # about a range's bytes per task, in whole rounds of the session's cores
            cores = data.cores or 2
            seg_bytes = sum(end - start for _, _, _, start, end in ranges)
            nparts = partitions or cores * max(1, -(-seg_bytes // (range_bytes * cores)))
            seg_ddl = _SEGMENT_DDL
            frames.append(spark.range(0, len(ranges), 1, len(ranges))
                          .mapInArrow(_read_ranges(ranges), seg_ddl)
                          .repartition(nparts, "capture", "key")
                          .sortWithinPartitions("capture", "key", "order")
                          .mapInArrow(_decode_segments(names, uri, ports_), _MANIFEST_DDL))
        data.tasks = {"whole files": len(whole), "byte ranges": len(ranges), "segment partitions": nparts}
        manifest_df = frames[0]
        for f in frames[1:]:
            manifest_df = manifest_df.unionByName(f)
        ctx = _Progress(spark, caps) if progress and not connect else None
        try:
            if ctx:
                ctx.__enter__()
            manifest = [r.asDict() for r in manifest_df.collect()]
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
        data.decode_seconds = time.monotonic() - t0
        _finish(data, manifest, fs, base, caps)
    finally:
        if own:
            spark.stop()
    data.seconds = time.monotonic() - t0
    write_text(uri, "report.json", data.to_json())
    return data


def _uri(out) -> str:
    """``out`` as a URI pyarrow understands (a local path becomes file://)."""
    text = os.fspath(out)
    return text if "://" in text else Path(text).resolve().as_uri()


def write_text(out, name: str, text: str) -> str:
    """Write ``out/name`` (a local folder or any URI pyarrow reaches); its path."""
    from pyarrow import fs as pafs

    fs, base = pafs.FileSystem.from_uri(_uri(out))
    with fs.open_output_stream(f"{base}/{name}") as f:
        f.write(text.encode("utf-8"))
    return f"{base}/{name}" if "://" not in os.fspath(out) else f"{os.fspath(out).rstrip('/')}/{name}"


# capture.segments.segment_schema() in Spark's words
_SEGMENT_DDL = ("capture int, key bigint, `order` bigint, ts bigint, src binary, sport int, dst binary, dport int, "
                "seq bigint, ack bigint, flags smallint, length bigint, payload binary")
_MANIFEST_DDL = ", ".join(f"{n} {'bigint' if t == 'int64' else t}" for n, t in _MANIFEST_FIELDS)


def _finish(data: ReportData, manifest: list[dict], fs, base: str, caps) -> None:
    """Fold the tasks' manifests: keep their files, merge accounting and
    totals, write the driver's tables."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [r for r in manifest if r["kind"] == "file"]
    _keep_only(fs, base, {os.path.basename(r["file"]) for r in files} | {"part-driver.parquet"})
    for c in caps:
        data.accounting_by_capture[c["name"]] = Accounting()
    for r in manifest:
        if r["kind"] == "accounting":
            data.accounting_by_capture.setdefault(r["capture"], Accounting()).merge(
                accounting_from_dict(json.loads(r["json"])))
    data.accounting = Accounting()
    for acc in data.accounting_by_capture.values():
        data.accounting.merge(acc)
    counts: dict[str, int] = {}
    for r in files:
        counts[r["table"]] = counts.get(r["table"], 0) + r["rows"]
    data.totals = {"requests": counts.get("requests", 0), "responses": counts.get("responses", 0),
                   "records": counts.get("records", 0), "record_sets": counts.get("record_sets", 0),
                   "unanswered": counts.get("unanswered", 0)}
    merge((json.loads(r["json"]) for r in manifest if r["kind"] == "aggregates"), data)
    # the driver's tables: accounting (per capture, merged) and topic ids
    from .decode import table_schema

    batches = [accounting_batch(name, acc) for name, acc in sorted(data.accounting_by_capture.items())]
    rows = [{"capture": k.split("|", 1)[0], "topic_id": k.split("|", 1)[1], "topic": v}
            for k, v in data.topic_ids.items()]
    for table, t in (("accounting", pa.Table.from_batches(batches, schema=table_schema("accounting"))),
                     ("topic_ids", pa.Table.from_pylist(rows, schema=table_schema("topic_ids")))):
        fs.create_dir(f"{base}/{table}", recursive=True)
        pq.write_table(t, f"{base}/{table}/part-driver.parquet", filesystem=fs)
    for table in TABLES:
        data.tables[table] = f"{data.out.rstrip('/')}/{table}"
