"""Record batches against real peers on loopback.

* Batches real clients write (confluent-kafka, kafka-python, aiokafka, kcat;
  every codec) decode to what they sent: captured from the wire in front of
  tansu, and fetched back from librdkafka's mock cluster.
* Batches kafkaproto encodes (every codec) are accepted by tansu and read
  back by confluent-kafka and kafka-python with equal keys, values, headers
  and timestamps.
"""

import socket
import struct
import time

import pytest

from kafkaproto import decode_request, decode_response, encode_request
from kafkaproto import records as R
from kafkaproto.consumer import consume
from kafkaproto.messages import request_class
from peers import clients
from peers.brokers import PeerUnavailable, Tansu, api_versions, split_frames
from peers.clients import CODECS, LIMITS, PRODUCERS

pytestmark = [
    pytest.mark.peers,
    # kafka-python 3.0 loads its schemas with deprecated importlib.resources calls
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

TS = 1_700_000_000_000
PRODUCE, FETCH = 0, 1


def make_records(client):
    """Duplicate header keys, null/empty keys and values, binary data; trimmed
    to what ``client`` can express."""
    headers = [("dup", b"first"), ("dup", b"second"), ("empty", b"")]
    if not LIMITS[client].get("null_header_value"):
        headers.append(("nullval", None))
    recs = [
        {"key": b"key-0", "value": b"value-0 " * 40, "headers": headers, "timestamp_ms": TS},
        {"key": None, "value": bytes(range(256)) * 3, "headers": headers[:1], "timestamp_ms": TS + 1},
        {"key": b"", "value": None, "headers": [], "timestamp_ms": TS + 2},
        {"key": b"k3", "value": b"", "headers": [("h", b"3")], "timestamp_ms": TS - 5},
    ]
    if LIMITS[client].get("empty_key_null_value"):
        recs[2]["key"] = b"key-2"
    if LIMITS[client].get("null_key_empty_value"):
        recs[3]["key"] = b"k3"
    if LIMITS[client].get("timestamp"):
        for r in recs:
            r["timestamp_ms"] = None
    return recs


def assert_decoded_as_sent(sent, decoded):
    assert len(decoded) == len(sent)
    for s, r in zip(sent, decoded):
        assert (r.key, r.value, r.headers) == (s["key"], s["value"], s["headers"])
        if s["timestamp_ms"] is not None:
            assert r.timestamp == s["timestamp_ms"]


def request(host, port, msg, version, timeout=10.0):
    """One request on a fresh connection → the decoded response."""
    frame = encode_request(msg, version, 1, "kafkaproto-tests")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        stream = b""
        while len(stream) < 4 or len(stream) < 4 + struct.unpack(">i", stream[:4])[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"connection closed after {len(stream)} bytes")
            stream += chunk
    return decode_response(stream[4:], msg.API_KEY, version)[1]


def version_for(host, port, api_key, ours):
    lo, hi = api_versions(host, port)[api_key]
    assert lo <= ours, f"api {api_key}: the broker needs v{lo}+"
    return min(hi, ours)


def produce_raw(host, port, topic, blob, version):
    P = request_class(PRODUCE)
    msg = P(acks=-1, timeout_ms=10_000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=blob)])])
    [tr] = request(host, port, msg, version).responses
    [pr] = tr.partition_responses
    return pr


def fetch_raw(host, port, topic, version, offset=0):
    F = request_class(FETCH)
    msg = F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=8 << 20, isolation_level=0, topics=[
        F.FetchTopic(topic=topic, partitions=[F.FetchPartition(partition=0, fetch_offset=offset,
                                                                partition_max_bytes=8 << 20)])])
    resp = request(host, port, msg, version)
    [tr] = resp.responses
    [pr] = tr.partitions
    assert pr.error_code == 0, pr
    return pr


@pytest.fixture(scope="module")
def proxied_tansu():
    """One tansu behind a recording proxy for the module (each test clears the recording)."""
    try:
        with Tansu.behind_proxy() as proxied:
            yield proxied
    except PeerUnavailable as exc:
        pytest.fail(f"tansu unavailable: {exc}", pytrace=False)


