"""kafkaproto.arrow.records agrees with kafkaproto.records.decode: every batch
format and codec, control batches, partial batches, damaged blobs; projection;
topic/partition pass-through; one error row per bad blob, nothing lost."""

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkaproto import arrow
from kafkaproto import records as R
from support.arrow_expected import as_rows, expected_records
from support.records_util import T0, blobs_for, damaged, some_records


@pytest.mark.parametrize("seed", range(3))
def test_records_agree_with_objects(seed):
    rng = random.Random(seed)
    blobs = blobs_for(rng)
    topics = [f"t{i % 3}" for i in range(len(blobs))]
    parts = [i % 4 for i in range(len(blobs))]
    out = arrow.records(pa.array(blobs, pa.large_binary()), topic=topics, partition=pa.array(parts, pa.int64()))
    assert out.schema == arrow.RECORDS_SCHEMA
    got = as_rows(out)
    want = expected_records(blobs, topic=topics, partition=parts)
    assert got == want
    assert out.column("error").null_count == len(out)  # every blob decodes


@pytest.mark.parametrize("check_crc", [True, False])
def test_damaged_blobs_are_error_rows(check_crc):
    rng = random.Random(f"damaged{check_crc}")
    blobs = damaged(blobs_for(rng), rng)
    out = arrow.records(pa.array(blobs), check_crc=check_crc)
    assert as_rows(out) == [dict(r, topic=None, partition=None) for r in expected_records(blobs, check_crc)]
    # nothing lost: each blob is decoded, or is exactly one error row
    errors = out.filter(out.column("error").is_valid())
    bad = set(errors.column("row").to_pylist())
    assert len(bad) == errors.num_rows
    good = {i for i, b in enumerate(blobs) if i not in bad}
    assert len(good) + len(bad) == len(blobs)
    assert set(out.column("row").to_pylist()) - bad <= good


def test_projection_copies_no_keys_or_values():
    rng = random.Random(4)
    big = R.encode([(b"k" * 1000, b"v" * 10_000, [("h", b"x" * 1000)], T0 + i) for i in range(50)], codec="lz4")
    blobs = pa.array([big] * 4)
    full = arrow.records(blobs)
    slim = arrow.records(blobs, columns=["offset", "timestamp"])
    assert slim.column_names == ["offset", "timestamp", "row", "error"]
    assert slim.column("offset").equals(full.column("offset"))
    assert slim.column("timestamp").equals(full.column("timestamp"))
    assert full.nbytes > 2_000_000 and slim.nbytes < 10_000
    with pytest.raises(ValueError):
        arrow.records(blobs, columns=["nope"])
    del rng


def test_pass_through_chunked_and_empty():
    rng = random.Random(5)
    blobs = [R.encode(some_records(rng, 2)) for _ in range(5)]
    want = arrow.records(pa.array(blobs), topic="orders", partition=7)
    assert set(want.column("topic").to_pylist()) == {"orders"} and set(want.column("partition").to_pylist()) == {7}
    chunked = arrow.records(pa.chunked_array([pa.array(blobs[:2]), pa.array(blobs[2:])]), topic="orders",
                            partition=7)
    assert chunked.equals(want)
    assert arrow.records(pa.array([], pa.binary())).num_rows == 0
    assert arrow.records(pa.array([b""])).num_rows == 0


def test_timestamps_out_of_range_are_null():
    blob = R.encode([(b"k", b"v", None, 2**62), (b"k", b"v", None, -1), (b"k", b"v", None, T0)])
    ts = arrow.records([blob]).column("timestamp").cast(pa.int64()).to_pylist()
    assert ts == [None, -1000, T0 * 1000]


def test_spark_shape_types():
    out = arrow.records([R.encode([(b"k", b"v", [("a", b"b")], T0)])])
    assert out.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert out.schema.field("partition").type == pa.int32()
    assert out.schema.field("timestampType").type == pa.int32()
    assert out.column("headers").to_pylist() == [[{"key": "a", "value": b"b"}]]
    assert np.asarray(out.column("row")).tolist() == [0]
