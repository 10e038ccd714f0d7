"""kafkaproto.arrow.records agrees with kafkaproto.records.decode: every batch
format and codec, control batches, partial batches, damaged blobs; projection;
topic/partition pass-through; one error row per bad blob, nothing lost."""

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkaproto import arrow
from kafkaproto import records as R
from kafkaproto.errors import KafkaProtocolError
from support.arrow_expected import as_rows, expected_records
from support.records_util import CODECS, T0, blobs_for, damaged, some_records


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


def _header_row(b, kept):
    """What the batches table says of a whole batch, from the object decoder."""
    ctl = b.records[0].control if b.is_control and len(b.records) else None
    return {"position": b.offset, "magic": b.magic, "codec": b.attributes & 7, "bytes": b.size, "records": kept,
            "truncated": False, "base_offset": b.base_offset, "last_offset": b.last_offset, "count": b.record_count,
            "leader_epoch": b.partition_leader_epoch, "crc": b.crc, "attributes": b.attributes,
            "base_timestamp": b.base_timestamp, "max_timestamp": b.max_timestamp, "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
            "control_type": -1 if ctl is None else int(ctl.type),
            "coordinator_epoch": -1 if ctl is None or ctl.coordinator_epoch is None else ctl.coordinator_epoch,
            "error": None}


@pytest.mark.parametrize("control", [False, True])
def test_batch_header_fields_agree_with_objects(control):
    rng = random.Random(f"headers{control}")
    blobs = blobs_for(rng)
    recs, walked = arrow.records(pa.array(blobs, pa.large_binary()), batches=True, control=control)
    want = []
    for row, blob in enumerate(blobs):
        for b in R.decode(blob):
            if b.truncated:
                continue
            kept = sum(control or r.control is None for r in b.records)
            want.append(dict(_header_row(b, kept), row=row))
    got = [r for r in walked.to_pylist() if not r["truncated"]]
    assert got == want
    assert recs.num_rows == sum(w["records"] for w in want)
    assert any(w["control_type"] == 1 for w in want) and any(w["magic"] < 2 for w in want)
    # control records as rows: their key and value as stored
    markers = [r for b in (x for blob in blobs for x in R.decode(blob) if not x.truncated) if b.is_control
               for r in b.records]
    offsets = set(recs.column("offset").to_pylist())
    assert all((m.offset in offsets) == control for m in markers) and markers


@pytest.mark.parametrize("check_crc", [True, False])
def test_partial_walk_keeps_the_batches_before_a_bad_one(check_crc):
    rng = random.Random(f"partial{check_crc}")
    good = [R.encode(some_records(rng, 3), base_offset=10 * k, codec=c) for k, c in enumerate(CODECS)]
    bad = bytearray(R.encode(some_records(rng, 2), base_offset=100))
    bad[-2] ^= 0xFF  # a record's bytes: a CRC mismatch, or (unchecked) whatever the record walk finds
    blob = b"".join(good[:3]) + bytes(bad) + b"".join(good[3:])
    recs, walked = arrow.records([blob], batches=True, partial=True, check_crc=check_crc)
    before = [r for g in good[:3] for b in R.decode(g) for r in b.records]
    stopped = walked.filter(walked.column("error").is_valid()).to_pylist()
    if check_crc or stopped:
        assert recs.column("offset").to_pylist() == [r.offset for r in before]
        assert recs.column("error").null_count == recs.num_rows  # no error row: the batch has the error
        (fail,) = stopped
        assert fail["position"] == sum(map(len, good[:3])) and fail["bytes"] == len(bad)
        assert fail["base_offset"] == 100 and fail["magic"] == 2 and fail["records"] == 0
        with pytest.raises(KafkaProtocolError) as exc:
            list(R.decode(bytes(bad)))
        assert fail["error"].split(": ", 1)[1] == str(exc.value).split(": ", 1)[1]
    # the same blob read whole: one error row, none of its records
    whole = arrow.records([blob], check_crc=check_crc)
    assert (whole.num_rows == 1 and whole.column("error")[0].is_valid) == bool(stopped)
    assert check_crc <= bool(stopped)


