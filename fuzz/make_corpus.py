"""Write the seed corpora under fuzz/corpus/<target>/ from the project's own vectors.

    python fuzz/make_corpus.py [TARGET ...]

Seeds are the samples (samples/requests.bin, and the real clients' traffic
of samples/capture/kafka.pcap: its requests, responses and record batches),
the worked example of DESIGN.md, and seeded random messages
(tests/support/message_values.py) for every api key at its lowest, first flexible
and highest version, so the fuzzer starts from valid bytes of every layout.
Deterministic: running it twice writes the same files.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct

import run  # noqa: F401 - the fuzz scripts' one path set-up (tests/ on sys.path, for ``support``)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from kafkaproto import (  # noqa: E402
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
    encode_response_header,
    records,
    split_frames,
)
from kafkaproto.capture import REQUEST, read_frames  # noqa: E402
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation  # noqa: E402
from kafkaproto.capture.walker import packets as P  # noqa: E402
from kafkaproto.frames import DEFAULT_MAX_FRAME_SIZE  # noqa: E402
from kafkaproto.messages import APIS, get, request_class, response_class  # noqa: E402
from support.fuzz_targets import API_KEYS, DATA_CLASSES, FRAME_LIMITS, RECORD_LIMITS  # noqa: E402
from support.message_values import random_message  # noqa: E402

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


def captured():
    """(direction, api key, version, frame) of every frame of the sample capture, once per kind and size class."""
    seen, out = set(), []
    for f in read_frames(os.path.join(ROOT, "samples", "capture", "kafka.pcap")):
        if f.api_key is None:
            continue
        key = (f.direction, f.api_key, f.api_version, len(f.frame) > 512)
        if key not in seen and len(f.frame) <= 2 * MAX_SEED:
            seen.add(key)
            out.append((f.direction, f.api_key, f.api_version, bytes(f.frame)))
    return out


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
    for i, (direction, key, v, frame) in enumerate(captured()):
        if direction == REQUEST:
            out[f"capture-{request_class(key).NAME}-v{v}-{i}"] = frame
    for key in sorted(APIS):
        cls = request_class(key)
        for v in _versions(cls):
            data = _small(lambda rng: encode_request(random_message(cls, v, rng), v, 7, "fuzz")[4:], f"req{key}v{v}")
            if data is not None:
                out[f"{cls.NAME}-v{v}"] = data
    return out


def responses():
    out = {}
    for i, (direction, key, v, frame) in enumerate(captured()):
        if direction != REQUEST:
            out[f"capture-{response_class(key).NAME}-v{v}-{i}"] = bytes([API_KEYS.index(key), v]) + frame
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


def _record_blobs():
    """The records fields of the sample capture's Produce requests and Fetch responses."""
    for direction, key, v, frame in captured():
        if key == 0 and direction == REQUEST:
            _, msg = decode_request(frame)
            parts = [p for t in msg.topic_data for p in t.partition_data]
        elif key == 1 and direction != REQUEST:
            _, msg = decode_response(frame, key, v)
            parts = [p for t in msg.responses for p in t.partitions]
        else:
            continue
        for p in parts:
            if p.records:
                yield f"capture-{'produce' if key == 0 else 'fetch'}-v{v}", bytes(p.records)


def records_seeds():
    crc_default = 1 | RECORD_LIMITS.index(records.DEFAULT_MAX_DECOMPRESSED_SIZE) << 2
    out = {}
    for i, (name, blob) in enumerate(_record_blobs()):
        if len(blob) <= 2 * MAX_SEED:
            out[f"{name}-{i}"] = bytes([crc_default]) + blob
    recs = [(b"k%d" % i, b"value-%d" % i * (i + 1), [("h", b"1"), ("h", None)], 1_700_000_000_000 + i)
            for i in range(4)]
    for codec in records.CODEC_NAMES:
        out[f"v2-{codec}"] = bytes([crc_default]) + records.encode(recs, codec=codec, base_offset=100,
                                                                   producer_id=7, producer_epoch=1, base_sequence=3)
        if codec != "zstd":
            for magic in (0, 1):
                legacy = [(k, v, None, t) for k, v, _, t in recs]
                out[f"v{magic}-{codec}"] = bytes([crc_default]) + records.encode(legacy, magic=magic, codec=codec)
    control = records.encode([records.control_record(records.ControlType.COMMIT, 5)], control=True,
                             transactional=True, producer_id=9, now=1_700_000_000_000)
    out["v2-control-commit"] = bytes([crc_default]) + control
    out["v2-then-cut"] = bytes([crc_default]) + records.encode(recs) + records.encode(recs)[:30]
    out["v2-no-crc-check-copy"] = bytes([2 | 3 << 2]) + records.encode(recs, codec="lz4")
    return out


