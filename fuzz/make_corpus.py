"""Write the seed corpora under fuzz/corpus/<target>/ from the project's own vectors.

    python fuzz/make_corpus.py

Seeds are the sample capture (samples/requests.bin), the worked example of
DESIGN.md, and seeded random messages (tests/message_values.py) for every api
key at its lowest, first flexible and highest version, so the fuzzer starts
from valid bytes of every layout.  Deterministic: running it twice writes the
same files.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)

from message_values import random_message  # noqa: E402

from kafkaproto import RequestHeader, ResponseHeader, encode_request_header, encode_response_header  # noqa: E402
from kafkaproto import encode_request, encode_response, split_frames  # noqa: E402
from kafkaproto.frames import DEFAULT_MAX_FRAME_SIZE  # noqa: E402
from kafkaproto.messages import APIS, get, request_class, response_class  # noqa: E402
from targets import API_KEYS, DATA_CLASSES, FRAME_LIMITS  # noqa: E402

CORPUS = os.path.join(HERE, "corpus")
# Bigger seeds make every pure-Python execution slower without adding layouts.
MAX_SEED = 2048


def _versions(cls):
    """Lowest, first flexible and highest supported version."""
    supported = [v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)]
    flexible = [v for v in supported if cls.is_flexible(v)]
    return sorted({supported[0], supported[-1], *flexible[:1]})


def _small(make, name):
    """The first of a few seeded random messages that encodes under MAX_SEED bytes."""
    for attempt in range(20):
        data = make(random.Random(f"{name}/{attempt}"))
        if len(data) <= MAX_SEED:
            return data
    return None


def sample_frames():
    with open(os.path.join(ROOT, "samples", "requests.bin"), "rb") as f:
        stream = f.read()
    frames, _ = split_frames(stream)
    return stream, [bytes(f) for f in frames]


def design_example():
    """The ApiVersions v3 request of DESIGN.md's worked example (without its size prefix)."""
    body = b"\x12apache-kafka-java\x063.9.1\x00"
    return b"\x00\x12\x00\x03\x00\x00\x00\x07\x00\x02c1\x00" + body


def requests():
    out = {"design-example": design_example()}
    _, frames = sample_frames()
    for i, frame in enumerate(frames):
        out[f"sample-{i}"] = frame
    for key in sorted(APIS):
        cls = request_class(key)
        for v in _versions(cls):
            data = _small(lambda rng: encode_request(random_message(cls, v, rng), v, 7, "fuzz")[4:], f"req{key}v{v}")
            if data is not None:
                out[f"{cls.NAME}-v{v}"] = data
    return out


def responses():
    out = {}
    for key in sorted(APIS):
        cls = response_class(key)
        for v in _versions(cls):
            data = _small(lambda rng: encode_response(random_message(cls, v, rng), v, 7)[4:], f"resp{key}v{v}")
            if data is not None:
                out[f"{cls.NAME}-v{v}"] = bytes([API_KEYS.index(key), v]) + data
    return out


def messages():
    out = {}
    for index, name in enumerate(DATA_CLASSES):
        cls = get(name)
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if cls.supports(v):
                for seed in range(2):
                    data = random_message(cls, v, random.Random(f"{name}/{v}/{seed}")).encode(v)
                    out[f"{name}-v{v}-{seed}"] = bytes([index, v]) + data
    return out


def frames_seeds():
    stream, frames = sample_frames()
    limit = FRAME_LIMITS.index(DEFAULT_MAX_FRAME_SIZE)
    small = FRAME_LIMITS.index(16)
    return {
        "sample": bytes([limit]) + stream,
        "sample-chunked": bytes([limit | 0x18]) + stream,
        "sample-partial": bytes([limit | 0x28]) + stream[:-5],
        "sample-limit-16": bytes([small]) + stream,
        "empty-frames": bytes([limit]) + b"\x00\x00\x00\x00" * 4,
        "negative-size": bytes([limit]) + frames_prefix(frames[:1]) + b"\xff\xff\xff\xfe",
        "size-2GiB": bytes([FRAME_LIMITS.index(-1)]) + b"\x7f\xff\xff\xff" + b"\x00" * 8,
    }


def frames_prefix(frames):
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def headers_seeds():
    out = {}
    for hv in (0, 1, 2):
        for i, client in enumerate((None, "", "c1", "rdkafka-é")):
            h = RequestHeader(18, 3, 7, client, [(1, b"x"), (9, b"")] if hv == 2 and i == 2 else None)
            out[f"request-v{hv}-{i}"] = bytes([1 | hv << 1]) + encode_request_header(h, hv)
    for hv in (0, 1):
        h = ResponseHeader(7, [(0, b"ab")] if hv else None)
        out[f"response-v{hv}"] = bytes([hv << 1]) + encode_response_header(h, hv)
    return out


CORPORA = {
    "frames": frames_seeds,
    "headers": headers_seeds,
    "request": requests,
    "response": responses,
    "messages": messages,
}


def main():
    total = 0
    for target, make in CORPORA.items():
        seeds = make()
        path = os.path.join(CORPUS, target)
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        for name, data in seeds.items():
            with open(os.path.join(path, name), "wb") as f:
                f.write(data)
        size = sum(len(d) for d in seeds.values())
        total += size
        print(f"{target}: {len(seeds)} seeds, {size} bytes")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
