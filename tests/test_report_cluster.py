"""The report on real clusters, started here on 127.0.0.1 from the pyspark
package: a standalone master with two workers (kafkaproto reaching the
executors as docs/report.md says: its wheel, shipped through ``spark.archives``,
to executors whose Python does not have it), and a Spark Connect server.
Their tables and figures equal the embedded engine's on the same split
(tests/test_report_engines.py holds the embedded engine to local Spark)."""

from __future__ import annotations

import os

import pytest

from kafkaproto.report import run_report
from support.report_helpers import ROOT, SAMPLE, report_figures, report_tables
from support.spark_cluster import connect_session
from support.synthetic import roll_capture, write_capture

MB = 1_000_000
SPLIT = {"whole_file_max": 2 * MB, "range_bytes": MB}  # the 3 MB single file goes in ranges too

# The run's one standalone cluster and one Connect server (tests/conftest.py);
# what these add to the local Spark tests (which run in both passes) is the
# deployment -- the wheel on executors without kafkaproto, Spark Connect --
# the same for either engine: the compiled pass runs them.
pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.wheel, pytest.mark.engine_independent]


# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster-in")
    single = folder / "single.pcap"
    write_capture(single, size=3 * MB, seed=31, connections=2)
    rolled = folder / "rolled-src.pcap"
    write_capture(rolled, size=3 * MB, seed=32, connections=2)
    return {"sample": str(SAMPLE / "kafka.pcap"), "tap-tansu": str(SAMPLE / "tap-tansu"), "single": str(single),
            "rolled": roll_capture(rolled, folder / "rolled", MB, "traffic.pcap")}


@pytest.fixture(scope="module")
def local_run(captures, tmp_path_factory):
    """The embedded engine's report (two worker processes, no JVM), split as on the clusters."""
    result = run_report(captures, tmp_path_factory.mktemp("cluster-local"), progress=False, workers=2, **SPLIT)
    assert result.data.engine == "embedded"
    assert result.data.tasks["byte ranges"] >= 6 and result.data.tasks["whole files"] == 2
    return result


def _same(a, b) -> None:
    ta, tb = report_tables(a.data.out), report_tables(b.data.out)
    for name in ta:
        assert ta[name] == tb[name], name
    assert report_figures(a.data) == report_figures(b.data)


def test_standalone_cluster_with_two_workers(local_run, captures, tmp_path, standalone_spark):
    def where_kafkaproto(batches):  # a closure: pickled by value (executors lack this test module)
        import pyarrow as pa

        import kafkaproto

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{"file": kafkaproto.__file__, "compiled": kafkaproto.COMPILED}])

    spark = standalone_spark
    url = spark.sparkContext.master
    where = spark.range(0, 2, 1, 2).mapInArrow(where_kafkaproto, "file string, compiled boolean").collect()
    for row in where:  # the executors import the wheel the archive brought
        assert f"{os.sep}kafkaproto{os.sep}kafkaproto{os.sep}__init__.py" in row["file"], row
        assert str(ROOT) not in row["file"]
        assert row["compiled"] == (os.environ.get("KAFKAPROTO_PURE", "") in ("", "0"))
    result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
    assert result.data.engine == "spark" and result.data.cores == 2
    assert result.data.master == url
    _same(local_run, result)


def test_spark_connect_server(local_run, captures, tmp_path, connect_remote):
    with connect_session(connect_remote) as spark:
        result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
    assert result.data.cores == 2
    _same(local_run, result)
