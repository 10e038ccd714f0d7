"""Hostile sizes (issue 7): a length or count larger than the bytes left is
rejected before anything is allocated, no input makes a decoder allocate more
than a constant factor of its own size, and recursion is bounded by the schema.

Peak memory is measured with tracemalloc (it sees Python objects, PyMem
buffers and NumPy arrays); every crafted input runs through both the compiled
core and the pure twin (``IMPLS`` of tests/support/fuzz_targets.py).
"""

import random
import struct
import time
import tracemalloc
import uuid

import pyarrow as pa
import pytest

from kafkaproto import (
    CorruptRecordError,
    FrameSizeError,
    InvalidValueError,
    KafkaProtocolError,
    RecordLimitError,
    TruncatedError,
    arrow,
    records,
)
from kafkaproto import _kinds as K
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.messages import CLASSES, get
from kafkaproto.messages._runtime import build_plan
from support.fuzz_targets import IMPLS
from support.records_util import fix_crc, many_headers, many_records, raw_v2_batch

#: bytes of Python objects a decoder may allocate per input byte.  The worst
#: case measured is ~55 (StreamsGroupHeartbeatRequest v0 CopartitionGroup: 4
#: bytes on the wire, an object and three fresh lists in memory).
FACTOR = 64
#: what a rejected input may allocate: the exception, its message, its path
SMALL = 64 * 1024
NAMES = sorted(n for n in CLASSES if get(n).NAME == n)
PAIRS = [(n, v) for n in NAMES for v in range(get(n).LOWEST_VERSION, get(n).HIGHEST_VERSION + 1) if get(n).supports(v)]


