"""Kafka's own Java classes (kafka-clients 4.4.0 and 3.9.1, the oracles) and
kafkaproto read each other's record batches, for every codec and magic; for the
same input, v2 uncompressed bytes are identical."""

import random

import pytest

from kafkaproto import records as R
from oracle.conftest_oracle import get_oracle
from oracle.java_oracle import KAFKA_VERSIONS
from support.records_util import rec_tuple

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def java_oracle(request):
    """Both releases: 4.4.0, and 3.9.1 (the last before 4.0, which still wrote magic 0 and 1)."""
    return get_oracle(request.param)


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000
# zstd exists in magic 2 only
MAGIC_CODECS = [(m, c) for m in (0, 1, 2) for c in CODECS if m == 2 or c != "zstd"]


def make_records(seed, n=25, headers=True):
    rnd = random.Random(seed)
    out = []
    for _i in range(n):
        key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.randrange(0, 20))
        value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.randrange(0, 300)) * rnd.randrange(1, 4)
        hs = [(rnd.choice(["a", "trace", "é", ""]), None if rnd.random() < 0.2 else rnd.randbytes(rnd.randrange(8)))
              for _ in range(rnd.randrange(0, 4))] if headers else []
        out.append((key, value, hs, TS + rnd.randrange(-1000, 100000)))
    return out


def java_spec(recs):
    return [{"key": k, "value": v, "headers": h, "timestamp": t, "offset_delta": i}
            for i, (k, v, h, t) in enumerate(recs)]


def java_records(batch):
    def unhex(v):
        return None if v is None else bytes.fromhex(v)

    return [(r["offset"], r["timestamp"], unhex(r["key_hex"]), unhex(r["value_hex"]),
             [(k, unhex(v)) for k, v in r["headers"]]) for r in batch["records"]]


def ours(batch):
    return [rec_tuple(r)[:2] + rec_tuple(r)[4:7] for r in batch.records]


@pytest.mark.parametrize("magic, codec", MAGIC_CODECS)
def test_java_decodes_our_batches(java_oracle, magic, codec):
    recs = make_records(magic * 10 + CODECS.index(codec), headers=magic == 2)
    blob = R.encode(recs, magic=magic, codec=codec, base_offset=500, **(
        {"producer_id": 42, "producer_epoch": 3, "base_sequence": 11, "partition_leader_epoch": 6}
        if magic == 2 else {}))
    got = java_oracle.records_decode_full(blob)
    assert got["trailing"] == 0 and got["size_in_bytes"] == len(blob)
    batches = got["batches"]
    assert all(b["is_valid"] for b in batches)
    assert {b["compression"] for b in batches} == {codec}
    java = [r for b in batches for r in java_records(b)]
    want = [(500 + i, t if magic else -1, k, v, h) for i, (k, v, h, t) in enumerate(recs)]
    assert java == want
    if magic == 2:
        [b] = batches
        assert (b["producer_id"], b["producer_epoch"], b["base_sequence"], b["partition_leader_epoch"]) == (
            42, 3, 11, 6)


@pytest.mark.parametrize("magic, codec", MAGIC_CODECS)
def test_we_decode_javas_batches(java_oracle, magic, codec):
    recs = make_records(100 + magic * 10 + CODECS.index(codec), headers=magic == 2)
    blob = java_oracle.records_encode(java_spec(recs), magic=magic, codec=codec, base_offset=77)
    batches = list(R.decode(blob))
    assert not any(b.truncated for b in batches)
    got = [t for b in batches for t in ours(b)]
    assert got == [(77 + i, t if magic else -1, k, v, h) for i, (k, v, h, t) in enumerate(recs)]
    assert {b.codec for b in batches} == {CODECS.index(codec)}


def test_java_transactional_and_control_batches(java_oracle):
    blob = java_oracle.records_encode(java_spec(make_records(5, 3)), transactional=True, producer_id=9,
                                      producer_epoch=2, base_sequence=0, base_offset=10)
    [b] = R.decode(blob)
    assert (b.is_transactional, b.producer_id, b.producer_epoch) == (True, 9, 2)
    ours_marker = R.encode([R.control_record(R.ControlType.ABORT, 4, TS)], control=True, transactional=True,
                           producer_id=9, producer_epoch=2, base_offset=13)
    [jb] = java_oracle.records_decode(ours_marker)
    assert jb["control"] and jb["transactional"]


def test_java_log_append_time(java_oracle):
    blob = java_oracle.records_encode(java_spec(make_records(6, 3)), timestamp_type="log_append",
                                      log_append_time=TS + 42)
    [b] = R.decode(blob)
    assert b.timestamp_type == 1 and [r.timestamp for r in b.records] == [TS + 42] * 3


@pytest.mark.parametrize("seed", range(6))
def test_v2_uncompressed_bytes_are_identical(java_oracle, seed):
    recs = make_records(200 + seed, n=1 + seed * 7)
    kw = {"base_offset": seed * 1000, "producer_id": seed - 1, "producer_epoch": seed - 1 if seed else -1,
          "base_sequence": seed * 3 - 1 if seed else -1, "transactional": seed % 2 == 1 and seed > 0}
    java = java_oracle.records_encode(java_spec(recs), **kw)
    assert R.encode(recs, **kw) == java
    assert R.encode(list(next(iter(R.decode(java))).records), **kw) == java
