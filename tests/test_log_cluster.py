"""``spark.read.format("kafkaproto.log")`` on real clusters started here on
127.0.0.1 (tests/support/spark_cluster.py; one of each a run): a standalone master
with two workers whose Python lacks kafkaproto (the wheel reaches them
through ``spark.archives``), and a Spark Connect server.  Both read the
same rows as the library."""

from __future__ import annotations

import pytest

from kafkaproto import log
from kafkaproto.log import spark as klog
from support.kafka_log import simple_partition
from support.spark_cluster import connect_session

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.wheel, pytest.mark.engine_independent]

ORDER = ["topic", "partition", "offset"]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster-log")
    simple_partition(root, 900, topic="orders", partition=0, segment_bytes=16 << 10)
    simple_partition(root, 300, topic="orders", partition=1, segment_bytes=16 << 10)
    w = simple_partition(root, 200, topic="broken", partition=0, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    seg.write_bytes(seg.read_bytes()[:-9])
    return root


def _want(logdir):
    t = log.open_log(logdir).read_table(["topic", "partition", "offset", "value", "error"])
    return sorted(t.to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"] if r["offset"] is not None
                                                 else -1))


def _got(spark, logdir):
    klog.register(spark)
    df = spark.read.format("kafkaproto.log").option("splitBytes", "8192").load(str(logdir))
    rows = df.select("topic", "partition", "offset", "value", "error").where("partition >= 0").toArrow().to_pylist()
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"] if r["offset"] is not None else -1))


def test_standalone_cluster(logdir, standalone_spark):
    got = _got(standalone_spark, logdir)
    assert got == _want(logdir)
    assert sum(r["error"] is not None for r in got) == 1


def test_spark_connect_server(logdir, connect_remote):
    with connect_session(connect_remote) as spark:
        got = _got(spark, logdir)
    assert got == _want(logdir)
