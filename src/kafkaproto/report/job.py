"""The report job: captures in, Parquet tables and the report's numbers out,
on one of two engines that run the same tasks (:mod:`kafkaproto.report.tasks`)
and fold their results the same way:

- **embedded** (the default): a pool of worker processes on this machine,
  no JVM; one small capture runs in this process;
- **Spark** (``spark=``, ``master=`` or ``remote=``): the tasks run as
  ``mapInArrow`` stages of DataFrame operations, so the job runs on a
  classic session (``local[*]``, a standalone or YARN cluster) and on a
  Spark Connect session (``sc://host:port``), which has no RDD API.

A *capture* is one file (pcap, pcapng, tap output, raw requests), a folder
of pcap/pcapng files (``tcpdump -C``/``-G`` rolls one capture into many), or
``NAME=path,path...``.  Two ways through:

- **whole** (a capture up to ``whole_file_max``, every tap table or raw
  stream; small captures share a task): one task reads, reassembles,
  frames, pairs and decodes it, and writes its tables;
- **ranges** (a larger pcap/pcapng capture): each file is cut into byte
  ranges; the index stage reads every range in parallel into TCP segment
  *positions* (where each payload lies in the file, not the payload), the
  driver checks that each range starts where the chain of records from the
  range before it ends (a range that guessed wrong is read again), the
  positions are grouped by connection and put in capture order, and each
  task of the second stage reassembles, frames, pairs and decodes its
  connections, reading the payloads again from the files mapped in memory.
  What moves between the stages (through Spark's shuffle, or this
  process) is the positions: about 70 bytes a packet.

Both ways give the same rows for the same capture (tests check it), on both
engines.  The tasks return only a manifest (files written, each capture's
accounting, the figures' partial tables,
:mod:`kafkaproto.report.aggregate`), as one Arrow IPC buffer: the embedded
engine's workers hand it back as bytes, a Spark stage as one binary value
of its Arrow output, collected as Arrow.  The driver keeps the files of the
attempts that succeeded, folds the figures' parts with Arrow group-bys and
writes the ``accounting`` and ``topic_ids`` tables.

The workers must be able to read the capture paths and write ``out`` (a
shared file system, or any URI pyarrow reaches for ``out``), and, on a
cluster, have kafkaproto installed (a wheel in their image, or a packed
environment through ``spark.archives``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..capture import Accounting, open_capture
from ..capture.dataset import partition_connections
from ..capture.formats.ranges import STATS_KEY, range_accounting
from ..capture.tables import TASK_TABLES, accounting_batch, accounting_from_dict
from .aggregate import merge

__all__ = ["RANGE_BYTES", "SPLIT_MIN_CORES", "WHOLE_FILE_MAX", "ReportData", "ReportOutputError", "WorkerError",
           "output_folder", "run_job", "session", "shutdown"]

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
#: the embedded engine reads a capture whole up to this size at least (past
#: it, when it is more than a core's share of the run), and splits one only
#: on EMBEDDED_SPLIT_MIN_CORES workers or more: measured on 2 workers, the
#: byte-range path cost 2.0x the CPU of one whole read on 100 MB of real
#: small-frame traffic (the positions of its ~150-byte packets cross
#: processes twice) and 1.2x on 315 MB of mixed traffic, and finished later
#: on both
EMBEDDED_WHOLE_MIN = 64 << 20
EMBEDDED_SPLIT_MIN_CORES = 4


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
    engine: str = ""  # embedded / spark
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
        # a key a line, each value in one line: json's C encoder (with ``indent`` it
        # writes in Python: ~1 CPU-s for the 1.6 MB of a 45 k-connection capture)
        return "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, default=str)}" for k, v in d.items()) + "\n}"


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


def _keep_only(fs, base: str, files) -> None:
    """Remove table files no successful task reported (failed attempts, earlier
    runs): files named as the report names its own, never another."""
    from pyarrow import fs as pafs

    for table in TABLES:
        for info in fs.get_file_info(pafs.FileSelector(f"{base}/{table}", allow_not_found=True)):
            if info.type == pafs.FileType.File and info.base_name not in files and _OURS.fullmatch(info.base_name):
                fs.delete_file(info.path)


# ---------------------------------------------------------------------------
# the output folder


class ReportOutputError(OSError):
    """The output folder cannot take the report: it is not a folder, cannot be
    made or written, another report is writing into it, or it holds files no
    report wrote where the report would write (or delete) its own."""


class WorkerError(RuntimeError):
    """A worker process of the embedded engine died before its task finished
    (killed, or out of memory): the report was not finished."""


#: the file that marks a folder a report writes into; a report writing into
#: the folder holds a lock on it (local folders) and names its process in it
MARKER = ".kafkaproto-report"
#: what a report writes at the top of its folder, beside the tables' folders
TOP_FILES = ("report.html", "report.json", "summary.txt")
#: the names of the table files a report writes (its tasks' parts, embedded
#: ``w00000``, on Spark ``w00000-00003-0-12``; the driver's)
_OURS = re.compile(r"[ws]\d*(?:-\d+)*\.parquet|part-driver\.parquet")
_HELD: dict[str, list] = {}  # folder -> [thread, depth, lock file] of the report writing into it from here
_HELD_LOCK = threading.Lock()


class output_folder:  # noqa: N801 - used as a function: ``with output_folder(out):``
    """Hold ``out`` for one report: make the folder, refuse what is no folder
    or cannot be written, and one that another report is writing into (a
    lock, local folders only: other file systems have none) or that holds, where the
    report writes, files no report wrote (:class:`ReportOutputError`).  Taken
    again by the thread holding it, it is held once (``run_report`` holds it
    around ``run_job``)."""

    def __init__(self, out) -> None:
        self.out = os.fspath(out)
        self.key = _uri(out)
        self.entry = None

    def __enter__(self):
        with _HELD_LOCK:
            held = _HELD.get(self.key)
            if held is not None and held[0] == threading.get_ident():
                held[1] += 1
                self.entry = held
                return self
        lock = _take_folder(self.out, self.key)
        with _HELD_LOCK:
            if self.key in _HELD:  # another thread of this process writes a report there
                _release(lock)
                raise ReportOutputError(f"{self.out}: another report is writing into it now (this process)")
            self.entry = _HELD[self.key] = [threading.get_ident(), 1, lock]
        return self

    def __exit__(self, *exc) -> None:
        with _HELD_LOCK:
            self.entry[1] -= 1
            if self.entry[1]:
                return
            del _HELD[self.key]
        _release(self.entry[2])


def _take_folder(out: str, uri: str):
    """Make ``out``, check it (see :class:`output_folder`), write its marker →
    the marker's open file, locked (None for a folder pyarrow reaches elsewhere)."""
    from pyarrow import fs as pafs

    fs, base = pafs.FileSystem.from_uri(uri)
    local = isinstance(fs, pafs.LocalFileSystem)

    def refuse(what: str, exc: OSError | None = None):
        why = "" if exc is None else f": {os.strerror(exc.errno) if exc.errno else exc}"  # (pyarrow's text is long)
        err = ReportOutputError(f"{out}: {what}{why}")
        if exc is not None:
            err.errno = exc.errno
        return err

    try:
        if fs.get_file_info(base).type not in (pafs.FileType.Directory, pafs.FileType.NotFound):
            raise refuse("exists and is not a folder")
        fs.create_dir(base, recursive=True)
    except ReportOutputError:
        raise
    except OSError as exc:
        raise refuse("cannot make the folder", exc) from None
    lock = None
    marker = f"{base}/{MARKER}"
    try:
        if local:
            import errno

            try:
                fd = os.open(marker, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise refuse("cannot write into it", exc) from None
            lock = os.fdopen(fd, "r+b")
            try:
                _lock(lock)
            except OSError as exc:
                who = lock.read(64).decode("ascii", "replace").strip()
                _release(lock)
                lock = None
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise refuse(f"another report is writing into it now{f' (process {who})' if who else ''}") \
                        from None
                raise refuse("cannot lock it", exc) from None
            # a report wrote here before when it left its process number: a
            # marker left empty is one a refused report made (and did not remove)
            marked = bool(lock.read(64).strip())
        else:
            marked = fs.get_file_info(marker).type == pafs.FileType.File
        marked = marked or _report_json(fs, f"{base}/report.json")
        foreign = _foreign(fs, base, marked)
        if foreign:
            if local and not marked:
                os.unlink(marker)
            raise refuse(f"holds {foreign}, which no report wrote: give a new or empty folder")
        if lock is not None:
            lock.seek(0)
            lock.truncate()
            lock.write(f"{os.getpid()}\n".encode("ascii"))
            lock.flush()
        elif not marked:
            with fs.open_output_stream(marker) as f:
                f.write(f"{os.getpid()}\n".encode("ascii"))
    except ReportOutputError:
        _release(lock)
        raise
    except OSError as exc:
        _release(lock)
        raise refuse("cannot write into it", exc) from None
    return lock


def _report_json(fs, path: str) -> bool:
    """Is ``path`` the ``report.json`` of a report (one written before reports marked their folders)?"""
    try:
        with fs.open_input_stream(path) as f:
            got = json.loads(f.read(64 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(got, dict) and {"captures", "tables", "accounting"} <= got.keys()


def _foreign(fs, base: str, marked: bool) -> str | None:
    """The first file a report would replace or delete under ``base`` that no
    report wrote (None if none): in a folder no report marked, any of its
    files or folders; in one a report marked, a table file not named as a
    report names its own."""
    from pyarrow import fs as pafs

    for name in (*TABLES, *TOP_FILES):
        info = fs.get_file_info(f"{base}/{name}")
        if info.type == pafs.FileType.NotFound:
            continue
        if not marked:
            return name
        if name in TABLES:
            if info.type != pafs.FileType.Directory:
                return name
            for entry in fs.get_file_info(pafs.FileSelector(f"{base}/{name}", recursive=True)):
                if entry.type != pafs.FileType.File or not _OURS.fullmatch(entry.base_name):
                    return entry.path[len(base) + 1:]
        elif info.type != pafs.FileType.File:
            return name
    return None


def _lock(f) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _release(lock) -> None:
    if lock is not None:
        lock.close()  # the lock goes with the file (and with the process, should it die)


# ---------------------------------------------------------------------------
# Spark's side of the tasks (module-level functions: what Spark pickles is small)


def _manifest(manifest: bytes):
    """A task's manifest (Arrow IPC) as a row of the stage's output: one binary value."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([manifest], pa.binary())], names=["manifest"])


def _part(prefix: str) -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    attempt = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}-{ctx.taskAttemptId()}" if ctx else "00000-0-0"
    return f"{prefix}-{attempt}"


def _spark_whole(groups, out: str, ports, payloads: bool):
    """Stage of the whole captures: one id per task -> its WholeTask."""

    def run(batches):
        from .tasks import whole_task

        for batch in batches:
            for i in batch.column(0).to_pylist():
                yield _manifest(whole_task(groups[i], out, _part(f"w{i:05d}"), ports, payloads))

    return run


def _spark_index(items):
    """The index stage: one id per task -> its byte range's positions (Spark's binary for the addresses)."""

    def run(batches):
        from .tasks import index_task

        for batch in batches:
            for i in batch.column(0).to_pylist():
                for r in items[i]:
                    for b in index_task(r):
                        yield _for_spark(b)

    return run


def _for_spark(batch):
    import pyarrow as pa

    schema = pa.schema([pa.field(f.name, pa.binary()) if f.name in ("src", "dst") else f for f in batch.schema])
    return pa.RecordBatch.from_arrays([c.cast(pa.binary()) if n in ("src", "dst") else c
                                       for n, c in zip(batch.schema.names, batch.columns)], schema=schema)


def _spark_segments(names, files, out: str, ports, payloads: bool):
    """The second stage: the connections of one partition (sorted positions) -> tables."""

    def run(batches):
        from .tasks import segment_task

        yield _manifest(segment_task(batches, names, files, out, _part("s"), ports, payloads))

    return run


# ---------------------------------------------------------------------------
# planning


def _cores(spark) -> int | None:
    if not _is_connect(spark):
        return spark.sparkContext.defaultParallelism
    try:
        master = spark.conf.get("spark.master", None) or ""
    except Exception:  # noqa: BLE001 - a server that will not say
        master = ""
    m = re.match(r"local\[(\d+)\]", master)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------
# the job


def run_job(paths, out, *, spark=None, master: str | None = None, remote: str | None = None, ports=None,
            progress: bool = True, conf: dict[str, str] | None = None, log=sys.stderr,
            range_bytes: int = RANGE_BYTES, whole_file_max: int | None = None,
            partitions: int | None = None, workers: int | None = None, payloads: bool = True) -> ReportData:
    """Decode the captures ``paths`` (see :func:`kafkaproto.capture.open_capture`), write the
    tables under ``out``, and return the report's numbers.

    The engine: Spark when ``spark`` (an existing session, classic or Spark
    Connect: kept open), ``master`` or ``remote`` (a session is made and
    stopped at the end) is given; else the embedded one, ``workers`` worker
    processes (default: the machine's cores).  ``range_bytes`` /
    ``whole_file_max``: how captures are split (:data:`RANGE_BYTES`;
    ``whole_file_max`` None: on Spark :data:`WHOLE_FILE_MAX` on
    :data:`SPLIT_MIN_CORES` cores or more, else no limit; embedded, on
    :data:`EMBEDDED_SPLIT_MIN_CORES` workers or more: a share of the cores'
    work, so every core has some, else no limit); ``partitions``: tasks of the
    ranges' second stage (default: one per core, in whole rounds).
    ``payloads=False``: the records table's ``key``, ``value`` and
    ``headers`` are left null (never copied: no figure reads them).

    ``out`` is held while the job writes into it (:class:`output_folder`):
    a folder another report is writing into, or one that holds files no
    report wrote where the report writes its own, is refused with
    :class:`ReportOutputError`; a worker process that dies raises
    :class:`WorkerError`."""
    with output_folder(out):
        return _run_job(paths, out, spark, master, remote, ports, progress, conf, log, range_bytes, whole_file_max,
                        partitions, workers, payloads)


def _run_job(paths, out, spark, master, remote, ports, progress, conf, log, range_bytes, whole_file_max, partitions,
             workers, payloads) -> ReportData:
    from pyarrow import fs as pafs

    t0 = time.monotonic()
    uri = _uri(out)
    fs, base = pafs.FileSystem.from_uri(uri)
    ds = open_capture(paths, ports=ports)
    caps = [{"name": c.name, "paths": list(c.paths), "bytes": c.bytes, "packets": c.packets, "files": c.files}
            for c in ds.captures]
    use_spark = spark is not None or master is not None or remote is not None
    own = use_spark and spark is None
    if own:
        spark = session(master, conf, remote=remote)
    try:
        if use_spark:
            connect = _is_connect(spark)
            cores = _cores(spark)
            data = ReportData(out=os.fspath(out), captures=caps, input_bytes=ds.bytes,
                              master=(remote or "Spark Connect") if connect else spark.sparkContext.master,
                              cores=cores, engine="spark")
            if whole_file_max is None:
                whole_file_max = WHOLE_FILE_MAX if (cores or 0) >= SPLIT_MIN_CORES else 1 << 62
        else:
            cores = workers or os.cpu_count() or 1
            data = ReportData(out=os.fspath(out), captures=caps, input_bytes=ds.bytes,
                              master=f"embedded[{cores}]", cores=cores, engine="embedded")
            if whole_file_max is None:
                # every core gets a share: a capture larger than that is read in ranges
                whole_file_max = max(EMBEDDED_WHOLE_MIN, -(-data.input_bytes // cores)) \
                    if cores >= EMBEDDED_SPLIT_MIN_CORES else 1 << 62
        # ranges of at most range_bytes, as many as it takes to fill whole rounds of the cores
        split = sum(c.bytes for c in ds.captures if c.packets and c.bytes > whole_file_max)
        if split:
            rounds = -(-split // (range_bytes * max(cores or 2, 1)))
            range_bytes = max(1 << 16, -(-split // (rounds * max(cores or 2, 1))))
        whole, ranges = ds.layout(range_bytes, whole_max=whole_file_max, group_bytes=min(range_bytes, 16 << 20))
        ranged = {r.capture for r in ranges}
        for k, c in enumerate(caps):
            c["path"] = "segments" if k in ranged else "whole"
        # largest first: they bound the run's length
        ranges.sort(key=lambda r: -(r.end - r.start))
        names = {k: c.name for k, c in enumerate(ds.captures)}
        files = {(k, rank): path for k in sorted(ranged) for rank, path in enumerate(ds.captures[k].paths)}
        nparts = partitions or ((cores or 2) * max(1, -(-sum(r.end - r.start for r in ranges) //
                                                        (range_bytes * (cores or 2)))) if ranges else 0)
        index_tasks = _group_ranges(ranges, range_bytes)
        data.tasks = {"whole files": sum(len(t.items) for t in whole), "whole tasks": len(whole),
                      "byte ranges": len(ranges), "index tasks": len(index_tasks),
                      "segment partitions": nparts if ranges else 0, "ranges read again": 0}
        if use_spark:
            manifest = _run_spark(spark, data, caps, whole, index_tasks, names, files, uri, ds.ports, nparts,
                                  progress, payloads)
        else:
            manifest = _run_embedded(cores, data, ds, whole, ranges, names, files, uri, nparts, progress, log,
                                     payloads)
        data.decode_seconds = time.monotonic() - t0
        _finish(data, manifest, fs, base, caps)
    finally:
        if own:
            spark.stop()
    data.seconds = time.monotonic() - t0
    write_text(uri, "report.json", data.to_json())
    return data


def _group_ranges(ranges, range_bytes: int) -> list[list]:
    """Byte ranges in tasks: small ones (the files of a capture rolled small)
    share a task, up to ``range_bytes`` each."""
    tasks: list[list] = []
    size = 0
    for r in ranges:
        if tasks and size + (r.end - r.start) <= range_bytes:
            tasks[-1].append(r)
            size += r.end - r.start
        else:
            tasks.append([r])
            size = r.end - r.start
    return tasks


def _run_embedded(cores: int, data: ReportData, ds, whole, ranges, names, files, uri: str, nparts: int,
                  progress: bool, log, payloads: bool) -> list[bytes]:
    """The embedded engine: the same tasks in a pool of worker processes (or
    in this process, for one task); their manifests (Arrow IPC buffers)."""
    try:
        return _embedded_tasks(cores, data, ds, whole, ranges, names, files, uri, nparts, progress, log, payloads)
    except Exception as exc:
        # (the pool's module is imported only where a pool ran: a job of one task imports none of it)
        pool = sys.modules.get("concurrent.futures.process")
        if pool is not None and isinstance(exc, pool.BrokenProcessPool):
            raise WorkerError("a worker process died before its task finished (killed, or out of memory): "
                              "the report was not finished") from None
        raise


def _embedded_tasks(cores: int, data: ReportData, ds, whole, ranges, names, files, uri: str, nparts: int,
                    progress: bool, log, payloads: bool) -> list[bytes]:
    from ..arrow.buffers import bools, column
    from .tasks import segment_task, whole_task

    ports = ds.ports
    manifest: list[bytes] = []
    with _Pool(cores, len(whole) + len(ranges), progress, log) as pool:
        futures = [pool.submit(whole_task, t, uri, f"w{i:05d}", ports, payloads) for i, t in enumerate(whole)]
        if ranges:
            # the index stage in the pool (ranges read again too), beside the whole captures
            idx = ds.index(ranges, map=lambda fn, items: [f.result() for f in [pool.submit(fn, i) for i in items]])
            data.tasks["ranges read again"] += idx.redone
            _range_ledgers(manifest, idx.stats)
            positions = idx.positions.filter(bools(column(idx.positions, "key") != STATS_KEY))
            parts = partition_connections(positions, max(1, nparts))
            data.tasks["segment partitions"] = len(parts)
            futures += [pool.submit(segment_task, part.to_batches(), names, files, uri, f"s{i:05d}", ports,
                                    payloads) for i, part in enumerate(parts)]
        manifest += [fut.result() for fut in futures]
    return manifest


def _range_ledgers(manifest: list[bytes], stats: dict[str, list[dict]]) -> None:
    """The file-level ledgers of the captures read in ranges (from the index
    stage's statistics rows), as a manifest of their own."""
    from .tasks import accounting_manifest

    if stats:
        manifest.append(accounting_manifest([(name, range_accounting(rows)) for name, rows in stats.items()]))


#: the embedded engine's worker processes, kept for the next job of this
#: process (as Spark keeps its Python workers): what a worker has warmed --
#: message programs, header tables -- serves every later task
_WORKERS: dict[int, object] = {}


def _executor(workers: int):
    import atexit
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ex = _WORKERS.get(workers)
    if ex is not None and not getattr(ex, "_broken", False) and not getattr(ex, "_shutdown_thread", False):
        return ex
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    ex = _WORKERS[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    if len(_WORKERS) == 1:
        atexit.register(shutdown)
    return ex


def shutdown() -> None:
    """Stop the embedded engine's worker processes (they are kept between jobs)."""
    while _WORKERS:
        _, ex = _WORKERS.popitem()
        ex.shutdown(wait=True, cancel_futures=True)


class _Pool:
    """Worker processes for the embedded engine, forked where the system
    forks (they start with what this process imported, and a script that
    runs a report needs no ``if __name__ == "__main__"`` guard); elsewhere
    spawned; kept for the next job (:func:`shutdown` stops them).  With one
    task or one core, the tasks run in this process."""

    def __init__(self, cores: int, tasks: int, progress: bool, log) -> None:
        self.cores, self.tasks = cores, tasks
        self.progress, self.log = progress, log
        self.ex = None
        self.done = 0
        self.t0 = time.monotonic()

    def __enter__(self):
        if self.cores > 1 and self.tasks > 1:
            self.ex = _executor(self.cores)
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None and self.ex is not None:
            shutdown()  # a job that failed leaves no worker holding its state

    def submit(self, fn, *args):
        from concurrent.futures import Future

        if self.ex is None:
            fut: Future = Future()
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                fut.set_exception(exc)
            self._done(fut)
            return fut
        fut = self.ex.submit(fn, *args)
        fut.add_done_callback(self._done)
        return fut

    def _done(self, _fut) -> None:
        self.done += 1
        if self.progress:
            print(f"[report {time.monotonic() - self.t0:6.1f}s] {self.done} tasks done", file=self.log, flush=True)


def _run_spark(spark, data: ReportData, caps, groups, index_tasks, names, files, uri: str, ports, nparts: int,
               progress: bool, payloads: bool) -> list[bytes]:
    """The Spark engine: the same tasks as ``mapInArrow`` stages; positions
    through the shuffle; the tasks' manifests, Arrow in a binary column, collected as Arrow."""
    from pyspark.sql import functions as F

    from ..capture.formats.ranges import range_stats, ranges_to_redo

    connect = _is_connect(spark)
    frames = []
    ledgers: list[bytes] = []
    if groups:
        frames.append(spark.range(0, len(groups), 1, len(groups))
                      .mapInArrow(_spark_whole(groups, uri, ports, payloads), _MANIFEST_DDL))
    if index_tasks:
        idx = spark.range(0, len(index_tasks), 1, len(index_tasks)).mapInArrow(_spark_index(index_tasks),
                                                                               _SEGMENT_DDL)
        idx = idx.cache()
        stats = {}
        for r in idx.filter(F.col("key") == STATS_KEY).select("capture", "info").collect():
            s = json.loads(r["info"])
            s["capture"] = r["capture"]
            stats[(r["capture"], s["file"], s["start"])] = s
        while True:
            redo = ranges_to_redo(stats.values())
            if not redo:
                break
            data.tasks["ranges read again"] += len(redo)
            bad = None
            for s, _first in redo:
                lo = (s["rank"] << 40) | s["start"]
                hi = (s["rank"] << 40) | s["end"]
                cond = (F.col("capture") == s["capture"]) & (F.col("order") >= lo) & (F.col("order") < hi)
                bad = cond if bad is None else bad | cond
            # few ranges, read again here (on bytes that only look like records: rare)
            again = [_redo_batches(s, first) for s, first in redo]
            fresh = spark.createDataFrame(_arrow_table(again), schema=_SEGMENT_DDL)
            idx = idx.filter(~bad).unionByName(fresh).cache()
            for (s, _first), b in zip(redo, again):
                stats[(s["capture"], s["file"], s["start"])] = range_stats(b, s["capture"])
        frames.append(idx.filter(F.col("key") != STATS_KEY).repartition(nparts, "capture", "key")
                      .sortWithinPartitions("capture", "key", "order")
                      .mapInArrow(_spark_segments(names, files, uri, ports, payloads), _MANIFEST_DDL))
        by_name: dict[str, list] = {}
        for s in stats.values():
            by_name.setdefault(names[s["capture"]], []).append(s)
        _range_ledgers(ledgers, by_name)
    manifest_df = frames[0]
    for f in frames[1:]:
        manifest_df = manifest_df.unionByName(f)
    ctx = _Progress(spark, caps) if progress and not connect else None
    try:
        if ctx:
            ctx.__enter__()
        return ledgers + manifest_df.toArrow().column("manifest").to_pylist()
    finally:
        if ctx:
            ctx.__exit__(None, None, None)


def _redo_batches(s: dict, first):
    from ..capture.formats.ranges import redo_range

    return [_for_spark(b) for b in redo_range(s, first, s["capture"])]


def _arrow_table(batch_lists):
    import pyarrow as pa

    batches = [b for bl in batch_lists for b in bl]
    return pa.Table.from_batches(batches)


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


# capture.formats.ranges.segment_schema() in Spark's words
_SEGMENT_DDL = ("capture int, key bigint, `order` bigint, ts bigint, family tinyint, src binary, sport int, "
                "dst binary, dport int, seq bigint, ack bigint, flags smallint, length bigint, at bigint, caplen int, "
                "info string")
_MANIFEST_DDL = "manifest binary"


def _finish(data: ReportData, manifests: list[bytes], fs, base: str, caps) -> None:
    """Fold the tasks' manifests: keep their files, merge accounting and
    the figures' parts, write the driver's tables."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .tasks import read_manifests

    got = read_manifests(manifests)
    files = got["files"].to_pydict()
    _keep_only(fs, base, {os.path.basename(f) for f in files["file"]} | {"part-driver.parquet"})
    for c in caps:
        data.accounting_by_capture[c["name"]] = Accounting()
    accs = got["accounting"].to_pydict()
    for capture, text in zip(accs["capture"], accs["json"]):
        data.accounting_by_capture.setdefault(capture, Accounting()).merge(accounting_from_dict(json.loads(text)))
    data.accounting = Accounting()
    for acc in data.accounting_by_capture.values():
        data.accounting.merge(acc)
    counts: dict[str, int] = {}
    for table, rows in zip(files["table"], files["rows"]):
        counts[table] = counts.get(table, 0) + rows
    data.totals = {"requests": counts.get("requests", 0), "responses": counts.get("responses", 0),
                   "records": counts.get("records", 0), "record_sets": counts.get("record_sets", 0),
                   "unanswered": counts.get("unanswered", 0)}
    merge(got, data)
    # the driver's tables: accounting (per capture, merged) and topic ids
    from ..arrow.buffers import strings
    from ..capture.tables import table_schema

    batches = [accounting_batch(name, acc) for name, acc in sorted(data.accounting_by_capture.items())]
    rows = [{"capture": k.split("|", 1)[0], "topic_id": k.split("|", 1)[1], "topic": v}
            for k, v in data.topic_ids.items()]
    for table, t in (("accounting", pa.Table.from_batches(batches, schema=table_schema("accounting"))),
                     ("topic_ids", pa.table([strings([r[c] for r in rows], f.type) for c, f in
                                             zip(("capture", "topic_id", "topic"), table_schema("topic_ids"))],
                                            schema=table_schema("topic_ids")))):
        fs.create_dir(f"{base}/{table}", recursive=True)
        pq.write_table(t, f"{base}/{table}/part-driver.parquet", filesystem=fs)
    for table in TABLES:
        data.tables[table] = f"{data.out.rstrip('/')}/{table}"
