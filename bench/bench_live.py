"""Live traffic: the streaming read and the live report (issue 30's goals).

- throughput: the committed sample replicated onto distinct connections
  (40 copies, ~25 MB, 80 k frames on 11 k connections) rolled into 8 files,
  read by the batch dataset (``open_capture(...).read``) and as a stream in
  micro-batches of 4 MB (each loading the walker's state saved by the last,
  and saving its own, as a Spark executor does), tables ``frames`` and
  ``responses``; ``extra_info``: MB per CPU-second and the stream's over the
  batch's (goal: >= 0.8); the same over the tap's folder (``source=tap``:
  the frames written by the tap's own writer, a record batch every 512
  frames, rolled every 4 MB), the stream saving each connection's pairing;
- freshness: a capture written to a watched folder, until the live view
  shows it (``kafkaproto report --follow``'s loop, refresh 1 s) and until a
  streaming query (processing-time trigger of 1 s, memory sink) has its
  rows; goal: within one refresh / trigger + 1 s;
- memory: the live report over traffic at 5 k frames per second of capture
  time (the sample replicated, a copy's frames spread over its second),
  window 60 s in 30 slices, fed as fast as it reads: the Arrow memory and
  the process's resident set at the end against after the first window
  (goal: flat).  ``KAFKAPROTO_BENCH_LIVE_MINUTES`` sets the capture time
  (default 10; the goal speaks of an hour: 60).
"""

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from bench_capture import SAMPLE, replicate
from kafkaproto.capture import open_capture
from kafkaproto.capture.stream import GrowingCapture
from kafkaproto.report.live import LiveReport, follow

MB = 1_000_000
COPIES = 40
STEP = 4 << 20
GROUP = f"live: the sample x{COPIES} (~25 MB, 8 rolled files), batch dataset vs micro-batches of 4 MB"


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    where = tmp_path_factory.mktemp("live-bench")
    folder = where / "cap"
    folder.mkdir()
    per = COPIES // 8
    for k in range(8):
        replicate(SAMPLE, folder / (f"cap.pcap{k}" if k else "cap.pcap"), per, first=k * per)
    return folder, where


