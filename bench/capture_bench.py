"""Capture -> report in CPU time per MB: each stage of the pipeline, and
Wireshark's Kafka dissector on the same bytes (issue 20's measure).

    python bench/capture_bench.py [--size 1G] [--profile mixed] [--cases read,decode,...]
    make bench-capture SIZE=256M

One synthetic capture (``tests/support/synthetic.py``, ``mixed`` profile by
default: bulk record batches with the chatty small-frame cast interleaved,
``--small-share`` of the bytes from the latter; ``real``: real client
traffic, the committed sample replicated onto new connections,
``synthetic.replicate_capture``) is written once under
``build/bench-capture/`` and kept (its stamp holds the parameters and the
generator's hash), and rolled into ``--rolled-files`` files as
``tcpdump -C`` would.  The cases (``--cases``, in this order):

- ``read``: the pcap records alone, a plain Python loop (the floor of any
  Python reader: one header unpacked and one slice per packet);
- ``tshark-read``: ``tshark -r FILE -q`` (reads, no dissection);
- ``decode``: the decode pass, every table built, nothing written;
- ``inspect``: ``kafkaproto inspect FILE > /dev/null``;
- ``inspect-json``: ``kafkaproto inspect FILE --json > /dev/null`` (every
  field of every frame, record sets in base64);
- ``tshark``: ``tshark -r FILE -d tcp.port==9092,kafka -T fields -e
  frame.number -e kafka.api_key -e kafka.correlation_id > /dev/null``;
- ``whole``, ``ranges``, ``rolled``: the report on the embedded engine
  (``--workers`` worker processes, ``--runs`` runs) on the file read whole
  by one task, on the file in byte ranges, on the rolled folder;
- ``spark-whole``, ``spark-ranges``, ``spark-rolled``: the same on Spark
  (``--master``, one session, ``--runs`` runs: the first pays for warming
  the JVM and the workers, the second is what a long-lived session sees);
- ``source``: the capture data source's reader (``kafkaproto.capture``, what
  its Spark tasks run) in one process, every partition in turn, planning
  included: the ``responses`` table (the one quoted), then ``frames``,
  ``requests``, ``records``, the responses read whole by one task, and the
  README's query's read (three columns, ``api = 'Fetch'`` pushed);
- ``spark-source``: the README's query (p99 Fetch latency by client id) over
  the source on Spark (``--master``, ``--runs`` runs, the last quoted), then
  the ``responses`` table read and dropped (``write.format("noop")``);
- ``small``: a ~200 kB capture of the same profile through ``kafkaproto
  report FILE --out DIR`` as a user runs it (wall time, JVM start included);
- ``report-cli``: ``kafkaproto report FILE --out DIR --quiet``, the command
  a user runs (the embedded engine, its default workers: imports, workers
  and the results' way back included);
- ``report-bare``: the same with ``--no-payloads`` (the records table's key,
  value and headers null, never copied);
- ``sample``: the committed sample (``samples/capture/kafka.pcap``, 629 kB)
  through ``kafkaproto report`` and through ``kafkaproto inspect``, as a user
  runs them: the report's fixed cost beside inspect's;
- ``import``: ``python -c "import kafkaproto"`` less ``python -c "pass"``;
- ``profile`` (only when asked): the decode pass under pyinstrument (the
  ``bench`` extra), the functions with the most time; ``--profile small
  --size 64M --cases profile`` profiles the small-frame traffic alone.

CPU time is user + system of the case's process and every process under it
(the JVM, Spark's Python workers, tshark): each case runs in a child process
reaped with ``os.wait4``, this process is the children's subreaper (Linux),
so processes orphaned by a case (a JVM outliving its driver) are reaped and
counted too (``getrusage(RUSAGE_CHILDREN)``).  Inside a Spark case the phases
(session start, each run) are told apart by the CPU time of the case's
process tree read from ``/proc``.  The machine is shared: CPU time, not wall
time, is the measure; wall time is printed beside it.

The cases call public entry points only, listed in :data:`ENTRY` and
:data:`SPLIT` below: the pipeline behind them can be rewritten and the
bench re-run unchanged.  Results also go to
``build/bench-capture/results-<profile>-<size>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

#: The entry points the cases call ("module:attribute"; lists are commands).
#: Update here when the pipeline's public names change.
ENTRY: dict[str, object] = {
    "decode": "kafkaproto.capture.dataset:decode_capture",  # (path) -> iterator of (table, RecordBatch)
    "report": "kafkaproto.report:run_report",  # (captures, out, spark=..., progress=False, **split)
    "session": "kafkaproto.report.job:session",  # (master) -> a Spark session
    "cli": [sys.executable, "-m", "kafkaproto"],  # the `kafkaproto` command
    "tshark": ["tshark"],
    "source": "kafkaproto.sources:KafkaCaptureDataSource",  # the capture data source (options) -> .reader(schema)
    "register": "kafkaproto.sources:register",  # (spark): the data sources on a session
}
#: How the report reads one file: whole in one task, or in byte ranges; on
#: the embedded engine (worker processes) or, for the ``spark-`` cases, on Spark.
SPLIT: dict[str, dict] = {
    "whole": {"whole_file_max": 1 << 62},
    "ranges": {"whole_file_max": 0},
    "rolled": {},
    "spark-whole": {"whole_file_max": 1 << 62},
    "spark-ranges": {"whole_file_max": 0},
    "spark-rolled": {"whole_file_max": 0},
}
CASES = ("read", "tshark-read", "decode", "inspect", "inspect-json", "tshark", "whole", "ranges", "rolled",
         "report-cli", "report-bare", "spark-whole", "spark-ranges", "source", "spark-source", "small", "sample",
         "import")
#: the README's own query over the capture source (``spark-source``)
P99_BY_CLIENT = "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) / 1000"
#: run only when asked (``--cases profile``): the decode pass under a profiler
EXTRA_CASES = ("profile",)
KAFKA_PORT = 9092
SAMPLE = ROOT / "samples" / "capture" / "kafka.pcap"


def entry(name: str):
    module, _, attr = ENTRY[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def synthetic():
    """tests/support/synthetic.py (test support, not in the installed package)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    from support import synthetic as mod

    return mod


