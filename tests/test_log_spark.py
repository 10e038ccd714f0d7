"""``spark.read.format("kafkaproto.log")`` on local[2]: the same rows as
kafkaproto.log reads, one Spark partition per task planned (segments, byte
ranges), filters on topic / partition / offset / timestamp pushed down (the
partitions planned show it), columns chosen by the schema, read_committed,
damage as rows (or a failed task when there is no ``error`` column)."""

from __future__ import annotations

import datetime as dt

import pytest

from kafkaproto import log
from kafkaproto.log import spark as klog
from support.kafka_log import T0, PartitionWriter, simple_partition
from support.spark_session import conf_kept

pytestmark = pytest.mark.spark

ORDER = ["topic", "partition", "segment", "position", "offset"]


@pytest.fixture(scope="module")
def spark(spark):
    """The shared session with the data source registered (its filter pushdown
    setting put back after the module)."""
    with conf_kept(spark, klog.PUSHDOWN_CONF):
        klog.register(spark)
        yield spark


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-data")
    simple_partition(root, 1500, topic="orders", partition=0, segment_bytes=24 << 10)
    simple_partition(root, 400, topic="orders", partition=1, segment_bytes=24 << 10)
    simple_partition(root, 300, topic="clicks", partition=0, segment_bytes=24 << 10)
    return root


def _read(spark, path, **options):
    r = spark.read.format("kafkaproto.log")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(str(path))


def _rows(df):
    return df.orderBy(*[c for c in ORDER if c in df.columns]).toArrow().to_pylist()


def _lib(path, columns=None, **kw):
    t = log.open_log(path).read_table(columns, **kw)
    return sorted(t.to_pylist(), key=lambda r: tuple(r[c] for c in ORDER if c in r))


def test_same_rows_as_the_library(spark, logdir):
    df = _read(spark, logdir, splitBytes=8192)
    kl = log.open_log(logdir)
    tasks, _ = kl.plan(log.ReadOptions.make(), split_bytes=8192)
    assert df.rdd.getNumPartitions() == len(tasks) > sum(len(p.segments) for p in kl.partitions)
    assert df.schema == klog.spark_schema()
    assert _rows(df) == _lib(logdir)


def test_filters_choose_what_is_read(spark, logdir):
    df = _read(spark, logdir, splitBytes=8192)
    q = df.where("topic = 'orders' AND partition = 0 AND offset >= 700 AND offset < 720")
    assert q.rdd.getNumPartitions() == 1  # one byte range of one segment
    assert [r["offset"] for r in _rows(q.select("topic", "partition", "offset"))] == list(range(700, 720))
    t0 = dt.datetime.fromtimestamp((T0 + 1_200_000) / 1000, dt.timezone.utc)
    q = df.where(df.timestamp >= t0).where("partition = 0 and topic = 'orders'")
    want = [r["offset"] for r in _lib(logdir, ["topic", "partition", "offset", "timestamp", "segment", "position"],
                                        topics=["orders"], partitions=[0], timestamps=(T0 + 1_200_000, None))]
    assert [r["offset"] for r in _rows(q.select("topic", "partition", "offset"))] == want and want
    assert q.rdd.getNumPartitions() < df.where("partition = 0 and topic = 'orders'").rdd.getNumPartitions()
    q = df.where("timestamp <= '2023-11-14 22:13:25' AND topic IN ('clicks')")
    assert [r["offset"] for r in _rows(q.select("topic", "offset"))] == \
        [r["offset"] for r in _lib(logdir, ["topic", "offset"], topics=["clicks"], timestamps=(None, T0 + 5001))]
    # filters Spark keeps (an OR, an IN list of offsets) still give the right rows
    q = df.where("offset IN (3, 5, 800) OR key = 'k1'").where("topic = 'clicks'")
    got = _rows(q.select("topic", "offset", "key"))
    assert {r["offset"] for r in got} >= {3, 5} and all(r["offset"] in (3, 5) or r["key"] == b"k1" for r in got)


def test_spark_filters_become_bounds_through_the_shared_translation(logdir):
    """Spark's filters are read as the capture source reads them
    (kafkaproto.filters.spark_term), then those on offset, timestamp, topic and
    partition become the read's bounds; the rest are left to Spark."""
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        IsNotNull,
        LessThan,
        LessThanOrEqual,
        Not,
        StringStartsWith,
    )

    ds = klog.KafkaLogDataSource({"path": str(logdir)})
    reader = ds.reader(ds.schema())
    t = dt.datetime.fromtimestamp((T0 + 2000) / 1000, dt.timezone.utc)
    kept = [In(("offset",), (3, 9)), Not(EqualTo(("topic",), "clicks")), StringStartsWith(("topic",), "or"),
            EqualTo(("key",), b"k1"), IsNotNull(("key",))]
    pushed = [GreaterThan(("offset",), 2), LessThanOrEqual(("offset",), 50), GreaterThanOrEqual(("timestamp",), t),
              LessThan(("timestamp",), t + dt.timedelta(seconds=5)), In(("topic",), ("orders", "clicks")),
              EqualTo(("topic",), "orders"), EqualTo(("partition",), 1), IsNotNull(("offset",))]
    assert list(reader.pushFilters(kept + pushed)) == kept
    b = reader.opts.bounds
    assert (b.offset_from, b.offset_to) == (3, 10)  # (3, 10): the IN narrowed the range, Spark keeps it
    assert (b.time_from, b.time_to, b.time_to_inclusive) == ((T0 + 2000) * 1000, (T0 + 7000) * 1000, False)
    assert b.topics == {"orders"} and b.partitions == {1}


