"""kafkaproto.arrow.split_frames, request_headers and response_headers agree with
the object-level frames and headers modules, for every API key and version."""

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkaproto import arrow, encode_request, encode_response, request_header_version, response_header_version
from kafkaproto import frames as kframes
from kafkaproto.errors import KafkaProtocolError
from kafkaproto.headers import decode_response_header
from kafkaproto.messages import APIS, request_class, response_class
from support.arrow_expected import expected_request_header
from support.message_values import random_message


def some_frames(rng, count=60):
    out = []
    keys = sorted(k for k, (rq, _) in APIS.items() if rq)
    for _ in range(count):
        cls = request_class(rng.choice(keys))
        v = rng.choice([v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)])
        out.append(encode_request(random_message(cls, v, rng), v, rng.randint(0, 10**6), rng.choice([None, "cl"])))
    return out


# ---------------------------------------------------------------------------
# split_frames


@pytest.mark.parametrize("zero_copy", [True, False])
def test_split_bytes(zero_copy):
    rng = random.Random(1)
    framed = some_frames(rng) + [b"\x00\x00\x00\x00"]  # an empty frame is a frame
    stream = b"".join(framed) + b"\x00\x00\x01\x00partial"
    got = arrow.split_frames(stream, zero_copy=zero_copy)
    want, consumed = kframes.split_frames(stream)
    assert got.frames.type == (pa.binary_view() if zero_copy else pa.large_binary())
    assert got.frames.to_pylist() == [bytes(f) for f in want]
    assert got.tail == stream[consumed:] == b"\x00\x00\x01\x00partial"
    assert got.error is None


def test_split_zero_copy_points_into_the_input():
    stream = b"".join(kframes.frame(bytes([i]) * 100) for i in range(10))
    got = arrow.split_frames(stream, zero_copy=True)
    data = got.frames.buffers()[2]
    assert data.address == pa.py_buffer(stream).address
    assert got.frames.to_pylist() == [bytes([i]) * 100 for i in range(10)]


@pytest.mark.parametrize("seed", range(6))
def test_split_chunks_with_straddling_frames(seed):
    rng = random.Random(seed)
    stream = b"".join(some_frames(rng, 40)) + b"\x00\x00"
    cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 60)))
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
    chunks.insert(rng.randrange(len(chunks)), None)
    chunks.insert(rng.randrange(len(chunks)), b"")
    want, consumed = kframes.split_frames(stream)
    for typ in (pa.binary(), pa.large_binary()):
        for zero_copy in (True, False):
            got = arrow.split_frames(pa.array(chunks, typ), zero_copy=zero_copy)
            assert got.frames.to_pylist() == [bytes(f) for f in want]
            assert got.tail == stream[consumed:]
    # one byte at a time
    got = arrow.split_frames(pa.array([stream[i:i + 1] for i in range(len(stream))]), zero_copy=True)
    assert got.frames.to_pylist() == [bytes(f) for f in want]


def test_split_bad_size_stops_with_an_error():
    good = kframes.frame(b"abc")
    got = arrow.split_frames(good + b"\xff\xff\xff\xff" + good)
    assert got.frames.to_pylist() == [b"abc"]
    assert got.tail == b"\xff\xff\xff\xff" + good
    assert got.error == "frame at byte 7: negative size -1"
    got = arrow.split_frames(pa.array([good + b"\x00\x00", b"\x10\x00" + good]), max_frame_size=1000)
    assert got.frames.to_pylist() == [b"abc"]
    assert got.error == "frame at byte 7: size 4096 above the limit 1000"
    assert got.tail == b"\x00\x00\x10\x00" + good


def test_split_zero_copy_limit():
    with pytest.raises(ValueError):
        arrow.split_frames(b"", max_frame_size=2**31 - 1, zero_copy=True)
    assert arrow.split_frames(b"\x00\x00\x00\x01x", max_frame_size=-1).frames.to_pylist() == [b"x"]