# ---------------------------------------------------------------------------
# CPU time


TICK = os.sysconf("SC_CLK_TCK")


def processes() -> dict[int, tuple[int, int, int, int]]:
    """Every process: ``pid -> (ppid, start time, own CPU ticks, reaped
    children's CPU ticks)``, from /proc (Linux)."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:  # gone meanwhile
            continue
        f = data[data.rindex(b")") + 2:].split()
        # after the command (fields 1-2): state, ppid, ... utime, stime, cutime, cstime (14-17), ... starttime (22)
        procs[int(name)] = (int(f[1]), int(f[19]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))
    return procs


def subtree(root: int, procs) -> list[int]:
    children = defaultdict(list)
    for pid, (ppid, *_) in procs.items():
        children[ppid].append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            out.append(pid)
        todo += children.get(pid, ())
    return out


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it,
    with the children each has reaped."""
    procs = processes()
    return sum(procs[p][2] + procs[p][3] for p in subtree(root, procs)) / TICK


class Unaccounted(threading.Thread):
    """The CPU time that ``getrusage(RUSAGE_CHILDREN)`` never sees: a process
    whose parent ignores SIGCHLD is reaped by the kernel, and its time is
    added to no one (PySpark's worker daemon does this, and its workers do
    the report's decoding).  Watches the processes under this one and keeps
    the last reading of each such child; :meth:`total` is what those that
    are gone had used (up to one interval short each)."""

    def __init__(self, every: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.every = every
        self.done = threading.Event()
        self.seen: dict[tuple[int, int], int] = {}  # (pid, start) -> own ticks, for children of SIGCHLD-ignorers

    def run(self) -> None:
        while not self.done.wait(self.every):
            self.sample()

    def sample(self) -> None:
        procs = processes()
        ignoring: dict[int, bool] = {}
        for pid in subtree(os.getpid(), procs):
            ppid, start, own, _ = procs[pid]
            if ppid not in ignoring:
                ignoring[ppid] = _ignores_sigchld(ppid)
            if ignoring[ppid]:
                self.seen[(pid, start)] = own

    def total(self, reaped: set[int]) -> float:
        """Stop; the time of the watched processes that are gone, but for
        those reaped here (after their parent died: accounted)."""
        self.done.set()
        self.join()
        alive = {(pid, p[1]) for pid, p in processes().items()}
        return sum(t for key, t in self.seen.items() if key not in alive and key[0] not in reaped) / TICK


def _ignores_sigchld(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGCHLD - 1)))
    except OSError:
        pass
    return False


class Phases:
    """CPU and wall time of the phases of a case, inside its process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.out: dict[str, dict[str, float]] = {}
        self._mark = (tree_cpu(self.pid), time.monotonic())

    def lap(self, name: str) -> None:
        cpu, wall = tree_cpu(self.pid), time.monotonic()
        self.out[name] = {"cpu": cpu - self._mark[0], "wall": wall - self._mark[1]}
        self._mark = (cpu, wall)


def _subreaper() -> bool:
    """Adopt the orphans of the cases (PR_SET_CHILD_SUBREAPER), so that their
    CPU time is counted once they are reaped."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


#: the commands' environment: bytecode cached, as an installed wheel has it (a
#: shell that sets PYTHONDONTWRITEBYTECODE would have every command compile
#: the package's modules again: ~0.1 CPU-s a process)
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _compile_package() -> None:
    import compileall

    import kafkaproto

    compileall.compile_dir(Path(kafkaproto.__file__).parent, quiet=1)