def measure(fn):
    """(outcome, peak bytes allocated while running fn, seconds)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        try:
            result = ("ok", fn())
        except KafkaProtocolError as exc:
            result = ("err", exc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak, time.perf_counter() - t0


def decode_all(cls, data, version):
    """Decode with every implementation (plans built first: they are not the input's doing)."""
    out = []
    for impl in IMPLS:
        try:
            impl.decode(cls, b"", version)
        except KafkaProtocolError:
            pass
        out.append((impl.name, *measure(lambda: impl.decode(cls, data, version))))
    return out


# ---------------------------------------------------------------------------
# counts and lengths beyond the input


@pytest.mark.parametrize("name,version,count", [
    ("MetadataRequest", 0, b"\x7f\xff\xff\xff"),              # int32 count 2^31-1
    ("MetadataRequest", 12, b"\x80\x80\x80\x80\x08"),         # compact count 2^31-1
    # null transactional id, acks, timeout, then a compact count of 2^32-2
    ("ProduceRequest", 9, b"\x00" + b"\x00\x01" + b"\x00\x00\x00\x10" + b"\xff\xff\xff\xff\x0f"),
    # throttle, error code, session id, then 2^31-1 topics
    ("FetchResponse", 16, b"\x00" * 10 + b"\x80\x80\x80\x80\x08"),
])
def test_100_bytes_claiming_2_31_elements(name, version, count):
    cls = get(name)
    data = (count + b"\x01" * 100)[:100]
    for impl, result, peak, seconds in decode_all(cls, data, version):
        assert result[0] == "err", impl
        exc = result[1]
        assert isinstance(exc, (InvalidValueError, TruncatedError)), (impl, exc)
        assert peak < SMALL, (impl, peak)
        assert seconds < 5


def test_a_length_beyond_the_input_is_rejected_before_allocating():
    cls = get("SaslAuthenticateRequest")  # bytes auth_bytes: int32 length at v0, compact at v2
    for version, prefix in ((0, b"\x7f\xff\xff\xff"), (2, b"\xff\xff\xff\xff\x0f")):
        for impl, result, peak, _ in decode_all(cls, prefix + b"\x00" * 95, version):
            assert result[0] == "err" and isinstance(result[1], TruncatedError), impl
            assert "left" in str(result[1]) and peak < SMALL, (impl, peak)


# The same 100 bytes fed to every message of every version: whatever each
# decoder reads as a count or a length from them is near 2^31 (int32, int16:
# 0x7fff) or 2^28 (varints), far beyond the input.
HOSTILE = [b"\x7f\xff\xff\xff" * 25, b"\xff\xff\xff\xff\x07" * 20, b"\x01" + b"\xff\xff\xff\x7f" * 25]


def test_every_message_and_version_rejects_huge_counts_without_allocating():
    worst = (0, None)
    for name, version in PAIRS:
        cls = get(name)
        for data in HOSTILE:
            for impl, _result, peak, seconds in decode_all(cls, data, version):
                assert peak < SMALL, (name, version, impl, data[:5], peak)
                assert seconds < 5
                worst = max(worst, (peak, f"{name} v{version} {impl}"))
    print(f"\npeak of the hostile 100-byte inputs over every message: {worst[0]} bytes ({worst[1]})")


# ---------------------------------------------------------------------------
# tagged sections


def test_huge_tagged_counts_and_sizes():
    cls = get("ApiVersionsRequest")  # v3 body: two compact strings, then the tagged section
    head = b"\x02a\x02b"
    cases = [
        (head + b"\xff\xff\xff\xff\x0f" + b"\x00" * 95, InvalidValueError, "count 4294967295 larger than"),
        (head + b"\x01\x05\xff\xff\xff\xff\x0f" + b"\x00" * 93, TruncatedError, "need 4294967295 bytes"),
        (head + b"\x01\x05\x80\x80\x80\x80\x10", InvalidValueError, "does not fit in 32 bits"),
    ]
    for data, error, text in cases:
        for impl, result, peak, _ in decode_all(cls, data, 3):
            assert result[0] == "err" and isinstance(result[1], error) and text in str(result[1]), (impl, result)
            assert peak < SMALL, (impl, peak)


def test_a_flood_of_empty_tagged_fields_stays_in_proportion():
    cls = get("ApiVersionsRequest")
    n = 30000  # each entry is 2 bytes on the wire (tag 5, size 0) and a tuple in memory
    count = bytearray()
    u = n
    while u >= 0x80:
        count.append(u & 0x7F | 0x80)
        u >>= 7
    count.append(u)
    data = b"\x02a\x02b" + bytes(count) + b"\x05\x00" * n
    for impl, result, peak, _ in decode_all(cls, data, 3):
        assert result[0] == "ok" and len(result[1][0].unknown_tagged_fields) == n, impl
        assert peak < FACTOR * len(data), (impl, peak / len(data))


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_header_tagged_counts():
    for impl in IMPLS:
        data = b"\x00\x12\x00\x03\x00\x00\x00\x07\xff\xff" + b"\xff\xff\xff\xff\x0f" + b"\x00" * 90
        result, peak, _ = measure(lambda: impl.codec.decode_request_header(data, 2))
        assert result[0] == "err" and "count 4294967295 larger than the 90 bytes left" in str(result[1])
        assert peak < SMALL


# ---------------------------------------------------------------------------
# frames


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_a_2_gib_frame_size():
    prefix = b"\x7f\xff\xff\xff"
    body = b"\x00" * (1 << 20)
    for impl in IMPLS:
        codec = impl.codec
        # the default limit (100 MiB) refuses it as soon as the 4 size bytes are in
        reader = codec.FrameReader()
        result, peak, _ = measure(lambda: reader.feed(prefix + body))
        assert result[0] == "err" and isinstance(result[1], FrameSizeError), impl.name
        assert "size 2147483647 above the limit 104857600" in str(result[1])
        # without a limit, only what was fed is buffered: nothing is sized from the prefix
        reader = codec.FrameReader(-1)
        result, peak, _ = measure(lambda: [reader.feed(prefix)]
                                  + [reader.feed(body[i:i + 65536]) for i in range(0, len(body), 65536)])
        assert result[0] == "ok" and reader.buffered == len(body) + 4
        assert peak < 3 * len(body), (impl.name, peak)
        stream = prefix + body
        for split in (codec.split_frames, codec.frame_offsets):
            result, peak, _ = measure(lambda: split(stream, -1))
            assert result[0] == "ok" and result[1][-1] == 0, impl.name  # nothing consumed
            assert peak < len(body), (impl.name, split.__name__, peak)


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_a_stream_of_empty_frames_stays_in_proportion():
    n = 20_000
    stream = b"\x00\x00\x00\x00" * n  # the smallest frames there are
    for impl in IMPLS:
        result, peak, _ = measure(lambda: impl.codec.frame_offsets(stream))
        assert result[0] == "ok" and len(result[1][0]) == n
        # compiled: an int64 start and an int32 size per 4-byte frame (x2 while growing);
        # the twin collects Python ints first
        assert peak < (8 if impl.name == "compiled" else FACTOR) * len(stream), (impl.name, peak)
        result, peak, _ = measure(lambda: impl.codec.split_frames(stream))
        assert result[0] == "ok" and len(result[1][0]) == n
        assert peak < FACTOR * len(stream), (impl.name, peak)  # a memoryview per frame


# ---------------------------------------------------------------------------
# record batches: decompression bombs and forged sizes


def decode_batches(impl, blob, limit):
    return [list(b.records) for b in impl.records.decode_record_batches(blob, True, limit, True)]


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4", "snappy"])
def test_a_decompression_bomb_stops_at_the_limit(codec):
    # 128 MiB of zeros in one batch: 130 KB of gzip, 4 KB of zstd
    bomb = records.encode([(None, bytes(32 << 20), None, 0)] * 4, codec=codec)
    for impl in IMPLS:
        for limit in (1 << 20, records.DEFAULT_MAX_DECOMPRESSED_SIZE):
            result, peak, seconds = measure(lambda: decode_batches(impl, bomb, limit))
            assert result[0] == "err" and isinstance(result[1], CorruptRecordError), (impl.name, codec)
            assert f"decompressed size above the limit of {limit} bytes" in str(result[1])
            # the limit and what the codec needs beside it, never the 128 MiB
            assert peak < limit + 2 * len(bomb) + (1 << 20), (impl.name, codec, limit, peak)
            assert seconds < 10


def _forged_sizes():
    # Batches of a few dozen bytes whose compressed data claims a huge size:
    # the gzip ISIZE trailer, the zstd frame content size, LZ4 4 MiB blocks.
    gzip = bytearray(records.encode([(None, b"x", None, 0)], codec="gzip"))
    gzip[-4:] = b"\xf0\xff\xff\xff"
    zstd = bytearray(records.encode([(None, b"x" * 300, None, 0)], codec="zstd"))
    at = zstd.index(b"\x28\xb5\x2f\xfd") + 4
    fhd = zstd[at]  # frame header descriptor: make the content size field 8 bytes, claiming 1 TiB
    single = fhd >> 5 & 1
    fcs_at = at + 1 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    width = (single, 2, 4, 8)[fhd >> 6]
    zstd[at] = fhd | 0xC0
    zstd[fcs_at : fcs_at + width] = (1 << 40).to_bytes(8, "little")
    lz4 = bytearray(records.encode([(None, b"x", None, 0)], codec="lz4"))
    at = lz4.index(b"\x04\x22\x4d\x18")
    lz4[at + 5] = 0x70  # 4 MiB blocks
    from kafkaproto.records._compression import _lz4_hc
    lz4[at + 6] = _lz4_hc(bytes(lz4[at + 4 : at + 6]))
    blocks = lz4[at + 7 : -4]  # the real blocks, then 100 one-byte ones, then the end mark
    lz4[at + 7 :] = blocks + b"\x01\x00\x00\x00\x00" * 100 + b"\x00\x00\x00\x00"
    return {"gzip": gzip, "zstd": zstd, "lz4": lz4}


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4"])
def test_a_forged_decompressed_size_is_not_believed(codec):
    blob = bytes(fix_crc(_fix_length(_forged_sizes()[codec])))
    for impl in IMPLS:
        result, peak, _ = measure(lambda: decode_batches(impl, blob, records.DEFAULT_MAX_DECOMPRESSED_SIZE))
        # what the codec can make of these few bytes (zstd: 32768 per byte), not
        # the size they claim (the 64 MiB limit before the fix)
        assert peak < 2 << 20, (impl.name, codec, peak, result)


def _fix_length(blob):
    struct.pack_into(">i", blob, 8, len(blob) - 12)
    return blob


# ---------------------------------------------------------------------------
# record batches: what one batch may expand to in objects (issue 17).  A batch
# under the decompression cap can still hold ~9.6 M 7-byte records or ~33 M
# 2-byte headers; the records and headers caps bound that, and are checked
# before anything is built for them (the record count before decompressing).
#
# Stated bound: iterating a batch one record at a time holds its decompressed
# records (at most max_decompressed_size bytes) plus the record in hand; a
# batch over a cap costs at most its decompressed records and the error.

CODECS = ["gzip", "snappy", "lz4", "zstd"]
#: room for the error, the iterator and the codec's own buffers beside the bound
SLACK = 256 * 1024


def iterate(impl, blob, **caps):
    """(records, headers) seen by a loop that holds one record at a time."""
    n = h = 0
    for b in impl.records.decode_record_batches(blob, True, records.DEFAULT_MAX_DECOMPRESSED_SIZE, True,
                                                **caps):
        for r in b.records:
            n += 1
            h += len(r.headers)
    return n, h


def _lazy_n(impl):
    # enough records that a list of them would pass the bound tenfold (a built
    # Record costs ~150 bytes, its 7 wire bytes are the bound), few enough for
    # the pure twin under tracemalloc to take a second or two
    return 100_000 if impl.name == "compiled" else 10_000


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
@pytest.mark.parametrize("codec", CODECS)
def test_a_records_amplification_batch_is_iterated_one_record_at_a_time(codec):
    for impl in IMPLS:
        n = _lazy_n(impl)
        blob = many_records(n, codec)
        result, peak, seconds = measure(lambda: iterate(impl, blob, max_records_per_batch=n))
        assert result == ("ok", (n, 0)), (impl.name, codec, result)
        assert peak < 7 * n + 2 * len(blob) + SLACK, (impl.name, codec, peak)
        # one more than the cap: refused from the header, nothing decompressed
        result, peak, _ = measure(lambda: iterate(impl, blob, max_records_per_batch=n - 1))
        exc = result[1]
        assert result[0] == "err" and isinstance(exc, RecordLimitError), (impl.name, codec, result)
        assert (exc.limit, exc.value, exc.count, exc.offset) == ("max_records_per_batch", n - 1, n, 57)
        assert str(exc) == f"record batch at byte 57: record count {n} above max_records_per_batch={n - 1}"
        assert peak < SMALL, (impl.name, codec, peak)
        assert seconds < 30


@pytest.mark.parametrize("codec", CODECS)
def test_the_default_records_cap_refuses_a_bomb_before_decompressing(codec):
    # one record over the default: 7 MB of records in a few KB (the probe's
    # batch had 8,987,794 of them in 5.8 KB of zstd)
    n = records.DEFAULT_MAX_RECORDS_PER_BATCH + 1
    blob = many_records(n, codec)
    assert len(blob) < 400_000
    for impl in IMPLS:
        result, peak, seconds = measure(lambda: iterate(impl, blob))
        assert result[0] == "err" and isinstance(result[1], RecordLimitError), (impl.name, codec, result)
        assert result[1].count == n and result[1].value == records.DEFAULT_MAX_RECORDS_PER_BATCH
        assert peak < SMALL and seconds < 5, (impl.name, codec, peak, seconds)


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
@pytest.mark.parametrize("codec", CODECS)
def test_a_headers_bomb_is_refused_before_a_header_is_built(codec):
    # one record with 2 M empty headers: 4 MB decompressed, gigabytes as objects
    bomb = many_headers(2_000_000, codec)
    for impl in IMPLS:
        result, peak, seconds = measure(lambda: iterate(impl, bomb))
        exc = result[1]
        assert result[0] == "err" and isinstance(exc, RecordLimitError), (impl.name, codec, result)
        assert (exc.limit, exc.value, exc.count) == ("max_headers_per_record", 10_000, 2_000_000)
        assert exc.path == ["records[0]", "header count"] and exc.offset == 0  # compressed: the batch's offset
        # (the record's length takes 4 bytes, then 5 bytes of fields before the header count)
        assert "header count 2000000 above max_headers_per_record=10000 (byte 9 of the decompressed records)" \
            in str(exc)
        # the decompressed records, not one header object
        assert peak < 2 * 2_000_000 + 2 * len(bomb) + SLACK, (impl.name, codec, peak)
        assert seconds < 10
    # at the cap a record decodes whole; one more header and the cap says so
    for impl in IMPLS:
        assert iterate(impl, many_headers(50, codec), max_headers_per_record=50) == (1, 50)
        with pytest.raises(RecordLimitError, match="header count 51 above max_headers_per_record=50"):
            iterate(impl, many_headers(51, codec), max_headers_per_record=50)


#: 3,000 records of 10,000 empty headers: each record within max_headers_per_record,
#: 60 MB of decompressed records within the 64 MiB cap, 30 M headers in all
SPREAD_RECORDS, SPREAD_HEADERS = 3_000, 10_000
#: one such record: 3 bytes of length, 5 of fields, 3 of header count, 20,000 of headers
SPREAD_RECORD_SIZE = 20_011
#: what the batch cap refuses it with, in every decoder and both implementations
SPREAD_ERROR = (".records[100].header count at byte 0: 1010000 headers in records 0-100 above "
                "max_headers_per_batch=1000000 (byte 2001108 of the decompressed records)")


@pytest.mark.parametrize("codec", CODECS)
def test_headers_spread_over_a_batch_are_capped_before_they_are_built(codec):
    bomb = many_headers(SPREAD_HEADERS, codec, SPREAD_RECORDS)
    assert len(bomb) < 4_000_000
    for impl in IMPLS:
        result, peak, seconds = measure(lambda: iterate(impl, bomb))
        exc = result[1]
        assert result[0] == "err" and isinstance(exc, RecordLimitError), (impl.name, codec, result)
        # records 0-99 hold exactly the default 1,000,000: record 100 would pass it
        assert (exc.limit, exc.value, exc.count) == ("max_headers_per_batch", 1_000_000, 1_010_000)
        assert exc.path == ["records[100]", "header count"] and exc.offset == 0
        assert str(exc) == SPREAD_ERROR, (impl.name, codec)
        # the decompressed records, not one of the 30 M headers (~2.3 GB as tuples)
        assert peak < SPREAD_RECORD_SIZE * SPREAD_RECORDS + 2 * len(bomb) + SLACK, (impl.name, codec, peak)
        assert seconds < 15
    good = records.encode([(b"k", b"v", [("h", b"1")], 0)], codec=codec)
    table = arrow.records([bomb, good])
    assert table.column("row").to_pylist() == [0, 1]
    assert table.column("error").to_pylist() == [SPREAD_ERROR, None]
    assert table.column("headers").to_pylist() == [None, [{"key": "h", "value": b"1"}]]
    arr = pa.array([bomb, good], pa.large_binary())
    for impl in IMPLS:
        status, _, errors, _ = impl.arrow_records.arrow_records(arr, 1, True, records.DEFAULT_MAX_DECOMPRESSED_SIZE,
                                                                [True] * 7)
        assert list(status) == [1, 0] and errors == {0: SPREAD_ERROR}, (impl.name, codec)
        if impl.name == "compiled":
            # the decompressed records and the 1,000,000 headers under the cap
            # (~25 MB of columns, malloc'd: tracemalloc does not see them), not 30 M
            _, rss = _peak_rss(lambda: impl.arrow_records.arrow_records(
                arr, 1, True, records.DEFAULT_MAX_DECOMPRESSED_SIZE, [True] * 7))
            assert rss < 128 << 20, (codec, rss)


def test_a_batch_at_the_headers_cap_passes_and_none_lifts_it():
    for codec in ("none", "zstd"):
        at_cap = many_headers(50, codec, 4)  # 200 headers
        for impl in IMPLS:
            assert iterate(impl, at_cap, max_headers_per_batch=200) == (4, 200), (impl.name, codec)
            assert iterate(impl, at_cap, max_headers_per_batch=None) == (4, 200)
            with pytest.raises(RecordLimitError, match=r"\.records\[3\]\.header count at byte \d+: 200 headers in "
                                                       r"records 0-3 above max_headers_per_batch=199") as e:
                iterate(impl, at_cap, max_headers_per_batch=199)
            assert (e.value.limit, e.value.value, e.value.count) == ("max_headers_per_batch", 199, 200)
            # 0: records without headers only
            assert iterate(impl, many_headers(0, codec, 3), max_headers_per_batch=0) == (3, 0)
            with pytest.raises(RecordLimitError, match=r"records\[0\].*1 headers in records 0-0 above "
                                                       "max_headers_per_batch=0"):
                iterate(impl, many_headers(1, codec, 3), max_headers_per_batch=0)
    # the default: 100 records of 10,000 headers are exactly 1,000,000
    for impl in IMPLS:
        assert iterate(impl, many_headers(SPREAD_HEADERS, "zstd", 100)) == (100, 1_000_000), impl.name
    # no cap (per batch, nor per call): the 30 M headers of the 3,000 x 10,000
    # batch are walked (and none built)
    bomb = many_headers(SPREAD_HEADERS, "zstd", SPREAD_RECORDS)
    for impl in IMPLS:
        if impl.name != "compiled":
            continue  # (30 M headers walked in Python take a minute)
        [b] = impl.records.decode_record_batches(bomb, True, records.DEFAULT_MAX_DECOMPRESSED_SIZE, True, None, None,
                                                 None, None, None)
        assert len(b.records) == SPREAD_RECORDS and len(b.records[-1].headers) == SPREAD_HEADERS


@pytest.mark.engine_independent  # both implementations (IMPLS), whatever the pass
def test_a_run_of_2_byte_headers_is_checked_as_one_header_at_a_time():
    # the twin checks a run of empty-key, null- or empty-value headers in one
    # match: a bad header after the run, and headers of other shapes between
    # runs, are read and named as the compiled walker reads and names them
    head = b"\x00\x00\x00\x01\x01"  # attributes, deltas, null key and value
    cut = head + b"\x0a" + b"\x00\x01\x00\x00\x00\x01" + b"\x28abc"  # 5 headers: 3 of 2 bytes, then a key of 20
    mixed = head + b"\x0a" + b"\x00\x01\x00\x00\x02a\x01\x00\x02v\x00\x01"
    for codec in ("none", "zstd"):
        bad = raw_v2_batch(bytes([len(cut) * 2]) + cut, 1, codec)
        good = raw_v2_batch(bytes([len(mixed) * 2]) + mixed, 1, codec)
        for impl in IMPLS:
            with pytest.raises(CorruptRecordError, match=r"\.records\[0\]\.headers\[3\]\.key length at byte \d+: "
                                                         "header key length 20 invalid with 3 bytes left"):
                iterate(impl, bad)
            [b] = impl.records.decode_record_batches(good)
            assert b.records[0].headers == [("", None), ("", b""), ("a", None), ("", b"v"), ("", None)], impl.name


def _peak_rss(fn):
    """(fn's result, how far the process's resident set rose above where it was) on Linux."""
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
        raise LookupError(field)

    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current size
    before = status("VmRSS:")
    result = fn()
    return result, status("VmHWM:") - before


@pytest.mark.parametrize("codec", CODECS)
def test_arrow_records_refuses_16_bomb_batches_quickly_in_little_memory(codec):
    headers_bombs = many_headers(2_000_000, codec) * 16
    records_bombs = many_records(records.DEFAULT_MAX_RECORDS_PER_BATCH + 1, codec) * 16
    good = records.encode([(b"k", b"v", [("h", b"1")], 0)] * 3, codec=codec)
    arr = pa.array([headers_bombs, records_bombs, good], pa.large_binary())
    for impl in IMPLS:
        def run():
            return arrow._records_table(impl.arrow_records, arr, 1, None, None, set(arrow.RECORDS_SCHEMA.names),
                                        True, records.DEFAULT_MAX_DECOMPRESSED_SIZE)

        run()  # (the first call builds schemas and caches: not the input's doing)
        result, peak, seconds = measure(run)
        table = result[1]
        assert table.column("row").to_pylist() == [0, 1, 2, 2, 2], (impl.name, codec)
        errors = table.column("error").to_pylist()
        assert "header count 2000000 above max_headers_per_record=10000" in errors[0]
        assert errors[1] == "record batch at byte 57: record count 1000001 above max_records_per_batch=1000000"
        assert errors[2:] == [None] * 3
        # the input (the twin reads each row as bytes), one batch's decompressed
        # records at a time, then the error
        assert peak < 2 * arr.nbytes + 4_000_000 + (1 << 20), (impl.name, codec, peak)
        assert seconds < 10
        if impl.name == "compiled":
            # the compiled columns are malloc'd, which tracemalloc does not see
            _, rss = _peak_rss(run)
            assert rss < 32 << 20, (codec, rss)


def test_the_caps_are_keywords_of_every_record_decoder():
    from kafkaproto.consumer import consume
    from support.legacy_sets import inner_set, wrapper

    blob = records.encode([(b"k", b"v", [("a", b"1"), ("b", None)], 0)] * 5, codec="gzip")
    assert len(consume(blob, isolation_level=0, max_records_per_batch=5, max_headers_per_record=2)) == 5
    with pytest.raises(RecordLimitError, match="record count 5 above max_records_per_batch=4"):
        consume(blob, isolation_level=0, max_records_per_batch=4)
    # 5 records of 2 headers: 10 in the batch
    assert len(consume(blob, isolation_level=0, max_headers_per_batch=10)) == 5
    with pytest.raises(RecordLimitError, match=r"\.records\[4\]\.header count at byte 0: 10 headers in records 0-4 "
                                               "above max_headers_per_batch=9") as e:
        consume(blob, isolation_level=0, max_headers_per_batch=9)
    assert arrow.records([blob], max_headers_per_batch=9).column("error").to_pylist() == [str(e.value)]
    assert arrow.records([blob], max_headers_per_batch=None).num_rows == 5
    with pytest.raises(RecordLimitError, match=r"\.records\[0\]\.header count at byte 0: header count 2 above"):
        list(records.decode(blob, max_headers_per_record=1))
    t = arrow.records([blob], max_headers_per_record=1)
    assert t.column("error").to_pylist() == [str(pytest.raises(RecordLimitError, lambda: list(
        records.decode(blob, max_headers_per_record=1))).value)]
    assert arrow.records([blob], max_records_per_batch=None, max_headers_per_record=None).num_rows == 5
    # legacy: a compressed wrapper's inner messages count as its records
    legacy = wrapper(9, 1, 1, inner_set(1, 8, random.Random(1)))
    assert [len(b) for b in records.decode(legacy, max_records_per_batch=8)] == [8]
    for impl in IMPLS:
        with pytest.raises(RecordLimitError, match="message at byte 0: more than 7 inner messages") as e:
            iterate(impl, legacy, max_records_per_batch=7)
        assert (e.value.limit, e.value.value) == ("max_records_per_batch", 7)
        status, _, errors, _ = impl.arrow_records.arrow_records(pa.array([legacy], pa.large_binary()), 1, True, 1 << 26,
                                                  [True] * 7, False, 7)
        assert list(status) == [1] and errors[0] == str(e.value)
    for bad, exc in ((0, ValueError), (-1, ValueError), ("9", TypeError), (True, TypeError)):
        for impl in IMPLS:
            with pytest.raises(exc, match="max_records_per_batch"):
                impl.records.decode_record_batches(blob, True, 1 << 26, True, bad)
            with pytest.raises(exc, match="max_records_per_batch"):
                impl.arrow_records.arrow_records(pa.array([blob], pa.large_binary()), 1, True, 1 << 26, [True] * 7,
                                                 False, bad)
    with pytest.raises(ValueError, match="max_headers_per_record"):
        records.decode(blob, max_headers_per_record=-1)
    for bad, exc in ((-1, ValueError), (1.5, TypeError), (True, TypeError)):
        for impl in IMPLS:
            with pytest.raises(exc, match="max_headers_per_batch"):
                impl.records.decode_record_batches(blob, True, 1 << 26, True, 5, 2, bad)
            with pytest.raises(exc, match="max_headers_per_batch"):
                impl.arrow_records.arrow_records(pa.array([blob], pa.large_binary()), 1, True, 1 << 26, [True] * 7,
                                                 False, 5, 2, bad)


def test_records_stay_lazy_and_a_sequence_in_both_implementations():
    blob = records.encode([(b"k%d" % i, b"v", [("h", b"%d" % i)], i) for i in range(50)], codec="lz4")
    for impl in IMPLS:
        [b] = impl.records.decode_record_batches(blob, True, 1 << 26, True)
        assert not isinstance(b.records, list) and len(b.records) == 50
        assert [r.key for r in b.records[-3:]] == [b"k47", b"k48", b"k49"]
        assert b.records[-1].headers == [("h", b"49")] and b.records[10].offset == 10
        assert b.records == list(b.records) and list(b.records) == [b.records[i] for i in range(50)]
        with pytest.raises(IndexError):
            b.records[50]


# ---------------------------------------------------------------------------
# captures


def test_a_capture_record_claiming_200_mib(tmp_path):
    # 43 bytes of pcap, 23 of pcapng, whose one record claims 200 MiB
    pcap = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1) + struct.pack("<IIII", 0, 0, 200 << 20,
                                                                                   200 << 20) + b"abc"
    shb = struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
    pcapng = shb + struct.pack("<II", 6, 200 << 20) + b"abc"
    for name, data in (("pcap", pcap), ("pcapng", pcapng)):
        path = tmp_path / name
        path.write_bytes(data)
        acc = Accounting()
        result, peak, _ = measure(lambda: list(read_frames(path, acc=acc)))
        assert result == ("ok", []) and "cut short" in acc.errors[0], (name, acc.errors)
        assert peak < 2 << 20, (name, peak)  # the file's bytes, not the claim