@pytest.fixture(scope="module")
def tapped(rolled):
    """The rolled capture's frames as the tap writes them (each connection's
    end row after its last frame)."""
    from kafkaproto.capture import read_frames
    from kafkaproto.capture.formats.tapfiles import FrameTableWriter

    tests = str(Path(__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from support.rotated import write_as_tap

    folder, where = rolled
    with FrameTableWriter(where / "tap", roll_bytes=4 << 20, flush_seconds=1e9) as w:
        write_as_tap(w, read_frames(folder))
    return where / "tap", where


def _batch(folder, table):
    return sum(b.num_rows for b in open_capture(folder).read(table))


def _stream(folder, state, table):
    cap = GrowingCapture(folder, state)
    start, rows = cap.initial(), 0
    while True:
        end = cap.latest(start, STEP)
        if end == start:
            return rows
        rows += sum(b.num_rows for _t, b in cap.read(start, end, (table,)))
        cap.commit(end, (table,))
        start = end


@pytest.mark.parametrize("source", ["pcap", "tap"])
@pytest.mark.parametrize("table", ["frames", "responses"])
@pytest.mark.parametrize("how", ["batch", "stream"])
def test_throughput(benchmark, request, source, table, how):
    folder, where = request.getfixturevalue("rolled" if source == "pcap" else "tapped")
    nbytes = sum(p.stat().st_size for p in folder.iterdir())
    cpu = []
    runs = [0]

    def run():
        t = time.process_time()
        if how == "batch":
            n = _batch(folder, table)
        else:
            runs[0] += 1
            n = _stream(folder, where / f"state-{source}-{table}-{runs[0]}", table)
        cpu.append(time.process_time() - t)
        return n

    benchmark.group = f"{GROUP}: {table}" if source == "pcap" else f"{GROUP}, as the tap's folder: {table}"
    benchmark.extra_info["impl"] = "kafkaproto" if how == "batch" else "stream"
    rows = benchmark.pedantic(run, rounds=3, iterations=1)
    assert rows == _batch(folder, table)
    mb_cpu = nbytes / sorted(cpu)[1] / MB
    benchmark.extra_info["MB/CPU-s"] = round(mb_cpu, 1)
    _RATES[(source, table, how)] = mb_cpu
    if (source, table, "batch") in _RATES and (source, table, "stream") in _RATES:
        benchmark.extra_info["stream/batch per CPU-s"] = round(
            _RATES[(source, table, "stream")] / _RATES[(source, table, "batch")], 2)


_RATES: dict = {}


def test_freshness_live_view(benchmark, tmp_path):
    """Seconds from a capture written to the watched folder to the live view
    showing its requests (refresh 1 s)."""
    refresh = 1.0

    def once():
        folder, out = tmp_path / f"cap-{time.monotonic_ns()}", tmp_path / f"out-{time.monotonic_ns()}"
        folder.mkdir()
        stop = threading.Event()
        t = threading.Thread(target=follow, args=(folder, out), kwargs=dict(
            refresh=refresh, stream=open(os.devnull, "w"), stop=stop.is_set))
        t.start()
        try:
            while not (out / "report.json").exists():
                time.sleep(0.01)
            time.sleep(refresh / 3)  # somewhere in a refresh
            at = time.monotonic()
            (folder / "cap.pcap").write_bytes(SAMPLE.read_bytes())
            while json.loads((out / "report.json").read_text())["totals"].get("requests", 0) == 0:
                time.sleep(0.01)
            return time.monotonic() - at
        finally:
            stop.set()
            t.join()

    waits = []
    benchmark.group = "live: seconds from a capture written to what the live view shows (refresh 1 s)"
    benchmark.extra_info["impl"] = "kafkaproto"
    benchmark.pedantic(lambda: waits.append(once()), rounds=3, iterations=1)
    benchmark.extra_info["seconds (max)"] = round(max(waits), 2)
    assert max(waits) <= refresh + 1


def test_freshness_streaming_query(benchmark, tmp_path):
    """Seconds from a capture written to the watched folder to a streaming
    query's rows (processing-time trigger of 1 s, memory sink)."""
    from kafkaproto import sources
    from kafkaproto import spark as kps

    spark = kps.local_session("kafkaproto-bench-live", 2, {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    sources.register(spark)
    trigger = 1.0
    runs = [0]

    def once():
        k = runs[0] = runs[0] + 1
        folder = tmp_path / f"cap{k}"
        folder.mkdir()
        q = (spark.readStream.format("kafkaproto.capture").option("table", "requests")
             .option("stateLocation", str(tmp_path / f"state{k}")).load(str(folder))
             .writeStream.format("memory").queryName(f"live_bench_{k}").trigger(processingTime="1 second")
             .start())
        try:
            # the query is up once its first (empty) trigger is over
            while q.status["message"] == "Initializing sources" or q.status["isTriggerActive"]:
                time.sleep(0.05)
            time.sleep(trigger / 3)  # somewhere in a trigger
            at = time.monotonic()
            (folder / "cap.pcap").write_bytes(SAMPLE.read_bytes())
            while spark.sql(f"select count(*) from live_bench_{k}").first()[0] == 0:
                time.sleep(0.05)
            return time.monotonic() - at
        finally:
            q.stop()

    waits = []
    benchmark.group = "live: seconds from a capture written to a streaming query's rows (trigger 1 s)"
    benchmark.extra_info["impl"] = "kafkaproto"
    try:
        once()  # the first query pays for the Python workers' start
        benchmark.pedantic(lambda: waits.append(once()), rounds=3, iterations=1)
    finally:
        spark.stop()
    benchmark.extra_info["seconds"] = [round(w, 2) for w in waits]
    benchmark.extra_info["seconds (max)"] = round(max(waits), 2)
    assert max(waits) <= trigger + 1


def test_live_report_memory_at_5k_frames_per_second(benchmark, tmp_path):
    minutes = float(os.environ.get("KAFKAPROTO_BENCH_LIVE_MINUTES", "10"))
    folder = tmp_path / "cap"
    folder.mkdir()
    frames_per_copy = open_capture(SAMPLE).read_table("frames", columns=["conn"]).num_rows
    per_second = max(1, round(5000 / frames_per_copy))
    clock = [0.0]
    live = LiveReport(folder, None, window=60, slices=30, starting="earliest", clock=lambda: clock[0])
    seconds = int(minutes * 60)
    samples = []

    def run():
        path = folder / "cap.pcap"
        replicate(SAMPLE, path, 1, shift=0)  # the file header
        for s in range(seconds):
            part = tmp_path / "part.pcap"
            replicate(SAMPLE, part, per_second, first=s * per_second, shift=0, header=False)
            with open(path, "ab") as fh:
                fh.write(part.read_bytes())
            clock[0] = float(s)
            live.step()
            if s in (60, seconds - 1):
                samples.append((pa.total_allocated_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))

    benchmark.group = "live: the live report's memory at 5 k frames/s (window 60 s)"
    benchmark.extra_info["impl"] = "kafkaproto"
    benchmark.pedantic(run, rounds=1, iterations=1)
    (arrow_1, rss_1), (arrow_end, rss_end) = samples
    benchmark.extra_info.update({"capture minutes": minutes, "frames/s": per_second * frames_per_copy,
                                 "arrow MB after 1 min": round(arrow_1 / MB, 1),
                                 "arrow MB at the end": round(arrow_end / MB, 1),
                                 "max RSS MB after 1 min": round(rss_1 / 1000, 1),
                                 "max RSS MB at the end": round(rss_end / 1000, 1)})
    assert arrow_end <= 1.5 * arrow_1 + 8 * MB
    # the process too: the walker keeps at most its open and recently closed
    # connections, the sink none, the decoder only the open ones' state
    assert rss_end <= 1.5 * rss_1, (rss_1, rss_end)