def measure(argv: list[str], *, stdout=subprocess.DEVNULL) -> dict:
    """Run ``argv`` to its end and reap every process it left behind: the CPU
    time of the whole tree (``cpu``; ``unaccounted``: the part read from
    /proc, see :class:`Unaccounted`) and the wall time until it exits."""
    watch = Unaccounted()
    watch.start()
    cpu0, t0 = _cpu_children(), time.monotonic()
    proc = subprocess.Popen(argv, stdout=stdout, env=_ENV)
    _, status, _ = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reaped = set()
    deadline = time.monotonic() + 120
    while True:  # orphans: a JVM whose driver has gone exits when its stdin closes
        try:
            pid, _, _ = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            reaped.add(pid)
            continue
        if time.monotonic() > deadline:  # ours (adopted): ended by their ids
            for p, (ppid, *_) in processes().items():
                if ppid == os.getpid():
                    os.kill(p, signal.SIGTERM)
            deadline = time.monotonic() + 30
        time.sleep(0.05)
    lost = watch.total(reaped)
    return {"cpu": _cpu_children() - cpu0 + lost, "unaccounted": lost, "wall": wall, "rc": proc.returncode}


# ---------------------------------------------------------------------------
# captures


def sample_facts() -> dict:
    """What the committed sample holds (read once per run): packets, frames,
    records, connections, and its brokers' ports (tshark must be told them)."""
    from kafkaproto.capture import open_capture

    ds = open_capture(str(SAMPLE))
    frames = ds.read_table("frames", ["server"])
    records = ds.read_table("records", ["offset"]).num_rows
    reader = ds.read("unanswered")
    reader.read_all()
    a = reader.accounting[ds.captures[0].name]
    return {"bytes": SAMPLE.stat().st_size, "packets": a.packets_total, "frames": frames.num_rows,
            "records": records, "connections": a.kafka_connections,
            "ports": sorted({int(s.rsplit(":", 1)[1]) for s in frames["server"].to_pylist()})}


def capture(folder: Path, size: int, args, name: str | None = None) -> tuple[Path, dict]:
    """The capture for these parameters, written once; its description."""
    syn = synthetic()
    if args.profile == "real":
        facts = sample_facts()
        copies = max(1, round(size / facts["bytes"]))
        path = folder / (name or f"real-{_label(size)}.pcap")
        if not path.exists() or path.stat().st_size != 24 + copies * (facts["bytes"] - 24):
            folder.mkdir(parents=True, exist_ok=True)
            syn.replicate_capture(SAMPLE, path, copies)
        args.kafka_ports = facts["ports"]
        return path, {"bytes": path.stat().st_size, "packets": facts["packets"] * copies,
                      "connections": facts["connections"] * copies, "frames": facts["frames"] * copies,
                      "records": facts["records"] * copies, "cast_frames": {"small": facts["frames"] * copies},
                      "cast_bytes": {"small": path.stat().st_size}, "copies": copies}
    params = {"size": size, "profile": args.profile, "small_share": args.small_share, "seed": args.seed,
              "mss": args.mss, "value_size": args.value_size, "records_per_batch": args.records_per_batch,
              "generator": hashlib.sha256(Path(syn.__file__).read_bytes()).hexdigest()[:16]}
    path = folder / (name or f"{args.profile}-{_label(size)}-s{args.seed}.pcap")
    stamp = path.with_suffix(".json")
    if path.exists() and stamp.exists():
        got = json.loads(stamp.read_text())
        if got.get("params") == params:
            return path, got["manifest"]
    folder.mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    m = syn.write_capture(path, size=size, seed=args.seed, profile=args.profile, small_share=args.small_share,
                          mss=args.mss, value_size=args.value_size, records_per_batch=args.records_per_batch)
    desc = {"bytes": m.file_bytes, "packets": m.packets, "connections": m.connections,
            "frames": sum(m.frames.values()), "records": sum(m.records.values()),
            "cast_frames": dict(m.cast_frames), "cast_bytes": dict(m.cast_bytes),
            "coalesced_writes": m.coalesced_packets, "split_frames": m.split_frames,
            "seconds": round(time.monotonic() - t, 1)}
    stamp.write_text(json.dumps({"params": params, "manifest": desc}, indent=1))
    print(f"  wrote {path.name}: {m.file_bytes / 1e6:.0f} MB in {desc['seconds']:.0f}s", file=sys.stderr)
    return path, desc


