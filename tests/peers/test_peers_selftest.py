"""Self-test of the peer infrastructure: real brokers, real clients, real bytes."""

from __future__ import annotations

import struct
import time

import pytest

from . import clients
from .brokers import api_versions, metadata_brokers, split_frames
from .clients import CODECS, LIMITS, PRODUCERS
from .conftest_peers import mock_cluster, recording_proxy, tansu, tansu_behind_proxy  # noqa: F401

pytestmark = [
    pytest.mark.peers,
    # nothing here imports kafkaproto: one pass is enough
    pytest.mark.engine_independent,
    # kafka-python 3.0 loads its schemas with deprecated importlib.resources calls
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

T0 = 1_700_000_000_000  # explicit CreateTime of the first test record


def make_records(client: str):
    """Three records: duplicate header keys, a null key, an empty key, a
    tombstone, binary data; trimmed to what ``client`` can express."""
    headers = [("dup", b"first"), ("dup", b"second"), ("empty", b"")]
    if not LIMITS[client].get("null_header_value"):
        headers.append(("nullval", None))
    records = [
        {"key": b"key-0", "value": b"value-0 " * 40, "headers": headers, "timestamp_ms": T0},
        {"key": None, "value": bytes(range(256)) * 2, "headers": headers, "timestamp_ms": T0 + 1},
        {"key": b"", "value": None, "headers": [("dup", b"x"), ("dup", b"y")], "timestamp_ms": T0 + 2},
    ]
    if LIMITS[client].get("empty_key_null_value"):
        records[2]["key"] = b"key-2"
    if LIMITS[client].get("timestamp"):
        for r in records:
            r["timestamp_ms"] = None
    return records


def roundtrip(client, bootstrap, topic, codec, consumer="confluent", mock=False, **produce_kwargs):
    records = make_records(client)
    if client == "kafka_python" and mock:
        produce_kwargs["config"] = clients.KAFKA_PYTHON_MOCK_CONFIG
    before = int(time.time() * 1000) - 1
    sent = clients.produce(client, bootstrap, topic, records, codec, timeout=20, **produce_kwargs)
    after = int(time.time() * 1000) + 1
    if consumer == "confluent":
        got = clients.consume_confluent(bootstrap, topic, len(records), timeout=20)
    else:
        got = clients.consume_kafka_python(bootstrap, topic, len(records), timeout=20,
                                           config=clients.KAFKA_PYTHON_MOCK_CONFIG if mock else None)
    clients.assert_same_records(sent, got, sent_between=(before, after))
    if client != "kcat":
        assert [r["timestamp_type"] for r in got] == [0, 0, 0]  # CreateTime
    return sent, got


def kcat_lib(broker: str) -> dict:
    # Debian 12's librdkafka 2.0.2 mis-skips tagged fields and fails on
    # tansu's ApiVersions v3 response; use the wheel's newer librdkafka there.
    return {"librdkafka": "bundled" if broker == "tansu" else "system"}


# -------------------------------------------------------------------- tansu


def test_tansu_starts_and_answers(tansu):
    assert tansu.running
    assert tansu.bootstrap == f"127.0.0.1:{tansu.port}"
    assert tansu.startup_seconds is not None and tansu.startup_seconds < 20
    keys = api_versions(tansu.host, tansu.port)
    for key in (0, 1, 2, 3, 18, 19):  # Produce Fetch ListOffsets Metadata ApiVersions CreateTopics
        assert key in keys
    assert [(h, p) for _, h, p in metadata_brokers(tansu.host, tansu.port)] == [(tansu.host, tansu.port)]
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": tansu.bootstrap}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [(tansu.host, tansu.port)]


def test_tansu_create_topic(tansu):
    topic = clients.unique_topic("multi")
    assert clients.create_topic(tansu.bootstrap, topic, partitions=3) == 3


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PRODUCERS)
def test_tansu_roundtrip(tansu, client, codec):
    topic = clients.unique_topic(f"t-{client}-{codec}")
    assert clients.create_topic(tansu.bootstrap, topic) == 1
    extra = kcat_lib("tansu") if client == "kcat" else {}
    sent, got = roundtrip(client, tansu.bootstrap, topic, codec, **extra)
    assert [r["offset"] for r in got] == [0, 1, 2]


@pytest.mark.parametrize("codec", CODECS)
def test_tansu_kafka_python_consumer(tansu, codec):
    topic = clients.unique_topic(f"kpc-{codec}")
    clients.create_topic(tansu.bootstrap, topic)
    roundtrip("confluent", tansu.bootstrap, topic, codec, consumer="kafka_python")


