"""Self-test of the Apache Kafka 4.4.0 fixtures: the broker starts, speaks the
protocol as kafkaproto reads it, takes topics and records, writes segment
files that Kafka's own DumpLogSegments and kafkaproto read alike, runs with an
authorizer, and a three-node cluster moves leaders when a node stops."""

from __future__ import annotations

import shutil
import time

import pytest

from kafkaproto import records as R
from kafkaproto.messages import (
    ApiVersionsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DescribeAclsRequest,
    MetadataRequest,
    request_class,
    response_class,
)
from support.live_helpers import LiveConnection

from . import clients
from .brokers import PeerError
from .kafka_broker import KAFKA_VERSION, TOOLS, KafkaCluster
from .kafka_scenarios import CONFORMANCE_PROPERTIES, telemetry_classpath

pytestmark = [pytest.mark.peers, pytest.mark.engine_independent]

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # plaintext listeners: every connection, the nodes' own too, is User:ANONYMOUS
    "super.users": "User:ANONYMOUS",
}


def create_topics(bootstrap_node, topic, partitions=1, replication=-1):
    with LiveConnection(bootstrap_node.host, bootstrap_node.port) as c:
        req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=partitions, replication_factor=replication)], timeout_ms=30000)
        resp = c.request(req, 7)
    [t] = resp.topics
    assert (t.name, t.error_code, t.error_message) == (topic, 0, None)
    return t


def leaders(node, topic):
    """{partition: (leader, replicas, isr)} as ``node`` sees it; {} while it
    does not know the topic yet (metadata reaches each node in its time)."""
    with LiveConnection(node.host, node.port) as c:
        resp = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
    [t] = resp.topics
    if t.error_code == 3:  # UNKNOWN_TOPIC_OR_PARTITION
        return {}
    assert t.error_code == 0, t
    return {p.partition_index: (p.leader_id, sorted(p.replica_nodes), sorted(p.isr_nodes)) for p in t.partitions}


def wait_for(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} within {timeout}s"
        time.sleep(0.2)


# ------------------------------------------------------------------ one node


def test_kafka_broker_answers_api_versions(kafka_broker):
    assert kafka_broker.running and kafka_broker.bootstrap == f"127.0.0.1:{kafka_broker.port}"
    assert kafka_broker.startup_seconds is not None
    with LiveConnection(kafka_broker.host, kafka_broker.port) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="kafkaproto-selftest",
                                            client_software_version="1"), 4)
    assert resp.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    for key in (0, 1, 3, 18, 19, 68, 76):  # Produce Fetch Metadata ApiVersions CreateTopics
        assert key in advertised           # ConsumerGroupHeartbeat ShareGroupHeartbeat
    # every version the broker speaks is one kafkaproto has a schema for
    for key, (lo, hi) in advertised.items():
        for kind in (request_class(key), response_class(key)):
            assert all(kind.supports(v) for v in range(lo, hi + 1)), (kind.NAME, lo, hi)
    features = {f.name: f.max_version_level for f in resp.finalized_features}
    assert features["metadata.version"] > 0 and "share.version" in features


def test_kafka_broker_topic_produce_and_segments(kafka_broker):
    topic = clients.unique_topic("kafka-self")
    create_topics(kafka_broker, topic, partitions=2)
    records = [{"key": b"k%d" % i, "value": b"v%d" % i * 20, "headers": [("h", b"1"), ("h", b"2")],
                "timestamp_ms": 1_700_000_000_000 + i} for i in range(5)]
    sent = clients.produce_confluent(kafka_broker.bootstrap, topic, records, "zstd", timeout=30,
                                     partition=1)
    got = clients.consume_confluent(kafka_broker.bootstrap, topic, len(records), timeout=30)
    clients.assert_same_records(sent, got)

    # the segment file, as Kafka wrote it, read by kafkaproto and by Kafka's own tool
    [segment] = kafka_broker.segment_files(topic, 1)
    assert segment.parent.parent == kafka_broker.log_dir
    batches = list(R.decode(segment.read_bytes()))
    ours = [(r.offset, r.key, r.value, [(k, v) for k, v in r.headers]) for b in batches for r in b.records]
    assert ours == [(i, r["key"], r["value"], r["headers"]) for i, r in enumerate(records)]
    assert {b.codec for b in batches} == {4}  # zstd
    dump = kafka_broker.dump_log_segments(segment, args=("--deep-iteration", "--print-data-log"))
    assert f"Dumping {segment}" in dump
    assert dump.count("| offset: ") == len(records) and "compresscodec: zstd" in dump


def test_kafka_tools_run_against_the_broker(kafka_broker):
    out = kafka_broker.tool("kafka-metadata-quorum", "--bootstrap-server", "{bootstrap}", "describe",
                            "--status").stdout
    assert "LeaderId:" in out and "CurrentVoters:" in out
    version = kafka_broker.tool("kafka-topics", "--version").stdout
    assert version.startswith(KAFKA_VERSION)
    assert set(TOOLS) >= {"kafka-dump-log", "kafka-acls", "kafka-configs", "kafka-storage"}