def rolled(src: Path, folder: Path, files: int) -> list[str]:
    """``src`` cut into ``files`` files as ``tcpdump -C`` would (written once)."""
    stamp = folder / "source.json"
    want = {"source": src.stat().st_mtime_ns, "files": files}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return sorted((str(p) for p in folder.iterdir() if p.name != "source.json"), key=_roll_order)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    paths = synthetic().roll_capture(src, folder, -(-src.stat().st_size // files) + 4096, "traffic.pcap")
    stamp.write_text(json.dumps(want))
    return paths


def _roll_order(path: str) -> int:
    tail = path.rsplit("traffic.pcap", 1)[-1]
    return int(tail) if tail else 0


def _label(size: int) -> str:
    for unit, n in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size % n == 0:
            return f"{size // n}{unit}"
    return str(size)


# ---------------------------------------------------------------------------
# the cases, each in a child process (``--child CASE``)


def read_records(path: str) -> dict:
    """Every packet record of a classic pcap file: header unpacked, data sliced."""
    packets = nbytes = 0
    with open(path, "rb") as fh:
        head = fh.read(24)
        order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        rec = struct.Struct(order + "IIII")
        buf = memoryview(b"")
        while True:
            chunk = fh.read(1 << 22)
            if not chunk:
                break
            data = memoryview(bytes(buf) + chunk)
            pos, end = 0, len(data)
            while pos + 16 <= end:
                _, _, incl, _ = rec.unpack_from(data, pos)
                if pos + 16 + incl > end:
                    break
                packet = data[pos + 16:pos + 16 + incl]
                nbytes += len(packet)
                packets += 1
                pos += 16 + incl
            buf = data[pos:]
    return {"packets": packets, "packet_bytes": nbytes}


def child(case: str, args) -> dict:
    ph = Phases()
    info: dict[str, object] = {}
    path = args.path
    if case == "read":
        info = read_records(path)
        ph.lap("work")
    elif case == "decode":
        decode = entry("decode")
        ph.lap("import")
        rows: dict[str, int] = defaultdict(int)
        for table, batch in decode(path):
            rows[table] += batch.num_rows
        ph.lap("work")
        info = {"rows": dict(rows)}
    elif case in SPLIT and not case.startswith("spark-"):
        run_report = entry("report")
        captures = {"traffic": args.rolled} if case == "rolled" else {"traffic": path}
        ph.lap("import")
        for k in range(args.runs):
            result = run_report(captures, Path(args.out) / f"report-{case}-{k}", progress=False,
                                workers=args.workers, **SPLIT[case])
            ph.lap(f"run{k + 1}")
    elif case in SPLIT:
        run_report, session = entry("report"), entry("session")
        captures = {"traffic": args.rolled} if case == "spark-rolled" else {"traffic": path}
        ph.lap("import")
        spark = session(args.master)
        ph.lap("start")
        try:
            for k in range(args.runs):
                result = run_report(captures, Path(args.out) / f"report-{case}-{k}", spark=spark, progress=False,
                                    **SPLIT[case])
                ph.lap(f"run{k + 1}")
        finally:
            spark.stop()  # (its Python workers go, and their time leaves the tree: no lap)
        d = result.data
        info = {"tasks": d.tasks, "records": d.totals.get("records"),
                "frames": d.totals.get("requests", 0) + d.totals.get("responses", 0),
                "accounting_adds_up": not d.accounting.problems()}
    elif case == "source":
        info = source_reads(path, ph)
    elif case == "spark-source":
        session, register = entry("session"), entry("register")
        ph.lap("import")
        spark = session(args.master)
        register(spark)
        ph.lap("start")
        from pyspark.sql import functions as F

        def read(**options):
            r = spark.read.format("kafkaproto.capture").option("table", "responses")
            for k, v in options.items():
                r = r.option(k, v)
            return r.load(path)

        try:
            for k in range(args.runs):
                rows = (read(columns="api,client_id,latency_us").where("api = 'Fetch'").groupBy("client_id")
                        .agg(F.count("*"), F.expr(P99_BY_CLIENT)).collect())
                ph.lap(f"run{k + 1}")
            for k in range(args.runs):
                read().write.format("noop").mode("overwrite").save()
                ph.lap(f"table{k + 1}")
        finally:
            spark.stop()
        info = {"clients": len(rows)}
    elif case == "profile":
        info = profile_decode(path, args.top)
        ph.lap("work")
    else:
        raise SystemExit(f"no child case {case}")
    return {"phases": ph.out, "info": info}


def source_reads(path: str, ph: Phases) -> dict:
    """The capture source's reader in this process: each read planned (the
    index of a capture past ``splitBytes`` included) and every partition read."""
    from pyspark.sql.datasource import CaseInsensitiveDict, EqualTo

    source = entry("source")
    ph.lap("import")
    info: dict[str, object] = {}
    reads = (("responses", "responses", {}, ()), ("frames", "frames", {}, ()), ("requests", "requests", {}, ()),
             ("records", "records", {}, ()), ("responses-whole", "responses", {"splitBytes": str(1 << 62)}, ()),
             ("query", "responses", {"columns": "api,client_id,latency_us"}, (EqualTo(("api",), "Fetch"),)))
    for name, table, options, filters in reads:
        ds = source(CaseInsensitiveDict({"table": table, "path": path, **options}))
        reader = ds.reader(ds.schema())
        list(reader.pushFilters(list(filters)))
        t0 = tree_cpu(os.getpid())
        parts = reader.partitions()
        plan = tree_cpu(os.getpid()) - t0
        rows = sum(b.num_rows for p in parts for b in reader.read(p))
        ph.lap(name)
        info[name] = {"rows": rows, "partitions": len(parts), "plan_cpu": round(plan, 2),
                      "positions_mb": round(sum(len(getattr(p, "positions", b"")) for p in parts) / 1e6, 2)}
    return info


def profile_decode(path: str, top: int) -> dict:
    """The decode pass under pyinstrument (a sampling profiler: the time of
    C code is its Python caller's): the functions with the most time of
    their own, and the most time in all."""
    from pyinstrument import Profiler

    decode = entry("decode")
    try:  # imported lazily inside the pass (through pyarrow): paid once, not per frame
        import pandas  # noqa: F401
    except ImportError:
        pass
    prof = Profiler(interval=0.0005)
    prof.start()
    for _ in decode(path):
        pass
    prof.stop()
    session = prof.last_session
    own: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)

    def walk(frame, stack: frozenset) -> None:
        kids = [c for c in frame.children if not c.is_synthetic]
        name = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        own[name] += frame.time - sum(c.time for c in kids)
        if name not in stack:  # recursion counted once
            total[name] += frame.time
        for c in kids:
            walk(c, stack | {name})

    walk(session.root_frame(), frozenset())
    seconds = session.duration

    def rows(d):
        return [(k, round(v, 3), round(v / seconds, 4)) for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:top]]

    return {"seconds": seconds, "own": rows(own), "total": rows(total)}