def test_split_feeds_the_decoders():
    rng = random.Random(7)
    framed = some_frames(rng, 30)
    got = arrow.split_frames(b"".join(framed), zero_copy=True)
    views = arrow.request_headers(got.frames)
    copied = arrow.request_headers(arrow.split_frames(b"".join(framed)).frames)
    assert views.equals(copied)
    assert views.field("error").null_count == len(framed)


# ---------------------------------------------------------------------------
# headers


def test_request_headers_every_key_and_version():
    rng = random.Random(11)
    frames = []
    for key, (_rq, _) in sorted(APIS.items()):
        cls = request_class(key)
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if not cls.supports(v):
                continue
            f = encode_request(cls(), v, rng.randint(-2**31, 2**31 - 1),
                               rng.choice([None, "", "client-éü中", "x" * 300]),
                               [(5, b"tag")] if request_header_version(key, v) == 2 else None)[4:]
            frames.append(f)
            b = bytearray(f)
            b[rng.randrange(min(len(b), 14))] = rng.choice([0xFF, 0x80, 0x00, 0x7F])
            frames += [bytes(b), f[:rng.randrange(len(f))]]
    frames += [None, b"", b"\x00\x03\x00\x63\x00\x00\x00\x01", b"\x7f\x00\x00\x00\x00\x00\x00\x01",
               b"\x00\x03\x00\x01\x00\x00\x00\x01\x00\x02\xff\xfe"]  # bad UTF-8 client id
    for typ in (pa.binary(), pa.large_binary(), pa.binary_view()):
        out = arrow.request_headers(pa.array(frames, typ))
        assert out.type == arrow.REQUEST_HEADER_TYPE
        assert out.to_pylist() == [expected_request_header(f) for f in frames]
    assert "invalid UTF-8" in out.to_pylist()[-1]["error"]


def test_response_headers_every_key_and_version():
    rng = random.Random(12)
    frames, keys, vers = [], [], []
    for key, (_, _rs) in sorted(APIS.items()):
        cls = response_class(key)
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if cls.supports(v):
                f = encode_response(cls(), v, rng.randint(-2**31, 2**31 - 1),
                                    [(7, b"t")] if response_header_version(key, v) == 1 else None)[4:]
                for frame in (f, f[:3], f[:5]):
                    frames.append(frame)
                    keys.append(key)
                    vers.append(v)
    frames += [b"\x00\x00\x00\x01\x00", None, b"\x00\x00\x00\x01"]
    keys += [9999, 3, None]
    vers += [0, 1, 1]
    out = arrow.response_headers(pa.array(frames), pa.array(keys, pa.int32()), np.array(vers))
    assert out.type == arrow.RESPONSE_HEADER_TYPE
    for frame, k, v, row in zip(frames, keys, vers, out.to_pylist()):
        if frame is None or k is None or k not in APIS:
            assert row["error"] and row["correlation_id"] is None
            continue
        try:
            h, end = decode_response_header(frame, response_header_version(k, v))
        except KafkaProtocolError as exc:
            assert row == {"api_key": None, "api_version": None, "correlation_id": None, "header_size": None,
                           "error": str(exc)}
            continue
        assert row == {"api_key": k, "api_version": v, "correlation_id": h.correlation_id, "header_size": end,
                       "error": None}
    # ApiVersions responses always use header v0, whatever the version
    f = encode_response(response_class(18)(), 3, 77)[4:]
    assert arrow.response_headers([f], 18, 3).to_pylist()[0]["header_size"] == 4


def test_headers_count_errors():
    frames = [kframes.frame(b"")[4:], None, encode_request(request_class(18)(), 0, 1)[4:]]
    out = arrow.request_headers(pa.array(frames))
    assert len(out) == 3 and out.field("error").null_count == 1
    assert arrow.request_headers(pa.chunked_array([pa.array(frames[:1]), pa.array(frames[1:])])).combine_chunks() \
        .equals(out)