def capture_seeds():
    stream, frames = sample_frames()
    request, response = frames[0], b"\x00\x00\x00\x01" + b"\x00" * 8  # any bytes after the correlation id
    out = {"raw-requests": stream}
    links = [P.LINKTYPE_ETHERNET, P.LINKTYPE_LINUX_SLL, P.LINKTYPE_LINUX_SLL2, P.LINKTYPE_NULL, P.LINKTYPE_LOOP,
             P.LINKTYPE_RAW]
    for i, link in enumerate(links):
        client = ("10.0.0.1", 50000 + i) if i % 2 else ("fd00::1", 50000 + i)
        conv = TcpConversation(client, ("10.0.0.2" if i % 2 else "fd00::2", 9092), linktype=link)
        packets = conv.handshake() + conv.send(True, struct.pack(">i", len(request)) + request, mss=64)
        packets += conv.send(False, struct.pack(">i", len(response)) + response) + conv.close()
        f = io.BytesIO()
        if i % 3 == 2:
            w = PcapngWriter(f, big_endian=bool(i % 2))
            w.interface(link, tsresol=9)
            for ts, pkt in packets:
                w.write(ts, pkt)
            w.comment_block()
        else:
            w = PcapWriter(f, link, nanos=bool(i % 2))
            for ts, pkt in packets:
                w.write(ts, pkt)
        out[f"conversation-link{link}"] = f.getvalue()
    # the head of the real capture: its file header and first packet records
    with open(os.path.join(ROOT, "samples", "capture", "kafka.pcap"), "rb") as f:
        head = f.read(24)
        body = b""
        while len(body) < 3 * MAX_SEED:
            rh = f.read(16)
            incl = struct.unpack("<IIII", rh)[2]
            body += rh + f.read(incl)
    out["sample-head"] = head + body
    return out


def _column(rows):
    """Rows as the arrow target reads them: 2-byte lengths (0xffff: null)."""
    out = b""
    for r in rows:
        out += b"\xff\xff" if r is None else struct.pack(">H", len(r)) + r
    return out


def arrow_seeds():
    stream, frames = sample_frames()
    cap = captured()
    out = {}
    default = FRAME_LIMITS.index(DEFAULT_MAX_FRAME_SIZE)
    pieces = [stream[i:i + 37] for i in range(0, len(stream), 37)]
    out["split-pieces"] = bytes([0, default]) + _column(pieces[:5] + [None] + pieces[5:])
    out["split-zero-copy-views"] = bytes([0 | 2 << 3, default | 8]) + _column(pieces)
    out["split-limit-16"] = bytes([0 | 1 << 3, FRAME_LIMITS.index(16)]) + _column(pieces)
    requests_ = [f for d, _, _, f in cap if d == REQUEST and len(f) < 600]
    out["request-headers"] = bytes([1, 0]) + _column(requests_[:12] + [None, b"", b"\x00\x03"])
    out["response-headers"] = bytes([2, API_KEYS.index(3) | 12 << 4]) + _column(
        [f for d, k, v, f in cap if d != REQUEST and k == 3 and v == 12][:3] + [None, b"\x00"])
    for key, name in ((3, "metadata"), (18, "api-versions"), (0, "produce"), (1, "fetch"), (19, "create-topics")):
        reqs = [f for d, k, _, f in cap if d == REQUEST and k == key][:4]
        if reqs:
            out[f"messages-request-{name}"] = bytes([3 | 0x40, API_KEYS.index(key)]) + _column(reqs + [None])
        for v in sorted({v for d, k, v, _ in cap if d != REQUEST and k == key})[:2]:
            resps = [f for d, k, vv, f in cap if d != REQUEST and k == key and vv == v][:3]
            sel = 3 | (0x80 if v >= 16 else 0)
            out[f"messages-response-{name}-v{v}"] = bytes([sel, API_KEYS.index(key) | (v % 16) << 4]) + \
                _column(resps + [b"\x00\x00\x00\x01"])
    blobs = [b for _, b in _record_blobs()][:4]
    recs = [(b"k", b"v", [("h", b"1")], 1_700_000_000_000)]
    blobs += [records.encode(recs, codec=c) for c in records.CODEC_NAMES] + [None, b"\x00" * 20]
    out["records"] = bytes([4, 1 | 3 << 1]) + _column(blobs)
    out["records-small-limit"] = bytes([4 | 1 << 3, 2]) + _column(blobs)
    return out