def run_case(case: str, args, path: Path, rolled_paths: list[str]) -> dict:
    """One case to its end: ``{"cpu", "wall", "phases", "info"}``."""
    if case in ("inspect", "inspect-json", "tshark", "tshark-read"):
        if case.startswith("inspect"):
            argv = [*ENTRY["cli"], "inspect", str(path)] + (["--json"] if case == "inspect-json" else [])
        elif case == "tshark":
            argv = [*ENTRY["tshark"], "-r", str(path)]
            for port in getattr(args, "kafka_ports", None) or [KAFKA_PORT]:
                argv += ["-d", f"tcp.port=={port},kafka"]
            argv += ["-T", "fields", "-e", "frame.number", "-e", "kafka.api_key", "-e", "kafka.correlation_id"]
        else:
            argv = [*ENTRY["tshark"], "-r", str(path), "-q"]
        got = measure(argv)
        got.update(phases={}, info={})
        return got
    with tempfile.NamedTemporaryFile("r", suffix=".json", dir=args.out) as res:
        argv = [sys.executable, __file__, "--child", case, "--result", res.name, "--path", str(path),
                "--master", args.master, "--runs", str(args.runs), "--out", args.out, "--workers", str(args.workers)]
        if case in ("rolled", "spark-rolled"):
            argv += ["--rolled", ",".join(rolled_paths)]
        got = measure(argv)
        text = Path(res.name).read_text()
    if got["rc"] != 0 or not text:
        raise SystemExit(f"case {case} failed (status {got['rc']})")
    got.update(json.loads(text))
    return got


def report_cli(args, path: Path, *extra: str) -> dict:
    """``kafkaproto report FILE`` as a user runs it (with ``extra`` options)."""
    out = Path(args.out) / "report-cli"
    shutil.rmtree(out, ignore_errors=True)
    got = measure([*ENTRY["cli"], "report", str(path), "--out", str(out), "--quiet", *extra])
    if got["rc"] not in (0, 1):
        raise SystemExit(f"kafkaproto report failed (status {got['rc']})")
    got.update(phases={}, info={})
    return got


def sample_commands(args) -> dict:
    """The committed sample through ``kafkaproto report`` and ``kafkaproto inspect`` (each the median of three)."""
    out = Path(args.out) / "report-sample"
    runs: dict[str, list] = {"report": [], "inspect": []}
    for _ in range(3):
        shutil.rmtree(out, ignore_errors=True)
        runs["report"].append(measure([*ENTRY["cli"], "report", str(SAMPLE), "--out", str(out), "--quiet"]))
        runs["inspect"].append(measure([*ENTRY["cli"], "inspect", str(SAMPLE)]))
    med = {k: sorted(v, key=lambda r: r["cpu"])[1] for k, v in runs.items()}
    return {"cpu": med["report"]["cpu"], "wall": med["report"]["wall"], "phases": {},
            "info": {"inspect_cpu": med["inspect"]["cpu"], "inspect_wall": med["inspect"]["wall"]}}


