"""kafkaproto.log on object storage for real: moto's S3 server (server mode, on
127.0.0.1) holds a copy of a log folder, read through pyarrow's
S3FileSystem: by URI and by filesystem, seeks, read_committed, dump-log, and
the Spark source."""

from __future__ import annotations

import io
import os
import socket

import pyarrow.fs as pafs
import pytest

from kafkaproto import log
from kafkaproto.log import dump as kdump
from support.kafka_log import T0, PartitionWriter, simple_partition

pytestmark = pytest.mark.peers

KEY, SECRET = "kafkaproto-test", "kafkaproto-test-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on loopback with a bucket holding a copied log dir → (uri base, filesystem, local copy)."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1")
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, region="us-east-1", scheme="http",
                               endpoint_override=f"127.0.0.1:{port}", allow_bucket_creation=True)
        fs.create_dir("backups")
        root = tmp_path_factory.mktemp("s3-src")
        simple_partition(root, 900, topic="orders", partition=0, segment_bytes=12 << 10)
        simple_partition(root, 200, topic="orders", partition=1, segment_bytes=12 << 10)
        w = PartitionWriter(root, "tx", 0, segment_bytes=500)
        for i in range(6):
            w.append([(b"k", b"v%d" % i, [], T0 + i)], producer_id=3, producer_epoch=0, transactional=True)
            w.end_transaction(3, commit=i % 3 != 1)
        w.close()
        pafs.copy_files(str(root), "backups/kafka/data", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=fs)
        uri = f"s3://backups/kafka/data?endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
        yield uri, fs, root
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _under(uri: str, sub: str) -> str:
    base, _, query = uri.partition("?")
    return f"{base}/{sub}?{query}"


def test_a_log_dir_on_s3_reads_as_the_local_copy(s3):
    uri, fs, root = s3
    remote = log.open_log(uri)
    local = log.open_log(root)
    assert [(p.topic, p.partition) for p in remote.partitions] == [("orders", 0), ("orders", 1), ("tx", 0)]
    assert isinstance(remote.fs, pafs.S3FileSystem)
    assert remote.read_table().equals(local.read_table())
    by_fs = log.open_log("backups/kafka/data/orders-0", filesystem=fs)
    assert by_fs.read_table(["offset"], offsets=(400, 420)).column("offset").to_pylist() == list(range(400, 420))
    committed = log.open_log(_under(uri, "tx-0")).read_table(["value"], isolation="read_committed")
    assert committed.column("value").to_pylist() == [b"v0", b"v2", b"v3", b"v5"]
    t = local.read_table(["offset"], timestamps=(T0 + 300_000, T0 + 310_000))
    assert remote.read_table(["offset"], timestamps=(T0 + 300_000, T0 + 310_000)).equals(t)


def test_dump_log_of_an_s3_segment(s3):
    uri, fs, root = s3
    name = "00000000000000000000.log"
    out_remote, out_local = io.StringIO(), io.StringIO()
    assert kdump.dump([_under(uri, f"orders-1/{name}")], out_remote, io.StringIO(), print_data_log=True) == 0
    assert kdump.dump([str(root / "orders-1" / name)], out_local, io.StringIO(), print_data_log=True) == 0
    strip = lambda text: text.split("\n", 1)[1]  # noqa: E731 (the "Dumping <path>" line names the place)
    assert strip(out_remote.getvalue()) == strip(out_local.getvalue())


@pytest.mark.spark
def test_the_spark_source_reads_s3(s3):
    from kafkaproto.log import spark as klog
    from support.report_helpers import spark_session

    uri, _fs, root = s3
    spark = spark_session()
    klog.register(spark)
    df = spark.read.format("kafkaproto.log").load(uri)
    got = sorted((r["topic"], r["partition"], r["offset"]) for r in df.select("topic", "partition", "offset").collect())
    want = sorted((r["topic"], r["partition"], r["offset"])
                  for r in log.open_log(root).read_table(["topic", "partition", "offset"]).to_pylist())
    assert got == want