# ---------------------------------------------------------------------------
# nested arrays: no multiplication


def _min_size(plan):
    """The fewest bytes a struct can take on the wire."""
    fixed = {K.BOOL: 1, K.INT8: 1, K.INT16: 2, K.INT32: 4, K.INT64: 8, K.UINT16: 2, K.UINT32: 4, K.FLOAT64: 8,
             K.UUID: 16}
    size = 1 if plan.flexible else 0  # the tagged-field count
    for f in plan.fields:
        if f.kind in fixed:
            size += fixed[f.kind]
        elif f.kind == K.STRUCT:
            size += 1 if f.nullable else _min_size(f.sub)
        else:  # strings, bytes, arrays: their length
            size += 1 if f.compact else (2 if f.kind == K.STRING else 4)
    return size


def _structs(plan, depth=0, seen=()):
    """(plan, depth, is an array element) for every struct reachable from plan."""
    assert plan.cls not in seen, f"{plan.name} contains itself: recursion would depend on the input"
    for f in plan.fields + plan.tagged:
        if f.sub is not None:
            yield f.sub, depth + 1, f.kind == K.ARRAY
            yield from _structs(f.sub, depth + 1, (*seen, plan.cls))


def test_every_array_element_takes_at_least_one_byte_and_nesting_is_bounded():
    # With count <= bytes left, elements of at least one byte mean that the
    # elements of all arrays together, at any depth, never outnumber the input
    # bytes: nested arrays add up, they cannot multiply.
    deepest = 0
    for name, version in PAIRS:
        cls = get(name)
        plan = build_plan(cls, version, cls.is_flexible(version), "", cache={})
        for sub, depth, element in _structs(plan):
            deepest = max(deepest, depth)
            if element:
                assert _min_size(sub) >= 1, f"{name} v{version} {sub.name} can be 0 bytes"
    assert deepest <= 8, deepest  # today: 5