# ------------------------------------------------------------- mock cluster


def test_mock_cluster_starts_and_answers(mock_cluster):
    assert mock_cluster.running
    assert mock_cluster.host == "127.0.0.1"
    keys = api_versions(mock_cluster.host, mock_cluster.port)
    assert 0 in keys and 3 in keys and 18 in keys
    assert 19 not in keys  # the mock has no CreateTopics
    from confluent_kafka import Producer

    md = Producer({"bootstrap.servers": mock_cluster.bootstrap}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [(mock_cluster.host, mock_cluster.port)]


def test_mock_cluster_confluent_produce_consume(mock_cluster):
    topic = clients.unique_topic("mock-basic")
    assert clients.create_topic(mock_cluster.bootstrap, topic) == 4  # auto-created, mock default
    roundtrip("confluent", mock_cluster.bootstrap, topic, "none", mock=True)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", PRODUCERS)
def test_mock_cluster_roundtrip(mock_cluster, client, codec):
    topic = clients.unique_topic(f"m-{client}-{codec}")
    clients.create_topic(mock_cluster.bootstrap, topic)
    extra = kcat_lib("mock") if client == "kcat" else {}
    roundtrip(client, mock_cluster.bootstrap, topic, codec, mock=True, **extra)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_mock_cluster_kafka_python_consumer(mock_cluster, codec):
    topic = clients.unique_topic(f"mkpc-{codec}")
    clients.create_topic(mock_cluster.bootstrap, topic)
    roundtrip("confluent", mock_cluster.bootstrap, topic, codec, consumer="kafka_python", mock=True)


# ----------------------------------------------------------- recording proxy


def check_stream(stream: bytes, first_api_key=None):
    assert len(stream) > 4
    (size,) = struct.unpack(">i", stream[:4])
    assert 4 <= size <= len(stream) - 4, f"implausible frame size {size} for a {len(stream)}-byte stream"
    frames = split_frames(stream)
    assert frames and len(frames[0]) == size
    if first_api_key is not None:
        (api_key,) = struct.unpack(">h", stream[4:6])
        assert api_key == first_api_key
    return frames


@pytest.mark.parametrize("client", ["confluent", "kafka_python", "aiokafka"])
def test_proxy_records_tansu_traffic(tansu_behind_proxy, client):
    proxied = tansu_behind_proxy
    topic = clients.unique_topic(f"proxy-{client}")
    # create the topic directly, so the proxy only sees the client under test
    # (CreateTopics goes to the advertised broker, i.e. through the proxy)
    clients.create_topic(proxied.broker.bootstrap, topic)
    proxied.proxy.clear(settle=0.3)
    roundtrip(client, proxied.bootstrap, topic, "gzip")
    conns = proxied.connections
    for conn in conns:  # the clients are closed; let the proxy finish forwarding
        conn.wait_closed(5)
    assert any(c.client_to_server and c.server_to_client for c in conns), f"no exchange recorded: {conns}"
    produce_seen = False
    for conn in conns:
        # A client may drop a connection before (or right after) speaking on
        # it, so check every direction that carried bytes.
        if not conn.client_to_server:
            continue
        # every client here opens each connection with ApiVersions
        # (librdkafka v3, kafka-python v4, aiokafka v0)
        requests = check_stream(conn.client_to_server, first_api_key=18)
        produce_seen |= 0 in conn.request_api_keys()
        if conn.server_to_client:
            responses = check_stream(conn.server_to_client)
            # the first response answers the first request (same correlation id)
            assert requests[0][4:8] == responses[0][0:4]
    # the broker advertises the proxy, so the Produce request went through it
    assert produce_seen


def test_proxy_in_front_of_mock_sees_bootstrap_only(mock_cluster, recording_proxy):
    proxy = recording_proxy(mock_cluster.host, mock_cluster.port)
    topic = clients.unique_topic("mock-proxy")
    clients.create_topic(mock_cluster.bootstrap, topic)
    sent = clients.produce_confluent(proxy.bootstrap, topic, make_records("confluent"), timeout=20)
    got = clients.consume_confluent(mock_cluster.bootstrap, topic, 3, timeout=20)
    clients.assert_same_records(sent, got)
    conns = proxy.connections
    assert conns
    for conn in conns:
        conn.wait_closed(5)
    keys = [k for c in conns for k in c.request_api_keys()]
    check_stream(conns[0].client_to_server, first_api_key=18)
    check_stream(conns[0].server_to_client)
    assert 3 in keys  # Metadata over the bootstrap connection
    # the mock advertises its own port: Produce bypasses the proxy
    assert 0 not in keys
