"""Record batches through the public API (runs against the compiled core and the twin)."""

import gc
import gzip
import pickle
import struct
import sys
import weakref
import zlib

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaproto import records as R
from kafkaproto.errors import CorruptRecordError, EncodeError, KafkaProtocolError
from kafkaproto.records._compression import _lz4_hc, xxh32
from support.records_util import fix_crc, rec_tuple

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000


def decode_all(blob, **kw):
    return list(R.decode(blob, **kw))


def sample(n=5):
    return [(b"k%d" % i, b"v" * (i * 7), [("h", b"1"), ("h", None), ("z", b"")], TS + i) for i in range(n)]


# -- worked example: one v2 batch, byte by byte ----------------------------------

# Built by Kafka 3.9.1's MemoryRecordsBuilder (the Java oracle) from one record
# key b"k", value b"v", header ("h", b"x"), timestamp 1700000000000, base
# offset 5, lz4: the records section is an LZ4 frame holding one raw block.
JAVA_LZ4 = bytes.fromhex(
    "0000000000000005" "0000004d" "ffffffff" "02" "8d022f8f" "0003" "00000000" "0000018bcfe56800"
    "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "04224d18" "60" "40" "82" "0d000080" "18000000026b02760202680278" "00000000")


def test_decodes_kafkas_own_lz4_batch():
    [batch] = decode_all(JAVA_LZ4)
    assert batch.header() == {
        "offset": 0, "base_offset": 5, "batch_length": 77, "partition_leader_epoch": -1, "magic": 2,
        "crc": 0x8D022F8F, "attributes": 3, "last_offset_delta": 0, "base_timestamp": TS, "max_timestamp": TS,
        "producer_id": -1, "producer_epoch": -1, "base_sequence": -1, "record_count": 1}
    assert batch.compression == "lz4" and batch.codec is R.Codec.LZ4 and repr(batch.codec) == "<Codec.LZ4: 3>"
    assert batch.last_offset == 5 and batch.next_offset == 6 and batch.size == len(JAVA_LZ4)
    assert [rec_tuple(r) for r in batch.records] == [(5, TS, 0, 0, b"k", b"v", [("h", b"x")], None)]


def test_our_lz4_frame_matches_kafkas_framing():
    blob = R.encode([(b"k", b"v", [("h", b"x")], TS)], codec="lz4", base_offset=5)
    assert blob == JAVA_LZ4


def test_xxh32_known_values():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    # cramjam's own LZ4 frames carry a content checksum: xxh32 of everything
    data = bytes(range(256)) * 3
    frame = bytes(cramjam.lz4.compress(data))
    assert struct.unpack("<I", frame[-4:])[0] == xxh32(data)
    assert frame[6] == _lz4_hc(frame[4:6])


# -- round trips --------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_v2_round_trip_every_codec(codec):
    recs = sample(40)
    blob = R.encode(recs, codec=codec, base_offset=1000, producer_id=77, producer_epoch=3, base_sequence=9,
                    partition_leader_epoch=4)
    [b] = decode_all(blob)
    assert (b.magic, b.codec, b.base_offset, b.producer_id, b.producer_epoch, b.base_sequence,
            b.partition_leader_epoch, b.record_count, b.last_offset_delta) == (
        2, CODECS.index(codec), 1000, 77, 3, 9, 4, 40, 39)
    assert b.base_timestamp == TS and b.max_timestamp == TS + 39
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records] == [
        (1000 + i, t, k, v, h) for i, (k, v, h, t) in enumerate(recs)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS[:4])
def test_legacy_round_trip(magic, codec):
    recs = [(k, v, None, t) for k, v, _, t in sample(12)]
    blob = R.encode(recs, magic=magic, codec=codec, base_offset=50)
    batches = decode_all(blob)
    assert len(batches) == (12 if codec == "none" else 1)
    got = [r for b in batches for r in b.records]
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [(50 + i, k, v, []) for i, (k, v, _, _) in
                                                                   enumerate(recs)]
    assert [r.timestamp for r in got] == ([TS + i for i in range(12)] if magic else [-1] * 12)
    assert {r.timestamp_type for r in got} == {0 if magic else -1}
    assert all(b.magic == magic and b.producer_id == -1 for b in batches)
    assert batches[-1].last_offset == 61