def produced_records_blobs(connections, topic):
    """The ``records`` of every Produce request for ``topic`` seen by the proxy."""
    blobs = []
    for conn in connections:
        conn.wait_closed(5)
        for frame in split_frames(conn.client_to_server):
            if struct.unpack_from(">h", frame, 0)[0] != PRODUCE:
                continue
            _, msg = decode_request(frame)
            for td in msg.topic_data:
                if td.name == topic:
                    blobs += [pd.records for pd in td.partition_data if pd.records]
    return blobs


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PRODUCERS)
def test_client_batches_on_the_wire_decode_to_what_was_sent(proxied_tansu, client, codec):
    topic = clients.unique_topic(f"wire-{client}-{codec}")
    clients.create_topic(proxied_tansu.broker.bootstrap, topic)
    proxied_tansu.proxy.clear(settle=0.2)
    kwargs = {"librdkafka": "bundled"} if client == "kcat" else {}
    sent = clients.produce(client, proxied_tansu.bootstrap, topic, make_records(client), codec, timeout=20,
                           **kwargs)
    blobs = produced_records_blobs(proxied_tansu.connections, topic)
    assert blobs, "no Produce request recorded"
    batches = [b for blob in blobs for b in R.decode(blob)]
    assert batches and not any(b.truncated for b in batches)
    # librdkafka sends a batch uncompressed when compressing does not shrink it
    # (kcat: one tiny batch per group of records)
    compressions = {b.compression for b in batches}
    assert codec in compressions and compressions <= {codec, "none"}
    assert {b.magic for b in batches} == {2}
    assert_decoded_as_sent(sent, [r for b in batches for r in b.records])


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PRODUCERS)
def test_client_batches_fetched_from_the_mock_decode_to_what_was_sent(mock_cluster, client, codec):
    topic = clients.unique_topic(f"mock-{client}-{codec}")
    clients.create_topic(mock_cluster.bootstrap, topic)
    kwargs = {"config": clients.KAFKA_PYTHON_MOCK_CONFIG} if client == "kafka_python" else {}
    sent = clients.produce(client, mock_cluster.bootstrap, topic, make_records(client), codec, timeout=20, **kwargs)
    host, port = mock_cluster.host, mock_cluster.port
    version = version_for(host, port, FETCH, 11)
    got, compressions, offset = [], set(), 0
    deadline = time.monotonic() + 10
    while len(got) < len(sent) and time.monotonic() < deadline:
        pr = fetch_raw(host, port, topic, version, offset)
        batches = [b for b in R.decode(pr.records) if not b.truncated]
        if not batches:
            time.sleep(0.1)
            continue
        compressions |= {b.compression for b in batches}
        got += consume(pr.records, offset, aborted_transactions=pr.aborted_transactions)
        offset = batches[-1].next_offset
    assert_decoded_as_sent(sent, got)
    assert codec in compressions and compressions <= {codec, "none"}


@pytest.mark.parametrize("codec", CODECS)
def test_our_batches_are_accepted_and_read_back_by_real_clients(tansu, codec):
    topic = clients.unique_topic(f"ours-{codec}")
    clients.create_topic(tansu.bootstrap, topic)
    recs = make_records("kafka_python")  # no null header values: kafka-python reads these back too
    blob = R.encode([(r["key"], r["value"], r["headers"], r["timestamp_ms"]) for r in recs], codec=codec,
                    producer_id=-1)
    host, port = tansu.host, tansu.port
    pr = produce_raw(host, port, topic, blob, version_for(host, port, PRODUCE, 8))
    assert (pr.error_code, pr.base_offset) == (0, 0)
    for consumer in (clients.consume_confluent, clients.consume_kafka_python):
        got = consumer(tansu.bootstrap, topic, len(recs), timeout=20)
        for s, r in zip(recs, got):
            assert (r["key"], r["value"], r["headers"], r["timestamp_ms"], r["timestamp_type"]) == (
                s["key"], s["value"], s["headers"], s["timestamp_ms"], 0), consumer.__name__
        assert len(got) == len(recs)
