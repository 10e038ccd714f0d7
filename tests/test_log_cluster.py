"""``spark.read.format("kafkaproto.log")`` on real clusters started here on
127.0.0.1 (as tests/test_report_cluster.py starts them): a standalone master
with two workers whose Python lacks kafkaproto (the wheel reaches them
through ``spark.archives``), and a Spark Connect server.  Both read the
same rows as the library."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

import pytest

from kafkaproto import log
from kafkaproto.log import spark as klog
from support.kafka_log import simple_partition
from support.report_helpers import stop_session
from test_report_cluster import (  # noqa: F401 (classic_afterwards, wheel_archive: fixtures)
    _listening,
    _port,
    _Procs,
    _python_without_kafkaproto,
    _spark_home,
    _wait,
    classic_afterwards,
    wheel_archive,
)

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

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


def test_standalone_cluster(logdir, wheel_archive, tmp_path):  # noqa: F811
    stop_session()  # one SparkContext per process
    procs = _Procs(tmp_path)
    home = Path(_spark_home())
    master_port, ui = _port(), _port()
    try:
        procs.start("master", [home / "bin" / "spark-class", "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", master_port, "--webui-port", ui])
        _wait("the master", lambda: _listening(master_port), procs, "master")
        url = f"spark://127.0.0.1:{master_port}"
        for k in range(2):
            work = tmp_path / f"work-{k}"
            work.mkdir()
            procs.start(f"worker-{k}", [home / "bin" / "spark-class", "org.apache.spark.deploy.worker.Worker", url,
                                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                                        "--work-dir", work])

        def two_workers() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    return sum(w["state"] == "ALIVE" for w in json.load(r)["workers"]) == 2
            except OSError:
                return False

        _wait("two workers", two_workers, procs, "worker-1")
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master(url).appName("kafkaproto-log-cluster-test")
                 .config("spark.archives", f"{wheel_archive}#kafkaproto")
                 .config("spark.executorEnv.PYTHONPATH", "kafkaproto")
                 .config("spark.pyspark.python", str(_python_without_kafkaproto(tmp_path)))
                 .config("spark.executor.memory", "1g").config("spark.executor.cores", "1")
                 .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.memory", "1g").config("spark.ui.enabled", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        try:
            # the driver plans the read in a Python worker of spark.pyspark.python too: there the wheel
            # is where the driver unpacked spark.archives (the functions registered next carry this)
            import pyarrow
            from pyspark import SparkFiles

            site = os.path.dirname(os.path.dirname(pyarrow.__file__))
            env = spark.sparkContext.environment
            env["PYTHONPATH"] = os.pathsep.join(["kafkaproto", os.path.join(SparkFiles.getRootDirectory(),
                                                                            "kafkaproto"), site])
            got = _got(spark, logdir)
        finally:
            spark.stop()
    finally:
        procs.stop()
    assert got == _want(logdir)
    assert sum(r["error"] is not None for r in got) == 1


def test_spark_connect_server(logdir, tmp_path, classic_afterwards):  # noqa: F811
    stop_session()
    procs = _Procs(tmp_path)
    home = Path(_spark_home())
    port = _port()
    try:
        procs.start("connect", [home / "bin" / "spark-submit", "--master", "local[2]",
                                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                                "--conf", f"spark.connect.grpc.binding.port={port}",
                                "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                                "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
                                "--conf", "spark.ui.enabled=false", "--conf", f"spark.pyspark.python={sys.executable}",
                                "--conf", "spark.driver.memory=1g", "spark-internal"])
        _wait("the Spark Connect server", lambda: _listening(port), procs, "connect")
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").config("spark.sql.session.timeZone",
                                                                              "UTC").getOrCreate()
        try:
            assert type(spark).__module__.startswith("pyspark.sql.connect")
            got = _got(spark, logdir)
        finally:
            spark.stop()
    finally:
        procs.stop()
    assert got == _want(logdir)