keys = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)), max_size=4)
timestamps = st.integers(-(1 << 40), 1 << 41)
records_st = st.lists(st.tuples(keys, keys, headers, timestamps), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records_st, st.sampled_from(CODECS), st.integers(-(1 << 62), 1 << 62), st.booleans(),
       st.integers(-1, 1 << 40), st.integers(-1, 32767), st.integers(-1, 1 << 30), st.booleans(), st.booleans())
def test_v2_round_trip_property(recs, codec, base, transactional, pid, epoch, seq, log_append, copy):
    blob = R.encode(recs, codec=codec, base_offset=base, transactional=transactional, producer_id=pid,
                    producer_epoch=epoch, base_sequence=seq, timestamp_type=int(log_append),
                    max_timestamp=TS if log_append else None)
    [b] = decode_all(blob, copy=copy)
    assert (b.is_transactional, b.producer_id, b.producer_epoch, b.base_sequence, b.timestamp_type) == (
        transactional, pid, epoch, seq, int(log_append))
    want = [(base + i, TS if log_append else t, k, v, [(hk, hv) for hk, hv in h]) for i, (k, v, h, t) in
            enumerate(recs)]
    assert [rec_tuple(r)[:2] + rec_tuple(r)[4:7] for r in b.records] == want
    # a second encode of what was decoded gives the same bytes
    again = R.encode(list(b.records), codec=codec, base_offset=base, transactional=transactional, producer_id=pid,
                     producer_epoch=epoch, base_sequence=seq, timestamp_type=int(log_append),
                     max_timestamp=b.max_timestamp)
    if codec == "none" and not log_append:
        assert again == blob


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(keys, keys, st.just(None), timestamps.filter(lambda t: t >= -1)), min_size=1, max_size=8),
       st.sampled_from(CODECS[:4]), st.sampled_from([0, 1]), st.integers(0, 1 << 40))
def test_legacy_round_trip_property(recs, codec, magic, base):
    blob = R.encode(recs, magic=magic, codec=codec, base_offset=base)
    got = [r for b in decode_all(blob) for r in b.records]
    assert [(r.offset, r.key, r.value) for r in got] == [(base + i, k, v) for i, (k, v, _, _) in enumerate(recs)]
    if magic:
        assert [r.timestamp for r in got] == [t for _, _, _, t in recs]


def test_several_batches_in_one_blob():
    blob = b"".join(R.encode(sample(3), base_offset=10 * i, codec=c) for i, c in enumerate(CODECS))
    blob += R.encode([(b"a", b"b", None, TS)], magic=1, base_offset=99)
    batches = decode_all(blob)
    assert [b.base_offset for b in batches] == [0, 10, 20, 30, 40, 99]
    assert [b.offset for b in batches] == [sum(b.size for b in batches[:i]) for i in range(6)]


# -- headers, keys, values ------------------------------------------------------------

def test_headers_keep_order_duplicates_and_nulls():
    hs = [("dup", b"1"), ("dup", None), ("é", b""), ("dup", b"3")]
    [b] = decode_all(R.encode([(None, None, hs, TS), (b"", b"", [], TS)]))
    assert b.records[0].headers == hs
    assert (b.records[0].key, b.records[0].value) == (None, None)
    assert (b.records[1].key, b.records[1].value, b.records[1].headers) == (b"", b"", [])


def test_copy_false_gives_views_over_the_input():
    blob = R.encode(sample(3))
    [b] = decode_all(blob, copy=False)
    r = b.records[2]
    assert isinstance(r.value, memoryview) and r.value.obj is blob
    assert r.value == b"v" * 14 and r.headers[0][1] == b"1"
    [z] = decode_all(R.encode(sample(3), codec="zstd"), copy=False)
    assert isinstance(z.records[1].key, memoryview) and z.records[1].key == b"k1"


def test_mutable_input_is_not_read_after_decode():
    buf = bytearray(R.encode(sample(3)))
    batches = decode_all(buf)
    buf[:] = bytes(len(buf))  # the caller reuses its buffer
    assert batches[0].records[1].key == b"k1"


