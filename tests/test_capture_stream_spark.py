"""``spark.readStream.format("kafkaproto.capture")``: a capture rolled into
files at every boundary class (between frames, mid-header, mid-frame),
read by streaming queries writing Parquet with a checkpoint -- stopped and
started again as the capture grows, and killed (SIGKILL) mid-stream and
restarted -- gives every table of the batch source over the same files,
row for row, each row once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from kafkaproto.capture import open_capture
from support.rotated import CLASSES, boundaries, resegment, roll, tap_files

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("frames", "requests", "responses", "records", "record_sets", "unanswered")
#: the tables of the kill test: the walker's state (frames), the decoder's (responses name topics by the
#: ids Metadata responses gave), the records' (the other tables are read in pieces in test_capture_stream)
KILLED = ("frames", "responses", "records")
#: and one over the tap's folder: its connections' pairing and the decoder's state (responses)
KILLED_TAP = ("responses",)

pytestmark = pytest.mark.spark


def canon(table: pa.Table, schema: pa.Schema) -> list:
    return sorted(map(repr, table.select(schema.names).cast(schema).to_pylist()))


def rolled(tmp_path, capture: str, seed: int) -> list[bytes]:
    """The capture, its segments cut in three, rolled after two records of each boundary class."""
    rng = random.Random(seed)
    cut = tmp_path / "resegmented.pcap"
    resegment(ROOT / "samples" / "capture" / capture, cut)
    classes = boundaries(cut)
    return roll(cut, tmp_path, [i for c in CLASSES for i in rng.sample(classes[c], 2)])


def write(folder: Path, blobs: list[bytes], upto: int) -> None:
    """The rolled files' first ``upto`` bytes (the last one written to cut short)."""
    folder.mkdir(exist_ok=True)
    for k, blob in enumerate(blobs):
        part = blob[:max(0, upto)]
        (folder / (f"cap.pcap{k}" if k else "cap.pcap")).write_bytes(part) if part else None
        upto -= len(blob)


def test_a_stream_stopped_and_started_as_the_capture_grows(spark, tmp_path):
    from pyspark.sql import functions as F

    from kafkaproto import sources

    sources.register(spark)
    blobs = rolled(tmp_path, "kafka44.pcap", 3)
    folder = tmp_path / "cap"
    total = sum(map(len, blobs))
    out, ck = tmp_path / "out", tmp_path / "ck"
    for upto in (total // 3 + 1234, total):  # the second run goes on from the first one's checkpoint
        write(folder, blobs, upto)
        df = (spark.readStream.format("kafkaproto.capture").option("table", "responses")
              .option("stateLocation", str(tmp_path / "state")).option("maxBytesPerTrigger", "96k")
              .load(str(folder)))
        q = (df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None
    want = open_capture(folder).read_table("responses")
    got = spark.read.parquet(str(out)).toArrow()
    assert got.num_rows == want.num_rows > 0
    assert canon(got, want.schema) == canon(want, want.schema)
    # ts works with a watermark
    counts = (spark.readStream.format("kafkaproto.capture").option("table", "frames")
              .option("stateLocation", str(tmp_path / "state2")).load(str(folder))
              .withWatermark("ts", "1 minute").groupBy(F.window("ts", "10 seconds")).count())
    q = counts.writeStream.format("memory").queryName("kp_windows").outputMode("update") \
        .trigger(availableNow=True).start()
    q.awaitTermination(300)
    assert spark.sql("select sum(count) from kp_windows").first()[0] == open_capture(folder).read_table(
        "frames", columns=["conn"]).num_rows
    spark.catalog.dropTempView("kp_windows")


_QUERIES = """
import sys, time
from pathlib import Path
from kafkaproto import sources
from kafkaproto.report.job import session

work = Path(sys.argv[1])
# each query: name=table=folder
QUERIES = [q.split("=", 2) for q in sys.argv[2].split(",")]
# (a loaded machine starts a Python worker slowly: it gets two minutes to connect back, not 15 s)
spark = session("local[2]", {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
                             "spark.scheduler.mode": "FAIR", "spark.python.authenticate.socketTimeout": "120s"})
spark.sparkContext.setLogLevel("ERROR")
sources.register(spark)
for name, table, folder in QUERIES:
    df = (spark.readStream.format("kafkaproto.capture").option("table", table)
          .option("stateLocation", str(work / "state" / name)).option("maxBytesPerTrigger", "8k").load(folder))
    q = (df.writeStream.format("parquet").option("path", str(work / "out" / name))
         .option("checkpointLocation", str(work / "ck" / name)).trigger(processingTime="0 seconds").start())
    # each query a few micro-batches in before the next starts: all are mid-stream when killed
    while not q.lastProgress or q.lastProgress["batchId"] < 2:
        time.sleep(0.1)
time.sleep(3600)
"""


def _commits(work: Path, table: str) -> int:
    d = work / "ck" / table / "commits"
    return len([n for n in os.listdir(d) if n.isdigit()]) if d.is_dir() else 0


@pytest.mark.engine_independent
def test_a_stream_killed_mid_stream_and_restarted_reads_every_row_once(spark, tmp_path):
    """Queries killed with SIGKILL while micro-batches run (in a driver of
    their own), then restarted from their checkpoints (in this process's
    session): each row of the batch source once -- over a rolled pcap
    capture, and over the tap's folder."""
    from kafkaproto import sources

    blobs = rolled(tmp_path, "kafka44.pcap", 5)
    folder, tap = tmp_path / "cap", tmp_path / "tap"
    write(folder, blobs, sum(map(len, blobs)))
    tap.mkdir()
    for name, blob in tap_files(ROOT / "samples" / "capture" / "kafka44.pcap", tmp_path / "written"):
        (tap / name).write_bytes(blob)
    queries = {t: (t, folder) for t in KILLED} | {f"tap-{t}": (t, tap) for t in KILLED_TAP}
    spec = ",".join(f"{n}={t}={f}" for n, (t, f) in queries.items())
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "queries.py"
    script.write_text(_QUERIES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.Popen([sys.executable, str(script), str(work), spec], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while min(_commits(work, n) for n in queries) < 2:
            assert run.poll() is None, "the queries stopped before they were killed"
            assert time.monotonic() < deadline, "no micro-batch committed in time"
            time.sleep(0.2)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the driver and its JVM and Python workers, at once
        run.wait()
    committed = {n: _commits(work, n) for n in queries}
    # the captures need more micro-batches than any query committed: each was killed mid-stream
    sizes = {n: sum(f.stat().st_size for f in where.iterdir()) for n, (_t, where) in queries.items()}
    assert all(committed[n] < sizes[n] // (8 << 10) for n in queries), (committed, sizes)
    sources.register(spark)
    for name, (table, where) in queries.items():  # one after the other, each to its end
        q = (spark.readStream.format("kafkaproto.capture").option("table", table)
             .option("stateLocation", str(work / "state" / name)).option("maxBytesPerTrigger", "1g")
             .load(str(where)).writeStream.format("parquet").option("path", str(work / "out" / name))
             .option("checkpointLocation", str(work / "ck" / name)).trigger(availableNow=True).start())
        finished = q.awaitTermination(600)
        if not finished:
            q.stop()
        assert finished and q.exception() is None, (name, q.exception())
        want = open_capture(where).read_table(table)
        got = spark.read.parquet(str(work / "out" / name)).toArrow()
        assert got.num_rows == want.num_rows > 0, name
        assert canon(got, want.schema) == canon(want, want.schema), name