def import_cost() -> dict:
    """``import kafkaproto`` in CPU time: a process that imports it, less one that does not (median of five)."""
    imp = sorted(measure([sys.executable, "-c", "import kafkaproto"])["cpu"] for _ in range(5))[2]
    bare = sorted(measure([sys.executable, "-c", "pass"])["cpu"] for _ in range(5))[2]
    return {"cpu": imp - bare, "wall": 0.0, "phases": {}, "info": {"with": imp, "without": bare}}


def small_report(args, folder: Path) -> dict:
    """A ~200 kB capture through ``kafkaproto report`` as a user runs it."""
    path, desc = capture(folder, args.small_size, args, f"{args.profile}-small-s{args.seed}.pcap")
    out = Path(args.out) / "report-small"
    shutil.rmtree(out, ignore_errors=True)
    got = measure([*ENTRY["cli"], "report", str(path), "--out", str(out), "--quiet"])
    if got["rc"] not in (0, 1):
        raise SystemExit(f"kafkaproto report on the small capture failed (status {got['rc']})")
    got.update(phases={}, info={"bytes": desc["bytes"], "frames": desc["frames"]})
    return got


# ---------------------------------------------------------------------------
# the table


def work(case: str, r: dict, runs: int) -> tuple[float, float, str]:
    """The CPU and wall time the table quotes for a case, and what they are."""
    ph = r["phases"]
    if case in ("read", "decode"):
        return ph["work"]["cpu"], ph["work"]["wall"], "the loop alone"
    if case == "source":
        return ph["responses"]["cpu"], ph["responses"]["wall"], "responses, planning included"
    if case == "spark-source":
        k = f"run{min(runs, 2)}"
        return ph[k]["cpu"], ph[k]["wall"], "Spark, " + ("warm run" if k == "run2" else "first run")
    if case in SPLIT:
        k = f"run{min(runs, 2)}"
        if not case.startswith("spark-"):
            return ph[k]["cpu"], ph[k]["wall"], "embedded engine, " + ("second run" if k == "run2" else "first run")
        return ph[k]["cpu"], ph[k]["wall"], "Spark, warm run" if k == "run2" else "Spark, first run"
    return r["cpu"], r["wall"], "whole process"


LABELS = {
    "read": "pcap records, plain Python loop (floor)",
    "tshark-read": "tshark -r FILE -q (reads, no dissection)",
    "decode": "decode pass (decode_capture, all tables)",
    "inspect": "kafkaproto inspect FILE > /dev/null",
    "inspect-json": "kafkaproto inspect FILE --json > /dev/null",
    "tshark": "tshark -d tcp.port==PORT,kafka (each broker port) -T fields",
    "whole": "report, one file read whole",
    "ranges": "report, the file in byte ranges",
    "rolled": "report, the capture rolled into files",
    "spark-whole": "report on Spark, one file read whole",
    "spark-ranges": "report on Spark, the file in byte ranges",
    "spark-rolled": "report on Spark, the rolled files in ranges",
    "source": "capture source, its tasks in one process",
    "spark-source": "capture source on Spark: p99 Fetch by client id",
    "small": "report on a small capture, as a user runs it",
    "report-cli": "kafkaproto report FILE (the command)",
    "report-bare": "kafkaproto report FILE --no-payloads",
    "sample": "report on the committed sample (the command)",
    "import": "import kafkaproto",
}


