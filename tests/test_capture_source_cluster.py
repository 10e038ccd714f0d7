"""``spark.read.format("kafkaproto.capture")`` over Spark Connect: a Connect
server started here on 127.0.0.1 (tests/support/spark_cluster.py starts
it), the source registered from the client.  Its tables, whole and indexed,
are the report's, its filters are pushed, and the query of docs/sources.md gives the
same numbers as over the report's own table."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaproto import sources
from kafkaproto.report import run_report
from support.report_helpers import SAMPLE
from support.spark_cluster import connect_session
from support.synthetic import write_capture

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.engine_independent]


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("source-cluster-in")
    synthetic = folder / "synthetic.pcap"
    write_capture(synthetic, size=1_500_000, seed=43, connections=2)
    return [str(SAMPLE / "kafka.pcap"), str(SAMPLE / "tap-tansu"), str(synthetic)]


def _rows(t) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in t.to_pylist())


P99 = "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) / 1000"


def _p99_by_client(df):
    from pyspark.sql import functions as F

    return sorted(tuple(r) for r in df.where("api = 'Fetch' AND latency_us IS NOT NULL").groupBy("client_id")
                  .agg(F.count("*"), F.expr(P99)).collect())


def test_spark_connect_server(captures, tmp_path, connect_remote):
    import pyarrow.parquet as pq

    report = run_report(captures, tmp_path / "report", progress=False)
    with connect_session(connect_remote) as spark:
        sources.register(spark)
        for split in ("128m", "256k"):
            for table in ("requests", "responses", "records"):
                df = spark.read.format("kafkaproto.capture").option("table", table).option("splitBytes", split) \
                    .load(captures)
                assert _rows(df.toArrow()) == _rows(pq.read_table(Path(report.data.out) / table)), (split, table)
        responses = spark.read.format("kafkaproto.capture").option("table", "responses") \
            .option("columns", "capture,api,client_id,latency_us,server").option("splitBytes", "256k") \
            .load(captures)
        mine = _p99_by_client(responses)
        assert mine == _p99_by_client(spark.read.parquet(str(Path(report.data.out) / "responses")))
        fetch = next(r for r in report.data.latency if r["api"] == "Fetch")
        assert sum(n for _, n, _ in mine) == fetch["count"]
        # pushed: no Filter left above the scan, and the rows of the report's table
        one = responses.where("server = '127.0.0.1:35037'")
        plan = one._explain_string(mode="simple")
        assert "Filter (" not in plan and "BatchScan kafkaproto.capture" in plan, plan
        assert one.count() == sum(1 for r in pq.read_table(Path(report.data.out) / "responses").to_pylist()
                                  if r["server"] == "127.0.0.1:35037") > 0