def test_records_sequence_api():
    [b] = decode_all(R.encode(sample(6), base_offset=3))
    recs = b.records
    assert len(recs) == 6 and len(b) == 6
    assert recs[0].offset == 3 and recs[-1].offset == 8 and [r.offset for r in recs[1:3]] == [4, 5]
    assert list(recs) == list(b) and recs == list(recs)
    with pytest.raises(IndexError):
        recs[6]


def test_record_objects():
    [b] = decode_all(R.encode(sample(2)))
    r = b.records[1]
    assert type(r) is R.Record  # one class for the compiled core and the twin
    assert r == R.Record(b"k1", b"v" * 7, [("h", b"1"), ("h", None), ("z", b"")], TS + 1, 1)
    assert pickle.loads(pickle.dumps(r)) == r
    assert "k1" in repr(r)
    with pytest.raises(TypeError):
        hash(r)
    made = R.Record(key=b"x", value=b"y")
    assert (made.offset, made.timestamp, made.headers, made.control) == (None, None, [], None)


def test_record_objects_lifecycle():
    # built records are freed by reference counting, mutated, subclassed like any class
    [b] = decode_all(R.encode(sample(3)))
    recs = list(b.records)
    del b
    headers = recs[1].headers
    before = sys.getrefcount(headers)
    recs[1].key = b"changed"
    recs[1].headers.append(("new", b"h"))
    assert R.Record(b"changed", recs[1].value, headers, recs[1].timestamp, recs[1].offset) == recs[1]
    del recs[1]
    gc.collect()
    assert sys.getrefcount(headers) == before - 1
    died = []

    class Mine(R.Record):
        def __del__(self):
            died.append(self.key)

    m = Mine(b"k", b"v")
    m.loop = m
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None and died == [b"k"]


def test_encode_accepts_records_tuples_and_duck_types():
    class Duck:
        offset, timestamp, key, value, headers = 7, TS, b"d", b"u", [("c", b"k")]

    blob = R.encode([R.Record(b"a", b"b", None, TS, 5), (b"t", b"u", None, TS), Duck()])
    [b] = decode_all(blob)
    assert [(r.offset, r.key) for r in b.records] == [(5, b"a"), (6, b"t"), (7, b"d")]
    assert b.records[2].headers == [("c", b"k")]
    # header keys may be bytes, values any bytes-like
    [b] = decode_all(R.encode([(bytearray(b"k"), memoryview(b"v"), [(b"h", bytearray(b"x"))], TS)]))
    assert (b.records[0].key, b.records[0].headers) == (b"k", [("h", b"x")])


def test_timestamps_default_to_now_and_log_append_time():
    [b] = decode_all(R.encode([(b"k", b"v")], now=TS + 5))
    assert b.records[0].timestamp == TS + 5
    [b] = decode_all(R.encode([(b"k", b"v", None, 1), (b"k", b"v", None, 2)], timestamp_type=1, max_timestamp=TS))
    assert b.timestamp_type == 1 and [r.timestamp for r in b.records] == [TS, TS]
    assert [r.timestamp_type for r in b.records] == [1, 1]


def test_flags_and_delete_horizon():
    [b] = decode_all(R.encode(sample(1), delete_horizon=True, transactional=True, producer_id=1))
    assert b.has_delete_horizon and b.delete_horizon_ms == TS and b.is_transactional and not b.is_control
    [b] = decode_all(R.encode(sample(1)))
    assert not b.has_delete_horizon and b.delete_horizon_ms == -1


# -- control records --------------------------------------------------------------------

@pytest.mark.parametrize("kind", [R.ControlType.COMMIT, R.ControlType.ABORT])
def test_transaction_markers(kind):
    blob = R.encode([R.control_record(kind, coordinator_epoch=12, timestamp=TS)], control=True, transactional=True,
                    producer_id=4, producer_epoch=1, base_offset=30)
    [b] = decode_all(blob)
    assert b.is_control and b.is_transactional
    assert b.records[0].control == R.ControlRecord(kind, 0, 12)
    assert b.records[0].key == struct.pack(">hh", 0, int(kind))