def test_columns_come_from_the_schema(spark, logdir):
    df = spark.read.format("kafkaproto.log").schema("offset long, value binary, topic string").load(str(logdir))
    assert df.columns == ["offset", "value", "topic"]
    assert df.count() == 2200
    df2 = _read(spark, logdir, columns="partition,offset")
    assert df2.columns == ["partition", "offset"]
    assert sorted(r["offset"] for r in df2.where("partition = 1").collect()) == list(range(400))
    with pytest.raises(Exception, match="no column nope"):
        spark.read.format("kafkaproto.log").schema("nope long").load(str(logdir)).count()


def test_read_committed_and_markers(spark, tmp_path):
    w = PartitionWriter(tmp_path, "tx", 0, segment_bytes=400)
    for i in range(10):
        w.append([(b"k", b"v%d" % i, [], T0 + i)], producer_id=5, producer_epoch=0, transactional=True)
        if i % 2:
            w.end_transaction(5, commit=i % 4 == 1)
    w.close()
    committed = _read(spark, tmp_path, isolation="read_committed").select("value").collect()
    assert sorted(r["value"] for r in committed) == [b"v0", b"v1", b"v4", b"v5", b"v8", b"v9"]
    markers = _read(spark, tmp_path, control="true").where("isControl").count()
    assert markers == 5


def test_damage_is_a_row_or_a_failed_task(spark, tmp_path):
    w = simple_partition(tmp_path, 100, segment_bytes=1 << 20)
    seg = w.segment_file(0)
    seg.write_bytes(seg.read_bytes()[:-11])
    df = _read(spark, tmp_path)
    bad = df.where("error IS NOT NULL").collect()
    assert len(bad) == 1 and "the file ends inside a batch" in bad[0]["error"] and bad[0]["offset"] is None
    assert df.where("offset >= 50").where("error IS NOT NULL").count() == 1  # whatever the filters
    assert df.where("error IS NULL").count() == 95
    narrow = spark.read.format("kafkaproto.log").schema("offset long").load(str(tmp_path))
    with pytest.raises(Exception, match="the file ends inside a batch"):
        narrow.collect()
    assert _read(spark, tmp_path, damage="rows").schema == klog.spark_schema()


def test_without_pushdown(spark, logdir):
    spark.dataSource.register(klog.KafkaLogDataSourceNoPushdown)
    try:
        df = _read(spark, logdir)
        assert df.where("offset >= 10 AND offset < 15 AND topic = 'clicks'").count() == 5
    finally:
        klog.register(spark)


@pytest.mark.parametrize("decoder", ["offsets", "cluster-metadata"])
def test_an_internal_topic_as_its_typed_table(spark, tmp_path, decoder):
    """``.option("decoder", ...)``: the typed table the library reads, row for row (the topic of the
    decoder read from a log dir that holds user topics too)."""
    import random

    from support.internal_logs import coordinator_records, framed_records, write_log

    make = coordinator_records if decoder == "offsets" else framed_records
    topic = "__consumer_offsets" if decoder == "offsets" else "__cluster_metadata"
    write_log(tmp_path, topic, make("group" if decoder == "offsets" else "metadata", random.Random(5)))
    simple_partition(tmp_path, 50, topic="orders", segment_bytes=24 << 10)
    df = _read(spark, tmp_path, decoder=decoder)
    ours = log.open_log(tmp_path).read_table(decoder=decoder)
    assert df.count() == ours.num_rows > 20 and set(df.columns) == set(ours.column_names)
    got = df.orderBy("offset").select("offset", "type", "version", "error").toArrow().to_pylist()
    assert got == ours.select(["offset", "type", "version", "error"]).to_pylist()
    if decoder == "offsets":
        commits = df.where("type = 'OffsetCommit'").select("offset_commit.*").toArrow()
        want = ours.filter(ours.column("type").to_numpy(zero_copy_only=False) == "OffsetCommit").column("offset_commit")
        assert commits.column("offset").to_pylist() == [r["offset"] for r in want.to_pylist()]
    # a log dir's plain read leaves Kafka's own topics out; named, they are read
    assert {r["topic"] for r in _read(spark, tmp_path).select("topic").distinct().collect()} == {"orders"}
    assert _read(spark, tmp_path, topics=topic).count() == ours.num_rows
