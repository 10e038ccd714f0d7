"""Arrow batch decoders against object decoders and peers, in the same run.

Targets (issue 5): request headers of 1,000,000 frames at ≥ 10 M frames/s;
MetadataResponse v12 (100 × 50 × 3) to an Arrow struct ≥ 20x faster than kio
decoding it to objects.
"""

import random

import pyarrow as pa
import pytest

from kafkaproto import arrow, encode_request, encode_response
from kafkaproto.headers import decode_request_header
from kafkaproto.messages import MetadataResponse, request_class
from kafkaproto.protocol import request_header_version

from bench_messages import _kio, metadata_v12

N_FRAMES = 1_000_000


@pytest.fixture(scope="module")
def header_frames():
    """1 M request frames over a few APIs and header versions (0 payload bytes after the header)."""
    rng = random.Random(0)
    shapes = []
    for key, v in [(0, 9), (1, 12), (3, 12), (3, 4), (18, 3), (8, 8), (7, 0), (19, 7)]:
        cls = request_class(key)
        shapes.append(encode_request(cls(), v, 1, rng.choice(["producer-1", "consumer-app-7", None]))[4:])
    frames = [shapes[i % len(shapes)] for i in range(N_FRAMES)]
    return pa.array(frames, pa.large_binary())


def test_request_headers_arrow(benchmark, header_frames):
    benchmark.group = "request headers, 1 M frames → Arrow struct"
    benchmark.extra_info["impl"] = "kafkaproto"
    out = benchmark(arrow.request_headers, header_frames)
    assert out.field("error").null_count == N_FRAMES
    benchmark.extra_info["M frames/s"] = round(N_FRAMES / benchmark.stats.stats.median / 1e6, 1)


def test_request_headers_objects(benchmark, header_frames):
    """The same frames through the object decoder, one Python call per frame (100 k, scaled)."""
    frames = [f.as_py() for f in header_frames[:100_000]]

    def run():
        out = []
        for f in frames:
            key = int.from_bytes(f[0:2], "big")
            ver = int.from_bytes(f[2:4], "big")
            out.append(decode_request_header(f, request_header_version(key, ver)))
        return out

    benchmark.group = "request headers, 1 M frames → Arrow struct"
    benchmark.extra_info["impl"] = "kafkaproto objects (x10 of 100 k)"
    benchmark.pedantic(lambda: [run() for _ in range(10)], rounds=2, iterations=1)


@pytest.fixture(scope="module")
def metadata_frame():
    return encode_response(metadata_v12(), 12, 7)[4:]


def test_metadata_arrow(benchmark, metadata_frame):
    arr = pa.array([metadata_frame], pa.large_binary())
    benchmark.group = "MetadataResponse v12 (100x50x3) → Arrow struct vs objects"
    benchmark.extra_info["impl"] = "kafkaproto"
    out = benchmark(arrow.messages, arr, 3, "response", 12)
    assert len(out[0]["topics"]) == 100 and out.field("error").null_count == 1


def test_metadata_kio_objects(benchmark, metadata_frame):
    read, _ = _kio("kio.schema.metadata.v12.response", "MetadataResponse")
    body = memoryview(metadata_frame)[5:]  # response header v1: correlation id + empty tag section
    benchmark.group = "MetadataResponse v12 (100x50x3) → Arrow struct vs objects"
    benchmark.extra_info["impl"] = "kio 0.6.5 (objects)"
    msg, _ = benchmark(read, body, 0)
    assert len(msg.topics) == 100


def test_metadata_kafkaproto_objects(benchmark, metadata_frame):
    benchmark.group = "MetadataResponse v12 (100x50x3) → Arrow struct vs objects"
    benchmark.extra_info["impl"] = "kafkaproto objects"
    msg = benchmark(MetadataResponse.decode, metadata_frame, 12, 5)
    assert len(msg.topics) == 100