def test_partial_walk_of_garbage_and_cut_batches():
    rng = random.Random(5)
    one = R.encode(some_records(rng, 2), base_offset=7)
    recs, walked = arrow.records([one + b"\x00" * 40, one + one[:30], one + b"\xff" * 5], batches=True, partial=True)
    rows = walked.to_pylist()
    assert recs.column("row").to_pylist() == [0, 0, 1, 1, 2, 2]
    zero = rows[1]
    assert zero["position"] == len(one) and zero["bytes"] == -1 and zero["base_offset"] == 0
    assert "size 0 below the minimum of 14" in zero["error"]
    cut = rows[3]
    assert cut["truncated"] and cut["bytes"] == 30 and cut["base_offset"] == 7 and cut["error"] is None
    tail = rows[5]
    assert tail["truncated"] and tail["bytes"] == 5 and tail["base_offset"] == -1


@pytest.mark.parametrize("seed", range(4))
def test_one_call_table_agrees_with_the_twin(seed):
    """records_table (the compiled module's whole call: caps, walk, C data interface)
    gives the twin's tables: error rows, partial walks, chunks, topic and partition
    columns with nulls, every column set, every input layout."""
    from kafkaproto._impl import COMPILED
    from kafkaproto.arrow import _records_py as twin

    rng = random.Random(seed)
    blobs = blobs_for(rng)
    blobs = rng.sample(blobs, 10) + damaged(rng.sample(blobs, 6), rng)
    blobs[5] = None
    topics = [None if i % 5 == 0 else f"t-{i % 3}" for i in range(len(blobs))]
    parts = [None if i % 4 == 1 else i for i in range(len(blobs))]
    for typ in (pa.binary(), pa.large_binary(), pa.binary_view()):
        col = pa.chunked_array([pa.array(blobs[:7], typ), pa.array(blobs[7:], typ)])
        for kw in ({}, {"columns": ["offset", "timestamp", "key", "value"]}, {"columns": ["headers", "topic"]},
                   {"batches": True}, {"batches": True, "partial": True, "control": True},
                   {"max_records_per_call": 9, "max_headers_per_call": 7}):
            for args in ({}, {"topic": pa.array(topics), "partition": pa.array(parts, pa.int32())},
                         {"topic": "t", "partition": 2}):
                for blobs_in in (col, col.combine_chunks()):
                    got = arrow.records(blobs_in, **kw, **args)
                    want = twin.records_table(blobs_in, **kw, **args)
                    if kw.get("batches"):
                        assert got[0].equals(want[0]) and got[1].equals(want[1]), (typ, kw, args)
                    else:
                        assert got.equals(want), (typ, kw, args)
    assert COMPILED or arrow._RECORDS is twin


def test_one_call_table_checks_its_arguments_as_the_twin():
    from kafkaproto.arrow import _records_py as twin

    arr = pa.array([R.encode(some_records(random.Random(1), 3))], pa.large_binary())
    for kw in ({"columns": ["nope", "key", "also"]}, {"max_records_per_batch": 0}, {"max_headers_per_call": -1},
               {"max_records_per_batch": "x"}, {"partial": True}, {"topic": ["a", "b"]}):
        with pytest.raises((ValueError, TypeError)) as a:
            arrow.records(arr, **kw)
        with pytest.raises((ValueError, TypeError)) as b:
            twin.records_table(arr, **kw)
        assert (type(a.value), str(a.value)) == (type(b.value), str(b.value))
    with pytest.raises(TypeError):
        arrow.records(b"not a column")
    big = arrow.records(arr, max_records_per_batch=1 << 40, max_headers_per_call=None)
    assert big.equals(twin.records_table(arr, max_records_per_batch=1 << 40, max_headers_per_call=None))