def test_other_and_unknown_control_types():
    blob = R.encode([(struct.pack(">hh", 0, 2), b"\x00\x00", None, TS), (struct.pack(">hh", 1, 77), None, None, TS)],
                    control=True)
    [b] = decode_all(blob)
    assert [r.control for r in b.records] == [R.ControlRecord(R.ControlType.LEADER_CHANGE, 0),
                                              R.ControlRecord(77, 1)]


def test_bad_control_records_raise():
    for key, value in [(b"\x00", b""), (struct.pack(">hh", 0, 1), b"\x00")]:
        with pytest.raises(CorruptRecordError, match="control record"):
            decode_all(R.encode([(key, value, None, TS)], control=True))


# -- truncation -------------------------------------------------------------------------

def test_every_cut_of_the_last_batch_is_reported_not_raised():
    first = R.encode(sample(2), base_offset=0)
    last = R.encode(sample(3), base_offset=2, codec="gzip")
    for cut in range(1, len(last)):
        batches = decode_all(first + last[:cut])
        assert len(batches) == 2 and not batches[0].truncated
        t = batches[1]
        assert t.truncated and t.records == () and list(t) == []
        assert (t.offset, t.available) == (len(first), cut)
        assert t.size == (len(last) if cut >= 12 else None)
        assert t.base_offset == (2 if cut >= 8 else None)


def test_truncated_legacy_message():
    blob = R.encode([(b"k", b"v", None, TS)], magic=1)
    [t] = decode_all(blob[:-1])
    assert t.truncated and t.size == len(blob)


def test_empty_blob():
    assert decode_all(b"") == []


# -- corruption ---------------------------------------------------------------------

def corrupt(blob, at, value):
    b = bytearray(blob)
    b[at] = value
    return b


def test_crc_mismatch_names_the_batch():
    blob = R.encode(sample(2))
    bad = corrupt(blob, 66, blob[66] ^ 1)  # a byte of the first key
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch") as e:
        decode_all(bad)
    assert e.value.offset == 17
    # ... and can be turned off
    assert len(decode_all(bad, check_crc=False)[0].records) == 2


def test_legacy_crc_mismatch():
    blob = R.encode([(b"k", b"value", None, TS)], magic=1)
    with pytest.raises(CorruptRecordError, match="CRC32 mismatch") as e:
        decode_all(corrupt(blob, len(blob) - 1, 0))
    assert e.value.offset == 12


@pytest.mark.parametrize("size, what", [(13, "below the minimum of 14"), (30, "below the v2 minimum of 49")])
def test_sizes_below_the_minimum(size, what):
    blob = bytearray(R.encode(sample(1)))
    struct.pack_into(">i", blob, 8, size)
    with pytest.raises(CorruptRecordError, match=what) as e:
        decode_all(blob)
    assert e.value.offset == 8


def test_unknown_magic():
    with pytest.raises(CorruptRecordError, match="unknown magic 3") as e:
        decode_all(corrupt(R.encode(sample(1)), 16, 3))
    assert e.value.offset == 16


def test_unknown_codec():
    blob = fix_crc(corrupt(R.encode(sample(1)), 22, 6))
    with pytest.raises(CorruptRecordError, match="unknown compression codec 6"):
        decode_all(blob)


def test_record_count_larger_than_the_batch():
    blob = bytearray(R.encode(sample(1)))
    struct.pack_into(">i", blob, 57, 500_000)  # (below max_records_per_batch: see test_limits.py for above)
    with pytest.raises(CorruptRecordError, match="record count 500000 larger") as e:
        decode_all(fix_crc(blob))
    assert e.value.offset == 57


def test_record_field_errors_name_record_field_and_offset():
    blob = bytearray(R.encode([(b"k", b"v", None, TS), (b"key", b"value", None, TS)]))
    # second record: length varint at 61 + len(first record)
    first_len = blob[61] // 2 + 1
    at = 61 + first_len
    blob[at + 4] = 0x40  # key length 32: more than the record holds
    with pytest.raises(CorruptRecordError) as e:
        decode_all(fix_crc(blob))
    assert e.value.path == ["records[1]", "key length"] and e.value.offset == at + 4
    assert "key length 32 invalid" in str(e.value)


