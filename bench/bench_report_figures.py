"""The report's figures (``report/aggregate.py``) on real client traffic:
the committed sample copied onto distinct connections (40 copies: 25 MB,
80 k frames on 10.9 k connections, small frames on short connections), its
tables decoded once, then, timed:

- ``kafkaproto``: what the report does with them besides writing them --
  every batch fed to one task's group-bys, its ``connections`` table and
  its manifest (one Arrow IPC buffer), and the driver's fold of that
  manifest into the report's figures;
- ``floor``: one Arrow group-by of the same frames by connection (a count
  and a sum): the least that any per-connection figure costs.

``extra_info``: µs per frame, and the manifest's bytes.
"""

import pathlib
import sys

import pyarrow as pa
import pytest

from kafkaproto.capture.dataset import decode_capture
from kafkaproto.report.aggregate import TaskAggregates, merge
from kafkaproto.report.job import ReportData
from kafkaproto.report.tasks import _manifest, read_manifests

ROOT = pathlib.Path(__file__).resolve().parent.parent
COPIES = 40
TABLES = ("requests", "responses", "record_sets", "unanswered", "topic_ids")


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    from support.replica import replicate

    path = tmp_path_factory.mktemp("figures") / "replica.pcap"
    replicate(ROOT / "samples" / "capture" / "kafka.pcap", path, COPIES)
    return [(t, b) for t, b in decode_capture(str(path), capture="replica.pcap") if t in TABLES]


def _figures(batches) -> bytes:
    agg = TaskAggregates()
    for table, batch in batches:
        agg.add(table, batch)
    agg.connections()
    manifest = _manifest([], [], agg)
    merge(read_manifests([manifest]), ReportData())
    return manifest


def _floor(frames: list) -> pa.Table:
    t = pa.Table.from_batches(frames)
    return t.group_by(["capture", "conn"], use_threads=False).aggregate([("conn", "count"), ("size", "sum")])


def _frames(batches) -> int:
    return sum(b.num_rows for t, b in batches if t in ("requests", "responses"))


def test_figures_per_frame(benchmark, batches):
    benchmark.group = "report: the figures of small-frame traffic (25 MB, 10.9 k connections)"
    benchmark.extra_info["impl"] = "kafkaproto"
    manifest = benchmark.pedantic(_figures, args=(batches,), rounds=5, iterations=1)
    benchmark.extra_info["us/frame"] = round(benchmark.stats.stats.median / _frames(batches) * 1e6, 3)
    benchmark.extra_info["manifest bytes"] = len(manifest)


def test_floor_one_group_by_per_connection(benchmark, batches):
    benchmark.group = "report: the figures of small-frame traffic (25 MB, 10.9 k connections)"
    benchmark.extra_info["impl"] = "floor"
    frames = [b.select(["capture", "conn", "size"]) for t, b in batches if t in ("requests", "responses")]
    got = benchmark.pedantic(_floor, args=(frames,), rounds=5, iterations=1)
    assert got.num_rows == COPIES * 273
    benchmark.extra_info["us/frame"] = round(benchmark.stats.stats.median / _frames(batches) * 1e6, 3)
