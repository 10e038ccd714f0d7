"""The report on real clusters, started here on 127.0.0.1 from the pyspark
package: a standalone master with two workers (kafkaproto reaching the
executors as docs/report.md says: its wheel, shipped through ``spark.archives``,
to executors whose Python does not have it), and a Spark Connect server.
Their tables and figures equal a local[2] run's."""

from __future__ import annotations

import os

import pytest

from kafkaproto.report import run_report
from support.report_helpers import ROOT, SAMPLE, report_figures, report_tables
from support.spark_cluster import connect_session, standalone_session, wheel_archive
from support.spark_session import stop_shared_session
from support.synthetic import roll_capture, write_capture

MB = 1_000_000
SPLIT = {"whole_file_max": 2 * MB, "range_bytes": MB}  # the 3 MB single file goes in ranges too

# A cluster of processes, a SparkContext of its own (after every test on the
# run's shared session: conftest orders cluster tests last), a wheel built.
# What these add to the local Spark tests (which run in both passes) is the
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
def local_run(spark, captures, tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster-local")
    try:
        result = run_report(captures, out, spark=spark, progress=False, **SPLIT)
    finally:
        stop_shared_session()  # one SparkContext per process: the clusters' sessions come next
    assert result.data.tasks["byte ranges"] >= 6 and result.data.tasks["whole files"] == 2
    return result


def _same(a, b) -> None:
    ta, tb = report_tables(a.data.out), report_tables(b.data.out)
    for name in ta:
        assert ta[name] == tb[name], name
    assert report_figures(a.data) == report_figures(b.data)


def test_standalone_cluster_with_two_workers(local_run, captures, tmp_path_factory, tmp_path):
    archive = wheel_archive(tmp_path_factory.mktemp("wheel"))

    def where_kafkaproto(batches):  # a closure: pickled by value (executors lack this test module)
        import pyarrow as pa

        import kafkaproto

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{"file": kafkaproto.__file__, "compiled": kafkaproto.COMPILED}])

    with standalone_session(tmp_path, archive, "kafkaproto-report-cluster-test") as spark:
        url = spark.sparkContext.master
        where = spark.range(0, 2, 1, 2).mapInArrow(where_kafkaproto, "file string, compiled boolean").collect()
        for row in where:  # the executors import the wheel the archive brought
            assert f"{os.sep}kafkaproto{os.sep}kafkaproto{os.sep}__init__.py" in row["file"], row
            assert str(ROOT) not in row["file"]
            assert row["compiled"] == (os.environ.get("KAFKAPROTO_PURE", "") in ("", "0"))
        result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
    assert result.data.master == url
    _same(local_run, result)


def test_spark_connect_server(local_run, captures, tmp_path, connect_remote):
    with connect_session(connect_remote) as spark:
        result = run_report(captures, tmp_path / "out", spark=spark, progress=False, **SPLIT)
    assert result.data.cores == 2
    _same(local_run, result)
