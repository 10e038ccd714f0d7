"""Real-client traffic through the Arrow decoders: confluent-kafka (librdkafka)
and kafka-python produce (lz4, gzip) and consume through a recording proxy in
front of a fresh tansu broker.  The captured streams are split as captured
(chunks of a few hundred bytes; frames straddle them), and every frame must
decode as the object decoders decode it: headers, requests, and responses
paired with their request by correlation id."""

from __future__ import annotations

import os
import struct

import pyarrow as pa
import pytest

from kafkaproto import arrow
from kafkaproto import frames as kframes
from kafkaproto import records as R
from kafkaproto.messages import request_class, response_class
from peers import clients
from peers.brokers import PeerUnavailable, Tansu
from support.arrow_expected import expected_request, expected_request_header, expected_response
from support.live_helpers import decode_recorded, settled

pytestmark = [
    pytest.mark.peers,
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

TIMEOUT = 10.0


def _records(n=6):
    return [{"key": None if i == 1 else b"k%d" % i, "value": None if i == 4 else b"value-%d" % i * (i + 1),
             "headers": [("h", b"1"), ("h", b"2")] if i % 2 else [], "timestamp_ms": 1_700_000_000_000 + i}
            for i in range(n)]


@pytest.fixture(scope="module")
def recorded():
    """[(client→server bytes, server→client bytes, decoded exchanges)] of every connection."""
    try:
        with Tansu.behind_proxy() as broker:
            for client, codec in (("confluent", "lz4"), ("kafka_python", "gzip")):
                topic = clients.unique_topic(f"arrow-{client}")
                clients.create_topic(broker.bootstrap, topic, timeout=TIMEOUT)
                sent = clients.produce(client, broker.bootstrap, topic, _records(), codec, timeout=TIMEOUT)
                got = clients.consume_confluent(broker.bootstrap, topic, len(sent), timeout=TIMEOUT)
                assert len(got) == len(sent)
            conns = [c for c in settled(broker.proxy) if c.client_to_server]
            return [(c.client_to_server, c.server_to_client, decode_recorded(c)[0]) for c in conns]
    except PeerUnavailable as exc:
        if os.environ.get("KAFKAPROTO_REQUIRE_PEERS", "") not in ("", "0"):
            pytest.fail(f"required Kafka peer unavailable: {exc}", pytrace=False)
        pytest.skip(f"Kafka peer unavailable: {exc}")


def chunks(stream, size=300):
    return pa.array([stream[i:i + size] for i in range(0, len(stream), size)], pa.binary())


def test_real_client_streams_split_and_decode(recorded):
    seen_keys = set()
    for c2s, s2c, exchanges in recorded:
        for stream in (c2s, s2c):
            got = arrow.split_frames(chunks(stream))
            want, used = kframes.split_frames(stream)
            assert got.frames.to_pylist() == [bytes(f) for f in want]
            assert got.tail == stream[used:] and got.error is None
        requests = arrow.split_frames(chunks(c2s)).frames
        headers = arrow.request_headers(requests).to_pylist()
        assert headers == [expected_request_header(f) for f in requests.to_pylist()]
        # requests, one column per api key
        by_key = {}
        for f in requests.to_pylist():
            by_key.setdefault(struct.unpack_from(">h", f)[0], []).append(f)
        for key, frames in by_key.items():
            seen_keys.add(key)
            cls = request_class(key)
            out = arrow.messages(pa.array(frames), key).to_pylist()
            assert out == [expected_request(cls, f) for f in frames], cls.NAME
            assert all(r["error"] is None for r in out)
        # responses, paired by correlation id: the api version comes from the request
        answered = [ex for ex in exchanges if ex.response_frame is not None]
        for key in {ex.api_key for ex in answered}:
            group = [ex for ex in answered if ex.api_key == key]
            frames = [ex.response_frame for ex in group]
            versions = pa.array([ex.version for ex in group], pa.int16())
            out = arrow.messages(pa.array(frames), key, "response", versions).to_pylist()
            cls = response_class(key)
            assert out == [expected_response(cls, f, ex.version) for f, ex in zip(frames, group)], cls.NAME
            hdr = arrow.response_headers(pa.array(frames), key, versions).to_pylist()
            assert [h["correlation_id"] for h in hdr] == [ex.request_header.correlation_id for ex in group]
    assert {0, 1, 3, 18} <= seen_keys  # Produce, Fetch, Metadata, ApiVersions at least


def test_real_client_record_batches(recorded):
    """The records fields of the recorded Produce requests and Fetch responses
    (lz4 from librdkafka, gzip from kafka-python) through arrow.records."""
    blobs, topics, parts = [], [], []
    for _, _, exchanges in recorded:
        for ex in exchanges:
            if ex.api_key == 0:
                for td in ex.request.topic_data:
                    for pd in td.partition_data:
                        blobs.append(bytes(pd.records))
                        topics.append(td.name)
                        parts.append(pd.index)
            elif ex.api_key == 1 and ex.response is not None:
                for tr in ex.response.responses:
                    for pr in tr.partitions:
                        if pr.records:
                            blobs.append(bytes(pr.records))
                            topics.append(tr.topic)
                            parts.append(pr.partition_index)
    assert len(blobs) >= 4
    out = arrow.records(pa.array(blobs), topic=topics, partition=parts)
    assert out.column("error").null_count == out.num_rows
    got = out.drop_columns(["timestamp"]).to_pylist()
    want = []
    for i, blob in enumerate(blobs):
        for batch in R.decode(blob):
            for r in batch.records:
                if r.control is None:
                    want.append({"key": r.key, "value": r.value, "topic": topics[i], "partition": parts[i],
                                 "offset": r.offset, "timestampType": r.timestamp_type,
                                 "headers": [{"key": k, "value": v} for k, v in r.headers] or None, "row": i,
                                 "error": None})
    assert got == want
    assert {r["key"] for r in want} >= {b"k0", None}
    assert any(r["headers"] for r in want)