def test_bytes_after_the_last_record():
    blob = bytearray(R.encode(sample(2)))
    struct.pack_into(">i", blob, 57, 1)
    with pytest.raises(CorruptRecordError, match="bytes after the last of 1 records"):
        decode_all(fix_crc(blob))


def test_compressed_garbage_raises_cleanly():
    blob = bytearray(R.encode(sample(4), codec="zstd"))
    blob[70:80] = b"\xff" * 10
    with pytest.raises(CorruptRecordError, match="zstd records") as e:
        decode_all(fix_crc(blob))
    assert e.value.offset == 61


@pytest.mark.parametrize("codec", CODECS[1:])
def test_decompression_bomb_stops_at_the_limit(codec):
    blob = R.encode([(None, bytes(1 << 20), None, TS)] * 4, codec=codec)
    assert len(blob) < (1 << 20)
    with pytest.raises(CorruptRecordError, match="above the limit of 1000000 bytes"):
        decode_all(blob, max_decompressed_size=1_000_000)
    [b] = decode_all(blob, max_decompressed_size=5 << 20)
    assert len(b.records[3].value) == 1 << 20


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_corruption_raises_a_protocol_error_or_decodes(data):
    blob = bytearray(R.encode(sample(3), codec=data.draw(st.sampled_from(CODECS))))
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        fix_crc(blob)
    try:
        for b in R.decode(bytes(blob), max_decompressed_size=1 << 20):
            list(b.records)
    except KafkaProtocolError as exc:
        _assert_where(exc, blob)


def _assert_where(exc, blob):
    """An error points inside the blob, or at its very end when what it says
    is that the data ran out there (a field that would start at the end)."""
    assert exc.offset is not None and 0 <= exc.offset <= len(blob), exc
    if exc.offset == len(blob):
        assert "past the end" in str(exc) or " left" in str(exc), exc


def test_a_record_counted_past_the_end_is_reported_at_the_end():
    # found by the property above in a fresh clone: the count says 4, the batch holds 3
    blob = bytearray(R.encode(sample(3)))
    struct.pack_into(">i", blob, 57, 4)
    fix_crc(blob)
    with pytest.raises(KafkaProtocolError) as err:
        decode_all(bytes(blob))
    assert str(err.value) == f".records[3].length at byte {len(blob)}: runs past the end of the record"
    assert err.value.offset == len(blob)
    _assert_where(err.value, blob)


# -- legacy specifics ---------------------------------------------------------------------

def message(offset, magic, attrs, ts, key, value):
    body = bytes([magic, attrs]) + (struct.pack(">q", ts) if magic else b"")
    for f in (key, value):
        body += struct.pack(">i", -1) if f is None else struct.pack(">i", len(f)) + f
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_v1_relative_inner_offsets_and_wrapper_offset_zero():
    inner = message(0, 1, 0, TS, b"a", b"1") + message(1, 1, 0, TS + 1, b"b", b"2")
    for wrapper_offset, first in [(41, 40), (0, 0)]:  # 0: written that way by old librdkafka
        blob = message(wrapper_offset, 1, 1, TS + 9, None, gzip.compress(inner))
        [b] = decode_all(blob)
        assert [r.offset for r in b.records] == [first, first + 1]
        assert [r.timestamp for r in b.records] == [TS, TS + 1]
    # log-append time on the wrapper replaces the inner timestamps
    [b] = decode_all(message(41, 1, 1 | 8, TS + 9, None, gzip.compress(inner)))
    assert [r.timestamp for r in b.records] == [TS + 9] * 2 and b.timestamp_type == 1


def test_v1_wrapper_offset_below_the_last_inner_offset():
    inner = message(0, 1, 0, TS, b"a", b"1") + message(5, 1, 0, TS, b"b", b"2")
    with pytest.raises(CorruptRecordError, match="wrapper offset 3 below"):
        decode_all(message(3, 1, 1, TS, None, gzip.compress(inner)))