def test_kafka_with_an_authorizer(kafka_conformance, kafka_broker_factory):
    """The session's conformance broker (its own start, shared with the
    conformance tests) runs with an authorizer: it keeps an ACL and lists it."""
    kafka = kafka_conformance.cluster
    assert kafka.extra_properties["authorizer.class.name"] == AUTHORIZER["authorizer.class.name"]
    assert kafka_broker_factory(  # one per configuration
        extra_properties=dict(CONFORMANCE_PROPERTIES), extra_classpath=telemetry_classpath(),
        advertised=dict(kafka.advertised)) is kafka
    topic = clients.unique_topic("acl")
    node = kafka.nodes[0]  # its own listener: the proxy it advertises was the conformance run's
    acl = {"principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}  # Read, Allow
    with LiveConnection(node.host, node.port) as c:
        created = c.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=2, resource_name=topic, resource_pattern_type=3, **acl)]), 3)  # a literal topic
        assert [r.error_code for r in created.results] == [0], created.results
        listed = c.request(DescribeAclsRequest(resource_type_filter=2, resource_name_filter=topic,
                                               pattern_type_filter=1, principal_filter=None, host_filter=None,
                                               operation=1, permission_type=1), 3)  # any
    assert listed.error_code == 0, listed.error_message  # SECURITY_DISABLED (54) without an authorizer
    assert [(r.resource_name, [(a.principal, a.host, a.operation, a.permission_type) for a in r.acls])
            for r in listed.resources] == [(topic, [tuple(acl.values())])]


def test_kafka_behind_a_proxy(kafka_conformance):
    """A node that advertises a proxy (the conformance broker): clients reach
    it only through the proxy, which sees every request (the nodes' own
    traffic stays off it)."""
    node = kafka_conformance.cluster.nodes[0]
    assert node.advertised != node.bootstrap
    assert {s.index for s in kafka_conformance.connections}  # the clients' connections, all proxied
    keys = {ev.api_key for snap in kafka_conformance.connections for to_server, ev in snap.events
            if to_server and getattr(ev, "api_key", None) is not None}
    assert {0, 1, 3, 18} <= keys  # Produce, Fetch, Metadata, ApiVersions through the proxy
    produced = [s for s in kafka_conformance.steps if s.ok and "produce" in s.name.lower()]
    consumed = [s for s in kafka_conformance.steps if s.ok and "consume" in s.name.lower()]
    assert produced and consumed, [(s.client, s.name, s.ok) for s in kafka_conformance.steps]


def test_kafka_that_cannot_start_is_an_error_with_its_logs_kept():
    broken = KafkaCluster(extra_properties={"node.id": "-7"}, start_timeout=60)
    with pytest.raises(PeerError) as info:
        broken.start()
    try:
        assert str(broken.work_dir) in str(info.value)
        assert (broken.work_dir / "node-1" / "server.properties").read_text().count("node.id=-7") == 1
        assert any(broken.work_dir.glob("node-1/*.log"))
    finally:
        shutil.rmtree(broken.work_dir)


# ---------------------------------------------------------------- three nodes


@pytest.mark.cluster
def test_kafka_cluster_moves_leaders(kafka_cluster):
    assert [n.node_id for n in kafka_cluster.nodes] == [1, 2, 3] and kafka_cluster.running
    assert kafka_cluster.bootstrap.count(",") == 2
    topic = clients.unique_topic("moves")
    first = kafka_cluster.nodes[0]
    create_topics(first, topic, partitions=3, replication=3)
    # every node knows the topic, and the followers have caught up
    in_sync = [(p, [1, 2, 3], [1, 2, 3]) for p in range(3)]
    for n in kafka_cluster.nodes:
        before = wait_for(f"{topic} fully replicated as node {n.node_id} sees it", lambda n=n: (
            (got := leaders(n, topic)) and [(p, r, i) for p, (_, r, i) in sorted(got.items())] == in_sync and got))
    victim = before[0][0]
    survivor = next(n for n in kafka_cluster.nodes if n.node_id != victim)
    kafka_cluster.stop_node(victim)
    try:
        wait_for(f"leaders moved off node {victim}", lambda: all(
            leader not in (victim, -1) for leader, _, _ in leaders(survivor, topic).values()))
        sent = clients.produce_confluent(survivor.bootstrap, topic, [{"key": b"k", "value": b"v"}], "none",
                                         timeout=30, partition=0)
        assert clients.consume_confluent(survivor.bootstrap, topic, 1, timeout=30)[0]["value"] == sent[0]["value"]
    finally:
        kafka_cluster.start_node(victim)
    assert kafka_cluster.running