def _default_element(f):
    if f.elem == K.STRUCT:
        return f.struct()
    return {K.BOOL: False, K.INT8: -100, K.INT16: -1000, K.INT32: -10**6, K.INT64: -10**12, K.UINT16: 1000,
            K.UINT32: 10**6, K.FLOAT64: 0.5, K.UUID: uuid.UUID(int=1), K.STRING: "ab", K.BYTES: b"ab",
            K.RECORDS: b"ab"}[f.elem]


@pytest.mark.parametrize("name,version,field", [
    ("StreamsGroupHeartbeatRequest", 0, "topology"),  # the worst ratio: an object and 3 lists per 4 bytes
    ("DescribeClientQuotasResponse", 1, "entries"),
    ("CreatePartitionsRequest", 3, "topics"),
    ("GetTelemetrySubscriptionsResponse", 0, "accepted_compression_types"),  # []int8 of uncached ints
    ("MetadataResponse", 12, "topics"),
    ("FetchResponse", 16, "responses"),
])
def test_many_small_elements_stay_in_proportion(name, version, field):
    cls = get(name)
    msg = cls()
    n = 1000
    if field == "topology":
        sub = cls.Topology(subtopologies=[cls.Subtopology(copartition_groups=[cls.CopartitionGroup()] * 4)] * n)
        msg.topology = sub
    else:
        f = next(f for f in cls._FIELDS if f.attr == field)
        setattr(msg, field, [_default_element(f) for _ in range(n)])
    data = msg.encode(version)
    for impl, result, peak, _ in decode_all(cls, data, version):
        assert result[0] == "ok", impl
        assert peak < FACTOR * len(data) + SMALL, (impl, peak / len(data))


def test_every_top_level_array_of_defaults_stays_in_proportion():
    # For every message at its newest version, each top-level array filled with
    # 200 default elements: what the elements cost per byte they take.
    worst = (0, None)
    for name in NAMES:
        cls = get(name)
        version = cls.HIGHEST_VERSION
        for f in cls._FIELDS:
            if f.kind != K.ARRAY or not f.versions >> version & 1 or f.tagged >> version & 1:
                continue
            msg = cls()
            empty = msg.encode(version)
            setattr(msg, f.attr, [_default_element(f) for _ in range(200)])
            try:
                data = msg.encode(version)
            except KafkaProtocolError:
                continue  # a default element that cannot be written (a non-nullable field left None)
            base = {impl: peak for impl, _, peak, _ in decode_all(cls, empty, version)}
            for impl, result, peak, _ in decode_all(cls, data, version):
                assert result[0] == "ok", (name, f.attr, impl)
                ratio = (peak - base[impl]) / (len(data) - len(empty))
                worst = max(worst, (ratio, f"{name} v{version} .{f.attr} {impl}"))
    assert worst[0] < FACTOR, worst
    print(f"\nworst allocation per input byte, arrays of defaults: {worst[0]:.1f} ({worst[1]})")
