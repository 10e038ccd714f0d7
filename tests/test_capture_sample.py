"""The shipped capture samples (tools/record_sample.py): the pcaps and the taps'
tables decode completely and tell the same story.  kafka.pcap holds tansu and
librdkafka's mock cluster; kafka44.pcap (``--kafka``) Apache Kafka 4.4 and
every client scenario of tests/peers/kafka_scenarios.py."""

from __future__ import annotations

import collections
import json
from pathlib import Path

from kafkaproto.capture import Accounting, capture_kind, read_frames
from kafkaproto.capture.tools.dissect import dissect

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "capture"
MANIFEST = json.loads((SAMPLE / "produced.json").read_text())
PORTS = {name: ports for name, ports in MANIFEST["brokers"].items()}
KAFKA_MANIFEST = json.loads((SAMPLE / "kafka44.json").read_text())


def decode_all(path, **kw):
    acc = Accounting()
    items = list(dissect(read_frames(path, acc=acc, **kw), acc))
    acc.check()
    return items, acc


def test_sample_is_small_and_complete():
    total = sum(f.stat().st_size for f in SAMPLE.rglob("*") if f.is_file())
    assert total < 4 << 20
    assert capture_kind(SAMPLE / "kafka.pcap") == "pcap" and capture_kind(SAMPLE / "tap-tansu") == "table"
    runs = {(p["broker"], p["client"], p["codec"]) for p in MANIFEST["produced"]}
    assert {c for b, c, _ in runs if b == "tansu"} == {"confluent", "kafka_python", "aiokafka", "kcat"}
    assert {k for b, _, k in runs if b == "tansu"} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert not MANIFEST["failures"]


def test_pcap_decodes_completely_with_and_without_ports():
    detected, acc = decode_all(SAMPLE / "kafka.pcap")
    ports = [p for ps in PORTS.values() for p in ps]
    given, acc2 = decode_all(SAMPLE / "kafka.pcap", ports=ports)
    assert [(d.frame.conn.client, d.frame.correlation_id, d.frame.frame) for d in detected] == \
           [(d.frame.conn.client, d.frame.correlation_id, d.frame.frame) for d in given]
    assert acc.gaps == 0 and acc.bytes["decoded"] == acc.payload_bytes_total
    assert acc.frames.keys() == {"decoded"}
    assert acc.kafka_connections == acc.connections > 100
    apis = collections.Counter(d.frame.api_key for d in detected)
    # Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup,
    # Heartbeat, LeaveGroup, SyncGroup, DescribeGroups/ListGroups, ApiVersions, CreateTopics, DescribeCluster
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 14, 18, 19, 60} <= set(apis)
    responses = [d for d in detected if d.frame.direction == "response"]
    assert all(d.frame.latency_ns is not None and d.frame.latency_ns >= 0 for d in responses)


def test_tap_records_the_frames_tcpdump_saw():
    """tcpdump watched the tap -> tansu side: the same frames, byte for byte."""
    pcap, _ = decode_all(SAMPLE / "kafka.pcap", ports=PORTS["tansu"])
    tap, acc = decode_all(SAMPLE / "tap-tansu")
    key = lambda d: (d.frame.direction, d.frame.api_key, d.frame.api_version, bytes(d.frame.frame))  # noqa: E731
    assert collections.Counter(map(key, pcap)) == collections.Counter(map(key, tap))
    assert acc.frames.keys() == {"decoded"}
    mock_pcap, _ = decode_all(SAMPLE / "kafka.pcap", ports=PORTS["mock"])
    mock_tap, _ = decode_all(SAMPLE / "tap-mock")
    # the mock cluster's owner handle talks to its brokers without the tap
    assert not collections.Counter(map(key, mock_tap)) - collections.Counter(map(key, mock_pcap))


def test_produced_values_are_in_the_uncompressed_produce_requests():
    import base64

    produce = collections.defaultdict(bytes)
    for d in decode_all(SAMPLE / "kafka.pcap")[0]:
        if d.frame.api_key == 0 and d.frame.direction == "request":
            for t in d.message.topic_data:
                for p in t.partition_data:
                    produce[t.name] += bytes(p.records or b"")
    runs = [r for r in MANIFEST["produced"] if r["codec"] == "none"]
    assert len(runs) >= 5
    for run in runs:
        for rec in run["records"]:
            if rec["value"]:
                assert base64.b64decode(rec["value"]) in produce[run["topic"]], (run["topic"], rec)


def test_kafka_sample_decodes_completely():
    pcap = SAMPLE / KAFKA_MANIFEST["pcap"]
    assert pcap.stat().st_size + sum(f.stat().st_size for f in (SAMPLE / "tap-kafka44").iterdir()) < 1 << 20
    detected, acc = decode_all(pcap)
    given, _ = decode_all(pcap, ports=KAFKA_MANIFEST["brokers"]["kafka"])
    key = lambda d: (d.frame.conn.client, d.frame.correlation_id, bytes(d.frame.frame))  # noqa: E731
    assert list(map(key, detected)) == list(map(key, given))
    # every payload byte decoded, or a retransmission of one that was (loopback retransmits too)
    assert acc.gaps == 0 and acc.bytes.keys() <= {"decoded", "duplicate"}
    assert acc.bytes["decoded"] + acc.bytes.get("duplicate", 0) == acc.payload_bytes_total
    assert acc.frames.keys() == {"decoded"}
    assert acc.kafka_connections == acc.connections > 40
    assert all(d.error is None for d in detected)
    # what the conformance tests exchange (docs/kafka-conformance.md): every api key the broker advertises
    advertised = {k.api_key for d in detected if d.frame.api_key == 18 and d.frame.direction == "response"
                  and d.message.error_code == 0 for k in d.message.api_keys}
    assert len(advertised) > 70
    assert {d.frame.api_key for d in detected} == advertised
    clients = {s["client"] for s in KAFKA_MANIFEST["steps"] if s["ok"]}
    assert clients == {"Java", "kafkajs", "confluent-kafka", "kafka-python", "aiokafka", "kafkaproto"}


def test_kafka_tap_records_the_frames_tcpdump_saw():
    """tcpdump watched the tap -> Kafka side: the same frames, byte for byte."""
    pcap, _ = decode_all(SAMPLE / KAFKA_MANIFEST["pcap"], ports=KAFKA_MANIFEST["brokers"]["kafka"])
    tap, acc = decode_all(SAMPLE / KAFKA_MANIFEST["taps"]["kafka"])
    key = lambda d: (d.frame.direction, d.frame.api_key, d.frame.api_version, bytes(d.frame.frame))  # noqa: E731
    assert collections.Counter(map(key, pcap)) == collections.Counter(map(key, tap))
    assert acc.frames.keys() == {"decoded"} and len(tap) > 500
