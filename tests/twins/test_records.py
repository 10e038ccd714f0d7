"""The compiled record code and its pure twin agree: same batches, or the same
error (class, message, offset), on valid, corrupted and garbage input; same
bytes or the same error when encoding."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaproto.records import _batches_py as pure_records
from support.outcomes import outcome
from support.records_util import decode_plain, fix_crc

pytestmark = pytest.mark.compiled_only

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000

keys = st.none() | st.binary(max_size=12)
headers = st.none() | st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=6)), max_size=3)
records_st = st.lists(st.tuples(keys, keys, headers, st.integers(-(1 << 45), 1 << 45)), min_size=1, max_size=6)


def both(compiled, fn):
    return outcome(lambda: fn(compiled)), outcome(lambda: fn(pure_records))


def agree_on(compiled, blob, **kw):
    a, b = both(compiled, lambda mod: decode_plain(mod, blob, **kw))
    assert a == b, (bytes(blob).hex(), a, b)
    return a


@settings(max_examples=120, deadline=None)
@given(records_st, st.sampled_from(CODECS), st.integers(0, 3), st.data())
def test_valid_and_corrupted_batches(compiled, recs, codec, magic_pick, data):
    magic = 2 if magic_pick > 1 or codec == "zstd" else magic_pick
    if magic < 2:
        recs = [(k, v, None, abs(t)) for k, v, _, t in recs]
    blob = pure_records.encode_record_batch(recs, magic, codec, 10, now=TS)
    assert compiled.encode_record_batch(recs, magic, codec, 10, now=TS) == blob
    agree_on(compiled, blob)
    blob = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 3))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    if magic == 2 and data.draw(st.booleans()):
        fix_crc(blob)
    cut = data.draw(st.integers(0, len(blob)))
    for copy in (True, False):
        agree_on(compiled, bytes(blob[:cut]), copy=copy, max_decompressed_size=4096)
        agree_on(compiled, bytes(blob), copy=copy, check_crc=False, max_decompressed_size=4096)


# Garbage biased towards the bytes that matter: sizes, magic 2, varint edges.
garbage = st.lists(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, 0xFE, 0x31, 0x3D]) | st.integers(0, 255),
                   max_size=90).map(bytes)


@settings(max_examples=300, deadline=None)
@given(garbage)
def test_garbage_records_section(compiled, tail):
    # a v2 header that claims 1..3 records, then garbage, CRC fixed
    for count in (1, 3):
        blob = bytearray(struct.pack(">qiibIhiqqqhii", 0, 49 + len(tail), -1, 2, 0, 0, 0, TS, TS, -1, -1, -1, count))
        blob += tail
        agree_on(compiled, bytes(fix_crc(blob)))


@settings(max_examples=200, deadline=None)
@given(garbage)
def test_garbage_blob(compiled, blob):
    agree_on(compiled, blob)
    agree_on(compiled, blob, check_crc=False)


def test_control_batch_and_views(compiled):
    key = struct.pack(">hh", 0, 1)
    blob = pure_records.encode_record_batch([(key, struct.pack(">hi", 0, 5), None, TS)], 2, 0, 0, control=True)
    assert agree_on(compiled, blob, copy=False)[0] == "ok"


encode_values = st.one_of(st.none(), st.binary(max_size=4), st.text(max_size=2), st.integers(-3, 3), st.just(1 << 70))
header_values = st.one_of(st.none(), st.lists(st.one_of(
    st.tuples(st.one_of(st.text(max_size=3), st.binary(max_size=2), st.none(), st.just("\ud800")), encode_values),
    st.tuples(st.text(max_size=2)), st.integers()), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(encode_values, encode_values),
    st.tuples(encode_values, encode_values, header_values, st.one_of(st.none(), st.integers(), encode_values)),
    st.tuples(encode_values)), max_size=4),
    st.sampled_from([0, 1, 2, 5]), st.sampled_from(CODECS + ["x"]),
    st.one_of(st.none(), st.integers(-(1 << 64), 1 << 64)),
    st.one_of(st.just(-1), st.integers(-(1 << 33), 1 << 33), st.text(max_size=1)))
def test_encode_agrees_on_odd_input(compiled, recs, magic, codec, base, epoch):
    def run(mod):
        return mod.encode_record_batch(recs, magic, codec, base, producer_epoch=epoch, now=TS)

    a, b = both(compiled, run)
    if a[0] == "ok" and codec in ("gzip", "zstd", "lz4", "snappy"):
        a, b = (outcome(lambda: decode_plain(pure_records, a[1])), outcome(lambda: decode_plain(pure_records, b[1])))
    assert a == b
