"""Record batches: 10,000 records (16-byte key, 100-byte value, one header),
decoded touching every field and encoded, against aiokafka's Cython
decoder/builder in the same run, uncompressed, lz4 and zstd."""

import pytest

from kafkaproto import records as R

N = 10_000
TS = 1_700_000_000_000
CODECS = {"none": 0, "lz4": 3, "zstd": 4}


def _data():
    keys = [b"key-%012d" % i for i in range(N)]
    # JSON-ish values: compressible the way real payloads are, not random bytes
    values = [(b'{"id":%08d,"user":"u-%06d","event":"click","page":"/p/' % (i, i * 7919 % 999983)
               + b"abcdefghijklmnopqrstuvwxyz" * 3)[:100] for i in range(N)]
    header = [("trace-id", b"0123456789abcdef")]
    assert all(len(k) == 16 for k in keys) and all(len(v) == 100 for v in values)
    return keys, values, header


KEYS, VALUES, HEADER = _data()
RECORDS = [(KEYS[i], VALUES[i], HEADER, TS + i) for i in range(N)]


def _aiokafka():
    from aiokafka.record._crecords.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    return DefaultRecordBatch, DefaultRecordBatchBuilder


@pytest.fixture(scope="module", params=list(CODECS))
def codec(request):
    return request.param


@pytest.fixture(scope="module")
def blob(codec):
    data = R.encode(RECORDS, codec=codec)
    [batch] = R.decode(data)
    assert batch.record_count == N
    return data


def _walk(records, touch):
    n = 0
    for r in records:
        if touch:
            r.offset
            r.timestamp
            r.key
            r.value
            for _k, _v in r.headers:
                pass
        n += 1
    return n


def _read_ours(data, touch):
    return sum(_walk(batch.records, touch) for batch in R.decode(data))


def _read_aiokafka(data, touch):
    batch_cls, _ = _aiokafka()
    return _walk(batch_cls(data), touch)


READERS = {"kafkaproto": _read_ours, "aiokafka (Cython)": _read_aiokafka}


@pytest.fixture(scope="module")
def floor_records(blob, floor_mod):
    # the same Record objects built one at a time from values already parsed
    # (no CRC, no decompression, no check): what any decoder to them pays
    records = [r for batch in R.decode(blob) for r in batch.records]
    prog = floor_mod.Program(records)
    assert list(prog) == records
    return prog


@pytest.mark.parametrize("impl", [*READERS, "floor"])
def test_decode_touch(benchmark, codec, blob, impl, request):
    benchmark.group = f"records decode + touch every field, 10k, {codec}"
    benchmark.extra_info["impl"] = impl
    if impl == "floor":
        prog = request.getfixturevalue("floor_records")
        assert benchmark(_walk, prog, True) == N
    else:
        assert benchmark(READERS[impl], blob, True) == N


@pytest.mark.parametrize("impl", [*READERS, "floor"])
def test_decode_build(benchmark, codec, blob, impl, request):
    # every record object built, no field read: what the libraries themselves cost
    benchmark.group = f"records decode + build every record, no field read, 10k, {codec}"
    benchmark.extra_info["impl"] = impl
    if impl == "floor":
        prog = request.getfixturevalue("floor_records")
        assert benchmark(_walk, prog, False) == N
    else:
        assert benchmark(READERS[impl], blob, False) == N


def test_decode_check_only_kafkaproto(benchmark, codec, blob):
    # CRC, decompression and the check of every record; records built when read
    benchmark.group = f"records decode, records not read, 10k, {codec}"
    benchmark.extra_info["impl"] = "kafkaproto"
    batches = benchmark(lambda: list(R.decode(blob)))
    assert batches[0].record_count == N


def _encode_ours(codec):
    return R.encode(RECORDS, codec=codec)


def _encode_aiokafka(codec):
    _, builder_cls = _aiokafka()
    b = builder_cls(2, CODECS[codec], 0, -1, -1, -1, 1 << 30)
    for i in range(N):
        b.append(i, TS + i, KEYS[i], VALUES[i], HEADER)
    return bytes(b.build())


WRITERS = {"kafkaproto": _encode_ours, "aiokafka (Cython)": _encode_aiokafka}


@pytest.mark.parametrize("impl", list(WRITERS))
def test_encode(benchmark, codec, impl):
    benchmark.group = f"records encode, 10k, {codec}"
    benchmark.extra_info["impl"] = impl
    data = benchmark(WRITERS[impl], codec)
    assert [b.record_count for b in R.decode(data)] == [N]