def table(results: dict, desc: dict, args, nbytes: int) -> str:
    mb = nbytes / 1e6
    lines = []
    desc = {**desc, "cast_bytes": desc.get("cast_bytes", {}), "cast_frames": desc.get("cast_frames", {})}
    small_b = desc["cast_bytes"].get("small", 0)
    small_f = desc["cast_frames"].get("small", 0)
    lines.append(f"capture: {args.profile}, {mb:,.0f} MB, {desc['packets']:,} packets, {desc['frames']:,} frames, "
                 f"{desc['records']:,} records, {desc['connections']:,} connections; small-frame cast: "
                 f"{small_b / max(sum(desc['cast_bytes'].values()), 1):.0%} of the bytes, "
                 f"{small_f / max(desc['frames'], 1):.0%} of the frames")
    lines.append(f"{'case':49s} {'CPU s':>8s} {'wall s':>8s} {'MB/CPU-s':>9s}  what is timed")
    speed = {}
    for case in CASES:
        r = results.get(case)
        if r is None:
            continue
        cpu, wall, what = work(case, r, args.runs)
        if case == "small":
            label = f"{LABELS[case]} ({r['info']['bytes'] / 1e3:.0f} kB)"
            lines.append(f"{label:49s} {r['cpu']:8.1f} {r['wall']:8.1f} {'':>9s}  whole process (JVM start included)")
            continue
        if case == "sample":
            i = r["info"]
            lines.append(f"{LABELS[case]:49s} {r['cpu']:8.2f} {r['wall']:8.2f} {'':>9s}  whole process; inspect "
                         f"{i['inspect_cpu']:.2f} CPU-s: the report costs {r['cpu'] / i['inspect_cpu']:.2f}x inspect")
            continue
        if case == "import":
            lines.append(f"{LABELS[case]:49s} {r['cpu'] * 1000:7.0f}ms {'':>8s} {'':>9s}  CPU, less a bare "
                         f"interpreter's ({r['info']['without'] * 1000:.0f} ms)")
            continue
        label = LABELS[case] + (f" ({len(args.rolled_paths)})" if case.endswith("rolled") else "")
        speed[case] = mb / cpu if cpu else float("inf")
        extra = ""
        if case == "source":
            ph, info = r["phases"], r["info"]
            extra = (f" ({info['responses']['partitions']} partitions, index {info['responses']['plan_cpu']:.1f} "
                     f"CPU-s, positions {info['responses']['positions_mb']:.1f} MB); MB/CPU-s of the other reads: "
                     + ", ".join(f"{k} {mb / ph[k]['cpu']:.0f}" for k in ("frames", "requests", "records",
                                                                          "responses-whole", "query")))
        elif case == "spark-source":
            ph = r["phases"]
            extra = (f"; session start {ph['start']['cpu']:.1f} CPU-s, first run {ph['run1']['cpu']:.1f}; the "
                     f"responses table to noop: {mb / ph[f'table{min(args.runs, 2)}']['cpu']:.0f} MB/CPU-s")
        elif case.startswith("spark-"):
            ph = r["phases"]
            extra = (f"; session start {ph['start']['cpu']:.1f} CPU-s, first run {ph['run1']['cpu']:.1f}, "
                     f"whole process {r['cpu']:.1f}")
        lines.append(f"{label:49s} {cpu:8.1f} {wall:8.1f} {speed[case]:9.1f}  {what}{extra}")
    lines.append("ratios (MB per CPU-second over MB per CPU-second; above 1: the first is cheaper):")
    for a, b, what in (("decode", "inspect", "decode pass / inspect"),
                       ("whole", "decode", "report whole / decode pass"),
                       ("ranges", "whole", "report in byte ranges / whole"),
                       ("rolled", "whole", "report rolled / whole"),
                       ("spark-whole", "whole", "report on Spark / embedded, whole"),
                       ("spark-ranges", "spark-whole", "report on Spark, ranges / whole"),
                       ("source", "decode", "capture source's responses / decode pass"),
                       ("spark-source", "decode", "the query on Spark / decode pass"),
                       ("inspect", "tshark", "inspect / tshark (tshark's CPU over inspect's)"),
                       ("decode", "tshark", "decode pass / tshark"),
                       ("whole", "tshark", "report whole / tshark"),
                       ("report-cli", "tshark", "kafkaproto report / tshark (the commands)"),
                       ("report-cli", "decode", "kafkaproto report / decode pass"),
                       ("report-bare", "tshark", "report --no-payloads / tshark"),
                       ("report-bare", "decode", "report --no-payloads / decode pass"),
                       ("read", "tshark-read", "Python record loop / tshark -q")):
        if a in speed and b in speed:
            lines.append(f"  {what:49s} {speed[a] / speed[b]:6.2f}x")
    if "report-cli" in speed and "decode" in results:
        # the decode pass as a user's script runs it: its import (kafkaproto.capture) and the loop
        ph = results["decode"]["phases"]
        script = ph["import"]["cpu"] + ph["work"]["cpu"]
        what = "kafkaproto report / decode pass with its import"
        lines.append(f"  {what:49s} {speed['report-cli'] / (mb / script):6.2f}x  (import + loop: {script:.1f} CPU-s)")
    return "\n".join(lines)


def profile_text(info: dict) -> str:
    lines = [f"decode pass under pyinstrument: {info['seconds']:.1f} s sampled"]
    for key, what in (("own", "time of their own (C code called included)"), ("total", "time in all")):
        lines.append(f"  by {what}:")
        lines += [f"    {share:6.1%} {sec:8.2f} s  {name}" for name, sec, share in info[key]]
    return "\n".join(lines)


