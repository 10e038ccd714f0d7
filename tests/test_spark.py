"""Spark on local[2]: the column functions decode a DataFrame of frames exactly as
kafkaproto.arrow does directly; corrupted rows show up in error, none is lost.

The run's shared session (the ``spark`` fixture); each test is a handful of small jobs.
"""

import random

import pyarrow as pa
import pytest

from kafkaproto import arrow, encode_request, encode_response
from kafkaproto import spark as kps
from kafkaproto.messages import request_class, response_class
from support.message_values import random_message

pytestmark = pytest.mark.spark


def frames_table(rng):
    rows = []
    for key in (3, 18, 0, 1):
        cls = request_class(key)
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if cls.supports(v):
                rows.append(encode_request(random_message(cls, v, rng), v, len(rows), "spark")[4:])
    good = rows[5]
    rows += [good[:7], b"\x00\x03\xff\xff" + good[4:], b"", None]
    return pa.table({"id": pa.array(range(len(rows)), pa.int64()), "frame": pa.array(rows, pa.binary())})


def test_request_headers_and_messages_match_arrow(spark):
    table = frames_table(random.Random(1))
    df = spark.createDataFrame(table).repartition(2)
    got = df.select("id", kps.request_headers("frame").alias("h"), kps.messages("frame", 3).alias("m"),
                    kps.errors("frame").alias("e"), kps.errors("frame", 3).alias("me")).orderBy("id")
    out = got.toArrow()
    frames = table.column("frame").combine_chunks()
    want_h = arrow.request_headers(frames)
    want_m = arrow.messages(frames, 3)
    assert out.column("h").to_pylist() == want_h.to_pylist()
    assert out.column("m").to_pylist() == want_m.to_pylist()
    assert out.column("e").to_pylist() == want_h.field("error").to_pylist()
    assert out.column("me").to_pylist() == want_m.field("error").to_pylist()
    # nothing lost: every row decoded or has an error
    errors = sum(e is not None for e in out.column("me").to_pylist())
    decoded = sum(m["error"] is None for m in out.column("m").to_pylist())
    assert errors + decoded == table.num_rows and errors >= 4


def test_responses_with_a_version_column(spark):
    rng = random.Random(2)
    cls = response_class(3)
    rows, vers = [], []
    for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
        rows.append(encode_response(random_message(cls, v, rng), v, v)[4:])
        vers.append(v)
    rows.append(rows[-1][:-3])
    vers.append(13)
    table = pa.table({"id": pa.array(range(len(rows)), pa.int64()), "frame": pa.array(rows, pa.binary()),
                      "key": pa.array([3] * len(rows), pa.int16()), "ver": pa.array(vers, pa.int16())})
    df = spark.createDataFrame(table)
    out = df.select("id", kps.response_headers("frame", "key", "ver").alias("h"),
                    kps.messages("frame", 3, "response", "ver").alias("m")).orderBy("id").toArrow()
    frames = table.column("frame").combine_chunks()
    assert out.column("h").to_pylist() == arrow.response_headers(frames, 3, table.column("ver")).to_pylist()
    assert out.column("m").to_pylist() == arrow.messages(frames, 3, "response", table.column("ver")).to_pylist()
    assert out.column("m").to_pylist()[-1]["error"]


def test_pandas_udf_fallback(spark):
    table = frames_table(random.Random(3))
    df = spark.createDataFrame(table)
    out = df.select("id", kps.request_headers("frame", kind="pandas").alias("h")).orderBy("id").toArrow()
    assert out.column("h").to_pylist() == arrow.request_headers(table.column("frame").combine_chunks()).to_pylist()


def test_explode_records_matches_arrow(spark):
    from kafkaproto import records as R

    rng = random.Random(4)
    blobs = [R.encode([(b"k%d" % i, b"v" * i, [("h", b"1"), ("h", None)] if i % 2 else None, 1_700_000_000_000 + i)
                       for i in range(rng.randint(1, 5))], codec=rng.choice(["none", "lz4", "zstd", "gzip"]),
                      base_offset=10 * j) for j in range(8)]
    blobs[3] = blobs[3][:30] + b"\xff" * 40  # damaged: one error row
    table = pa.table({"id": pa.array(range(len(blobs)), pa.int64()), "records": pa.array(blobs, pa.binary()),
                      "topic": pa.array(["orders"] * len(blobs)), "partition": pa.array(range(len(blobs)), pa.int32())})
    df = spark.createDataFrame(table).coalesce(1)
    out = kps.explode_records(df, "records", topic="topic", partition="partition", keep=["id"]).orderBy("id", "offset")
    got = out.toArrow()
    want = arrow.records(table.column("records").combine_chunks(), topic=table.column("topic"),
                         partition=table.column("partition"))
    names = [n for n in arrow.RECORDS_SCHEMA.names if n not in ("row",)]
    assert got.select(names).to_pylist() == want.select(names).to_pylist()
    assert got.column("id").to_pylist() == want.column("row").to_pylist()
    assert got.filter(got.column("error").is_valid()).column("id").to_pylist() == [3]
    slim = kps.explode_records(df, "records", columns=["offset", "timestamp"]).toArrow()
    assert slim.column_names == ["offset", "timestamp", "row", "error"] and slim.num_rows == want.num_rows