def test_v0_inner_offsets_are_absolute():
    inner = message(7, 0, 0, -1, b"a", b"1") + message(8, 0, 0, -1, b"b", b"2")
    [b] = decode_all(message(8, 0, 1, -1, None, gzip.compress(inner)))
    assert [r.offset for r in b.records] == [7, 8] and b.base_offset == 7 and b.last_offset == 8


def test_lz4_magic_0_broken_header_checksum():
    blob = R.encode([(b"k", b"v" * 50, None, None)], magic=0, codec="lz4")
    frame = blob[12 + 4 + 2 + 4 + 4:]
    # Kafka 0.8/0.9 hashed the frame magic too; that is what magic 0 carries
    assert frame[6] == _lz4_hc(frame[:6]) != _lz4_hc(frame[4:6])
    assert decode_all(blob)[0].records[0].value == b"v" * 50
    # magic 1 carries (and checks) the standard one
    blob1 = R.encode([(b"k", b"v" * 50, None, TS)], magic=1, codec="lz4")
    frame1 = blob1[12 + 4 + 2 + 8 + 4 + 4:]
    assert frame1[6] == _lz4_hc(frame1[4:6])


def test_snappy_xerial_and_raw():
    inner = message(0, 1, 0, TS, b"a", b"x" * 100)
    raw = bytes(cramjam.snappy.compress_raw(inner))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(raw)) + raw
    for payload in (raw, xerial):
        [b] = decode_all(message(0, 1, 2, TS, None, payload))
        assert b.records[0].value == b"x" * 100
    ours = R.encode([(b"a", b"b" * 70_000, None, TS)], codec="snappy")
    assert ours[61:69] == b"\x82SNAPPY\x00"  # xerial framing, 32 KiB chunks
    assert decode_all(ours)[0].records[0].value == b"b" * 70_000


def test_legacy_errors():
    with pytest.raises(CorruptRecordError, match="zstd is not allowed"):
        decode_all(message(0, 1, 4, TS, None, b"x"))
    with pytest.raises(CorruptRecordError, match="null value"):
        decode_all(message(0, 1, 1, TS, None, None))
    with pytest.raises(CorruptRecordError, match="compressed message inside"):
        decode_all(message(0, 1, 1, TS, None, gzip.compress(message(0, 1, 1, TS, None, b""))))
    with pytest.raises(CorruptRecordError, match="inner magic 0 differs"):
        decode_all(message(0, 1, 1, TS, None, gzip.compress(message(0, 0, 0, -1, None, b""))))
    with pytest.raises(CorruptRecordError, match="no inner messages"):
        decode_all(message(0, 1, 1, TS, None, gzip.compress(b"")))


# -- encode errors -------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"records": []}, "no records"),
    ({"records": [(b"k",)]}, "a record tuple is"),
    ({"records": [("k", b"v")]}, "expected bytes, got str"),
    ({"records": [(b"k", 5)]}, "expected bytes, got int"),
    ({"records": [(b"k", b"v", [("h",)])]}, "a header is a"),
    ({"records": [(b"k", b"v", [(None, b"x")])]}, "header keys cannot be null"),
    ({"records": [(b"k", b"v", None, "x")]}, "expected an int, got str"),
    ({"records": [object()]}, "expected a Record or a tuple"),
    ({"codec": "brotli"}, "unknown codec"),
    ({"magic": 3}, "unknown magic"),
    ({"producer_epoch": 1 << 15}, "out of range"),
    ({"timestamp_type": 2}, "timestamp type"),
    ({"magic": 1, "codec": "zstd"}, "zstd needs magic 2"),
    ({"magic": 1, "records": [(b"k", b"v", [("h", b"")])]}, "headers need magic 2"),
    ({"magic": 0, "transactional": True}, "need magic 2"),
    ({"records": [R.Record(b"a", b"b", None, TS, 0), R.Record(b"a", b"b", None, TS, 1 << 40)]}, "offset delta"),
])
def test_encode_errors(kwargs, match):
    kwargs.setdefault("records", [(b"k", b"v", None, TS)])
    with pytest.raises(EncodeError, match=match):
        R.encode(**kwargs)