def tshark_coverage(path: Path) -> str:
    """What tshark's dissector makes of the capture's Kafka frames: the API
    versions it knows, and the frames whose body it did not dissect."""
    try:
        version = subprocess.run([*ENTRY["tshark"], "-v"], capture_output=True, text=True).stdout.split(" (Git")[0]
        out = subprocess.run([*ENTRY["tshark"], "-r", str(path), "-d", f"tcp.port=={KAFKA_PORT},kafka", "-Y", "kafka",
                              "-T", "fields", "-E", "occurrence=f", "-e", "kafka.unsupported_api_version",
                              "-e", "_ws.expert.message"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"tshark: {exc}"
    pdus = unsupported = 0
    limits = set()
    for line in out.splitlines():
        pdus += 1
        flag, _, msg = line.partition("\t")
        if flag or "Request Missing" in msg or "Unknown" in msg:
            unsupported += 1
        for part in msg.split(","):
            if part.startswith("Unsupported ") and "Supports" in part:
                limits.add(part.replace("Unsupported ", "").replace(" version. Supports", "").rstrip("."))
    return (f"{version}: of {pdus:,} packets with Kafka PDUs ({path.name}), {unsupported:,} not dissected (an API "
            f"version it does not know, or the response to one); it knows {', '.join(sorted(limits))}")


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="1G", help="capture size (K/M/G suffixes)")
    p.add_argument("--profile", default="mixed", choices=("bulk", "small", "mixed", "real"))
    p.add_argument("--small-share", type=float, default=0.2, help="mixed: the small-frame cast's share of the bytes")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mss", type=int, default=1460)
    p.add_argument("--value-size", type=int, default=400, help="bulk cast: record value bytes")
    p.add_argument("--records-per-batch", type=int, default=100, help="bulk cast: records per batch")
    p.add_argument("--rolled-files", type=int, default=64)
    p.add_argument("--small-size", default="200K", help="the small capture of the `small` case")
    p.add_argument("--master", default="local[2]", help="the Spark cases' master")
    p.add_argument("--workers", type=int, default=2, help="the embedded engine's worker processes")
    p.add_argument("--runs", type=int, default=2, help="runs of the report on one session (the last is quoted)")
    p.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES + EXTRA_CASES)}")
    p.add_argument("--top", type=int, default=25, help="profile: functions listed")
    p.add_argument("--out", default=str(ROOT / "build" / "bench-capture"))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    p.add_argument("--rolled", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.rolled = args.rolled.split(",") if args.rolled else None
        result = child(args.child, args)
        Path(args.result).write_text(json.dumps(result))
        return 0

    syn = synthetic()
    size, args.small_size = syn._size(args.size), syn._size(args.small_size)
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES) - set(EXTRA_CASES)
    if unknown:
        p.error(f"unknown cases {', '.join(sorted(unknown))}; known: {', '.join(CASES + EXTRA_CASES)}")
    if any(c.startswith("tshark") for c in cases) and not shutil.which(ENTRY["tshark"][0]):
        p.error("tshark is not installed (make peers installs it), or leave out the tshark cases")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    folder = Path(args.out) / "captures"
    reaping = _subreaper()
    _compile_package()
    import kafkaproto

    path, desc = capture(folder, size, args)
    nbytes = path.stat().st_size
    args.rolled_paths = rolled(path, folder / f"{path.stem}-rolled-{args.rolled_files}", args.rolled_files) \
        if "rolled" in cases or "spark-rolled" in cases else []
    print(f"capture bench: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}, core "
          f"{'compiled' if kafkaproto.COMPILED else 'pure Python'}, Spark {args.master}, {os.cpu_count()} cores; "
          f"orphans {'reaped and counted' if reaping else 'NOT counted (no subreaper)'}", flush=True)
    results: dict[str, dict] = {}
    for case in cases:
        print(f"  {case} ...", file=sys.stderr, flush=True)
        if case == "small":
            r = small_report(args, folder)
        elif case == "report-cli":
            r = report_cli(args, path)
        elif case == "report-bare":
            r = report_cli(args, path, "--no-payloads")
        elif case == "sample":
            r = sample_commands(args)
        elif case == "import":
            r = import_cost()
        else:
            r = run_case(case, args, path, args.rolled_paths)
        results[case] = r
        cpu, wall, _ = work(case, r, args.runs)
        print(f"  {case}: {cpu:.1f} CPU-s, {wall:.1f} s wall", file=sys.stderr, flush=True)
    text = table(results, desc, args, nbytes)
    print(text)
    if "tshark" in cases or "tshark-read" in cases:
        small_path, _ = capture(folder, args.small_size * 10, args, f"{args.profile}-coverage-s{args.seed}.pcap")
        print(tshark_coverage(small_path))
    out = Path(args.out) / f"results-{args.profile}-{_label(size)}.json"
    if out.exists():  # a run of some cases keeps the other cases' results on the same capture
        old = json.loads(out.read_text())
        if old.get("capture") == desc and old.get("compiled") == kafkaproto.COMPILED:
            results = {**old["results"], **results}
    out.write_text(json.dumps({"capture": desc, "bytes": nbytes, "args": {k: v for k, v in vars(args).items()
                                                                           if not k.startswith("rolled")},
                               "compiled": kafkaproto.COMPILED, "results": results}, indent=1, default=str))
    if "profile" in results:
        print(profile_text(results["profile"]["info"]))
    print(f"results: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