def records_packed_seeds():
    """Records regions (v2) and inner message sets (legacy) for packed_batch: every
    codec, every cap choice, a count that matches and one that does not."""
    recs = [(b"k%d" % i, b"value-%d" % i * (i + 1), [("h", b"1"), ("h", None), ("é", b"")][: i], 1_700_000_000_000 + i)
            for i in range(4)]
    region = records.encode(recs, now=0)[61:]
    inner = records.encode([(k, v, None, t) for k, v, _, t in recs], magic=1)
    out = {}
    for codec in range(5):
        for cap in range(4):
            sel = codec | cap << 4
            out[f"v2-{records.CODEC_NAMES[codec]}-caps{cap}"] = bytes([sel]) + (4).to_bytes(2, "big") + region
        out[f"v2-{records.CODEC_NAMES[codec]}-count-off"] = bytes([codec]) + (5).to_bytes(2, "big") + region
        if 1 <= codec <= 3:
            for cap in (0, 1):
                out[f"v1-{records.CODEC_NAMES[codec]}-caps{cap}"] = (bytes([(codec - 1) | 8 | cap << 4])
                                                                     + (3).to_bytes(2, "big") + inner)
    # per-call caps over copies of the batch (bits 6-7): small ones that the copies pass
    for call in (1, 2, 3):
        out[f"v2-zstd-call{call}"] = bytes([4 | call << 6]) + (4).to_bytes(2, "big") + region
        out[f"v1-gzip-call{call}"] = bytes([8 | call << 6]) + (3).to_bytes(2, "big") + inner
    return out


def proxy_seeds():
    """Both directions of a conversation for ProxyConnection: requests and
    responses (one id reused), a flood of tiny requests, a frame cut short,
    a frame over the memory budget, bytes that do not frame."""
    from kafkaproto.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

    B = MetadataResponse.MetadataResponseBroker
    reqs = (encode_request(ApiVersionsRequest(), 0, 5, "c") + encode_request(MetadataRequest(topics=None), 12, 5, "c")
            + encode_request(MetadataRequest(topics=None), 4, 6, "c"))
    resps = (encode_response(ApiVersionsResponse(), 0, 5)
             + encode_response(MetadataResponse(brokers=[B(node_id=1, host="kafka-1", port=9092)]), 12, 5)
             + encode_response(MetadataResponse(), 4, 6))
    flood = encode_request(ApiVersionsRequest(), 0, 1, "c") * 40
    big = struct.pack(">i", 300) + encode_request(ApiVersionsRequest(), 0, 9, "c")[4:] + bytes(289)

    def seed(sel, up, down):
        return bytes([sel]) + len(up).to_bytes(2, "big") + up + down

    return {
        "conversation": seed(0x34, reqs, resps),
        "conversation-decoded-1-outstanding": seed(0x05, reqs, resps),
        "flood-3-outstanding": seed(0xF2, flood, encode_response(ApiVersionsResponse(), 0, 1) * 40),
        "cut-short": seed(0x70, reqs[:-7], resps[:-3]),
        "over-the-budget": seed(0x28, big + reqs, resps),
        "not-kafka": seed(0x10, b"GET / HTTP/1.1\r\n\r\n", b"HTTP/1.1 200 OK\r\n\r\n"),
    }


def encode_seeds():
    """Messages that carry records, bytes, int64 and array fields, each with a
    few fields set to the hostile values of the encode target."""
    from support.fuzz_targets import HOSTILE_VALUES, encode_pairs

    pairs = encode_pairs()
    out = {}
    for name, version in (("ProduceRequest", 9), ("FetchResponse", 12), ("MetadataResponse", 12),
                          ("SaslAuthenticateRequest", 2), ("ListOffsetsRequest", 7)):
        at = pairs.index((name, version)).to_bytes(2, "big")
        for k in range(0, len(HOSTILE_VALUES), 3):
            picks = bytes(b for i in range(3) for b in (i * 5 + k, (k + i) % len(HOSTILE_VALUES) | (i & 1) << 7))
            out[f"{name}-v{version}-{k}"] = at + bytes([k, 7]) + picks
    return out


CORPORA = {
    "frames": frames_seeds,
    "headers": headers_seeds,
    "request": requests,
    "response": responses,
    "messages": messages,
    "records": records_seeds,
    "records_packed": records_packed_seeds,
    "proxy": proxy_seeds,
    "encode": encode_seeds,
    "capture": capture_seeds,
    "arrow": arrow_seeds,
}


def main(targets=()):
    """Write the corpora of ``targets`` (default: every target)."""
    total = 0
    for target, make in CORPORA.items():
        if targets and target not in targets:
            continue
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
    import sys

    main(sys.argv[1:])