# -- offsets past int64 (issue 33, item 6) ---------------------------------------------

I64_MAX = (1 << 63) - 1


@pytest.mark.parametrize("kwargs, where", [
    # the case: magic 1 refused it, magic 2 wrote last offset 2^63 (offsets 2^63-1, -2^63 read back)
    ({"base_offset": I64_MAX, "records": [(b"k", b"v"), (b"k", b"v")]}, r"records\[1\]\.offset"),
    ({"base_offset": I64_MAX - 2, "records": [(b"k", b"v")] * 4}, r"records\[3\]\.offset"),
    # an explicit offset, then one taken from it
    ({"base_offset": I64_MAX - 9, "records": [R.Record(b"a", b"b", None, TS, I64_MAX), (b"k", b"v")]},
     r"records\[1\]\.offset"),
    # a delta past int32 (Kafka: "Maximum offset delta exceeded")
    ({"base_offset": 0, "records": [R.Record(b"a", b"b", None, TS, (1 << 31) - 1), (b"k", b"v")]},
     r"records\[1\]\.offset delta: value 2147483648 out of range"),
])
def test_encode_refuses_an_offset_past_int64(kwargs, where):
    with pytest.raises(EncodeError, match=where) as exc:
        R.encode(**kwargs)
    if "delta" not in where:
        assert "past the int64 maximum 9223372036854775807" in str(exc.value)
    # the largest offsets that fit are written, and read back as written
    last = R.encode([(b"k", b"v")] * 3, base_offset=I64_MAX - 2)
    [batch] = decode_all(last)
    assert batch.last_offset == I64_MAX and [r.offset for r in batch.records] == [I64_MAX - 2, I64_MAX - 1, I64_MAX]
    # sequences wrap (Kafka's DefaultRecordBatch.incrementSequence): not an error
    [batch] = decode_all(R.encode([(b"k", b"v")] * 3, base_sequence=(1 << 31) - 1, producer_id=7, producer_epoch=0))
    assert batch.base_sequence == (1 << 31) - 1


def test_a_batch_or_record_whose_offset_passes_int64_is_corrupt_not_wrapped():
    from kafkaproto.consumer import consume

    good = R.encode([(b"k", b"v"), (b"k", b"v")], base_offset=I64_MAX - 1)
    # the base offset is outside the CRC: one past it makes the last offset 2^63
    bad = struct.pack(">q", I64_MAX) + good[8:]
    for read in (decode_all, consume, lambda b: consume(b, I64_MAX)):
        with pytest.raises(CorruptRecordError) as exc:
            read(bad)  # consume dropped the record at "-2^63" as one below the fetch offset
        assert str(exc.value) == ("record batch at byte 23: last offset delta 1 takes the base offset "
                                  "9223372036854775807 past int64")
    # a last offset delta that fits, a record's own delta that does not
    lying = bytearray(bad)
    struct.pack_into(">i", lying, 23, 0)
    with pytest.raises(CorruptRecordError) as exc:
        decode_all(bytes(fix_crc(lying)))
    assert str(exc.value) == (".records[1].offset delta at byte 73: offset delta 1 takes the base offset "
                              "9223372036854775807 past int64")
    # in Arrow: an error row (no offsets -2^63), and a batches row that says -1 (not known), not a wrapped offset
    import pyarrow as pa

    from kafkaproto import arrow

    table, batches = arrow.records(pa.array([good, bad], pa.binary()), batches=True, partial=True)
    assert table.column("offset").to_pylist() == [I64_MAX - 1, I64_MAX]
    assert [(b["base_offset"], b["last_offset"], b["error"]) for b in batches.to_pylist()] == [
        (I64_MAX - 1, I64_MAX, None),
        (I64_MAX, -1, "record batch at byte 23: last offset delta 1 takes the base offset 9223372036854775807 "
                      "past int64")]
    whole = arrow.records(pa.array([good, bad], pa.binary()))
    assert whole.column("offset").to_pylist() == [I64_MAX - 1, I64_MAX, None]
    assert whole.column("error").to_pylist()[2].startswith("record batch at byte 23: last offset delta 1")
