"""kafkaproto's mock cluster (kafkaproto.mock) measured against Apache Kafka 4.4:
its conformance suite.

The same client scenarios (``tests/peers/kafka_scenarios.py``: Kafka's Java
clients, confluent-kafka, kafka-python, aiokafka, kafkajs, kafkaproto's own
requests) run against a one-broker mock as they ran against Kafka in the
session's ``kafka_conformance`` run, and one fixed sequence of requests
(:func:`run_probes`: topics, produce, fetch, offsets, producer ids,
transactions, a consumer group's life in both protocols, admin calls) goes
to both at the same versions.  What differs is computed here and listed in
``docs/mock-vs-kafka.md`` (``KAFKAPROTO_WRITE_DOCS=1`` writes it):

* the versions each advertises (ApiVersions);
* the answers to the probes, field by field, leaving out what differs between
  any two brokers (ids, addresses, times; :data:`VOLATILE`), each with the
  reason it differs (:data:`WHY`): a difference without one fails the test;
* the client steps one broker carried out and the other refused, each
  explained the same way.

The test fails when the versions or the probes' differences no longer match
the page.
"""

from __future__ import annotations

import fnmatch
import os
import struct
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkaproto import ErrorCode, KafkaProtocolError
from kafkaproto import messages as M
from kafkaproto import records as R
from kafkaproto.messages import api_name
from kafkaproto.mock import MockCluster
from kafkaproto.protocol import api_versions_handshake, supported_versions
from peers.kafka_scenarios import build, exchange, run_all

# Measured against the session's conformance run, which the compiled pass makes: once.
pytestmark = [pytest.mark.peers, pytest.mark.engine_independent,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mock-vs-kafka.md"
TOPIC, GROUP = "vs-probe", "vs-probe-group"
T0 = 1_700_000_000_000

#: fields whose values differ between any two brokers (or runs): compared as
#: "set or not" only
VOLATILE = {"throttle_time_ms", "cluster_id", "node_id", "host", "port", "leader_id", "controller_id", "topic_id",
            "member_id", "leader", "producer_id", "log_append_time_ms", "session_id", "rack", "replica_nodes",
            "isr_nodes", "offline_replicas", "error_message", "finalized_features_epoch", "coordinator_key",
            "group_instance_id", "client_host", "client_id", "endpoints", "node_endpoints",
            "transaction_start_time_ms"}

#: why each difference in the answers is there: (request label, field path) shell patterns → the reason
WHY: list[tuple[str, str, str]] = [
    ("ApiVersions", ".*_features",
     "Kafka also offers and finalizes share.version and streams.version; the mock has no share or streams groups "
     "(their apis are not offered), so it does not announce them."),
    ("ConsumerGroupHeartbeat, join", ".member_epoch",
     "Epochs: Kafka 4.4 gives a new group's first member epoch 2, the mock 1 (one bump per change of members or "
     "subscriptions, as KIP-848 describes); clients compare epochs with those the coordinator gave, never with a "
     "value of their own."),
    ("ConsumerGroupDescribe", "*epoch",
     "The same epochs as the join above."),
    ("Fetch, read_*committed", ".responses[0].partitions[0].records",
     "Kafka's answer stops before the transaction's ABORT marker (written by its coordinator after EndTxn) though "
     "its high watermark is past it; the mock answers with every stored batch below the high watermark, the "
     "marker too.  Consumers skip control batches: they read the same records from both."),
]

#: why a client step went one way against Kafka and the other against the mock: (client, step) patterns → reason
STEP_WHY: list[tuple[str, str, str]] = [
    ("Java", "updateFeatures", "Features are fixed in the mock (no UpdateFeatures)."),
    ("Java", "describeMetadataQuorum", "No KRaft quorum in the mock (no DescribeQuorum)."),
    ("Java", "listConfigResources", "ListConfigResources is not implemented."),
    ("Java", "*Acls", "No ACLs in the mock: every client may do everything."),
    ("Java", "*ClientQuotas", "No quotas in the mock."),
    ("Java", "*UserScramCredentials",
     "SCRAM users are given to MockCluster(users=...); they are not altered over the wire."),
    ("Java", "*LogDirs", "No log directories in the mock: its logs are in memory."),
    ("Java", "electLeaders", "Leaders are moved by the test (move_leader), not elected over the wire."),
    ("Java", "*PartitionReassignments", "No reassignments: replicas are fixed when a topic is made."),
    ("Java", "abortTransaction",
     "The admin client's abortTransaction writes markers with WriteTxnMarkers, a broker-to-broker api the mock "
     "does not offer."),
    ("Java", "*hare*", "No share groups (KIP-932) in the mock."),
    ("kafkaproto", "*ShareGroupState*", "Share group state apis (broker to broker) are not offered."),
    ("kafkaproto", "StreamsGroup*", "No streams groups (KIP-1071) in the mock."),
]

#: why the versions of an api both answer differ
VERSION_WHY: dict[int, str] = {
    0: "Produce v0-2 (message formats v0 and v1 only) are below what kafkaproto's schemas have.",
    24: "AddPartitionsToTxn v4+ are brokers' requests (verification of transactions version 2); clients stop at v3.",
}

#: what the apis only Kafka answers are, in groups
KAFKA_ONLY_WHY = (
    "Those are the controller's and brokers' own apis, ACLs, quotas, delegation tokens, SCRAM credentials over "
    "the wire, log directories, reassignments and elections, features and quorum changes, client telemetry, "
    "share groups and streams groups: the mock leaves them out (see [its guide](mock.md))."
)


def _why(table, a: str, b: str) -> str | None:
    """The reason for (a, b): the first entry whose patterns match (``*`` and ``?``; brackets are themselves)."""
    def match(text, pattern):
        return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]"))

    return next((reason for pa, pb, reason in table if match(a, pa) and match(b, pb)), None)


@pytest.fixture(scope="module")
def mock():
    """A one-broker mock cluster, as the conformance run's Kafka is one node: (host, port)."""
    with MockCluster(brokers=1) as cluster:
        host, port = cluster.brokers[1].split(":")
        yield host, int(port)


@pytest.fixture(scope="module")
def mock_steps(mock):
    t0 = time.monotonic()
    steps = run_all(f"{mock[0]}:{mock[1]}", "kp")  # the names of the Kafka run's topics and groups
    print(f"\nthe client scenarios against the mock: {time.monotonic() - t0:.1f} s")
    return steps


def advertised(host, port) -> dict[int, tuple[int, int]]:
    _, resp = api_versions_handshake(host, port, timeout=10)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


@dataclass
class Answer:
    label: str
    api_key: int
    version: int | None
    response: dict | None
    note: str = ""


def _batch(n: int = 3) -> bytes:
    return R.encode([R.Record(key=b"k%d" % i, value=b"value %d" % i, headers=[("h", b"x")], timestamp=T0 + i)
                     for i in range(n)])


def _subscription(topic: str) -> bytes:
    """A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0): one topic, no user data."""
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", -1)


def _assignment(topic: str) -> bytes:
    """ConsumerProtocolAssignment v0: partition 0 of the topic, no user data."""
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">iii", 1, 0, -1)


def run_probes(host: str, port: int, versions: dict[int, int]) -> list[Answer]:
    """The fixed sequence, each request on a connection of its own (a broker
    may hang up on a request it does not take), at ``versions``; an answer
    can name what the next request needs (the member id a JoinGroup gave)."""
    out: list[Answer] = []

    def ask(label, cls, fields):
        key = cls.API_KEY
        if key not in versions:
            out.append(Answer(label, key, None, None, "not offered"))
            return None
        try:
            got = exchange(host, port, build(cls, fields), versions[key], client_id="kafkaproto-probe")
        except (OSError, KafkaProtocolError) as exc:
            out.append(Answer(label, key, versions[key], None, f"no answer ({type(exc).__name__})"))
            return None
        out.append(Answer(label, key, versions[key], got.to_dict()))
        return got

    def topic(name, n=1):
        return {"name": name, "num_partitions": n, "replication_factor": 1}

    ids = {}  # topic name -> id, for the versions that name topics by id (Produce 13, Fetch 13+...)

    def produce(name, part, records):
        return {"acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": name, "topic_id": ids.get(name, uuid.UUID(int=0)),
             "partition_data": [{"index": part, "records": records}]}]}

    def fetch(offset, partition=0):
        return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
            {"topic": TOPIC, "topic_id": ids.get(TOPIC, uuid.UUID(int=0)), "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}

    def settle(transactional_id):
        """Wait until the transaction's markers are written (Kafka writes them after it answers EndTxn), so
        that what follows does not depend on how soon: not an answer compared."""
        if 65 not in versions:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            got = exchange(host, port, build(M.DescribeTransactionsRequest, {"transactional_ids": [transactional_id]}),
                           versions[65], client_id="kafkaproto-probe")
            if got.transaction_states[0].transaction_state in ("CompleteAbort", "CompleteCommit", "Empty"):
                return
            time.sleep(0.05)

    bad = bytearray(_batch())
    bad[-1] ^= 0xFF  # the CRC no longer matches
    ask("ApiVersions", M.ApiVersionsRequest, {"client_software_name": "kafkaproto", "client_software_version": "0"})
    ask("Metadata, no topics", M.MetadataRequest, {"topics": []})
    created = ask("CreateTopics", M.CreateTopicsRequest, {"topics": [topic(TOPIC)], "timeout_ms": 10000})
    if created is not None:
        ids[TOPIC] = created.topics[0].topic_id
    ask("CreateTopics, again", M.CreateTopicsRequest, {"topics": [topic(TOPIC)], "timeout_ms": 10000})
    ask("CreateTopics, 0 partitions", M.CreateTopicsRequest, {"topics": [topic("vs-zero", 0)], "timeout_ms": 10000})
    ask("CreateTopics, validate only", M.CreateTopicsRequest, {"topics": [topic("vs-check")], "timeout_ms": 10000,
                                                               "validate_only": True})
    ask("Metadata, a topic and a missing one", M.MetadataRequest, {"topics": [{"name": TOPIC}, {"name": "vs-missing"}],
                                                                   "allow_auto_topic_creation": False})
    ask("Produce", M.ProduceRequest, produce(TOPIC, 0, _batch()))
    ask("Produce, no such partition", M.ProduceRequest, produce(TOPIC, 7, _batch()))
    ask("Produce, no such topic", M.ProduceRequest, produce("vs-missing", 0, _batch()))
    ask("Produce, bad CRC", M.ProduceRequest, produce(TOPIC, 0, bytes(bad)))
    ask("Fetch from 0", M.FetchRequest, fetch(0))
    ask("Fetch past the end", M.FetchRequest, fetch(10))
    for label, ts in (("earliest", -2), ("latest", -1), ("by time", T0 + 1)):
        ask(f"ListOffsets, {label}", M.ListOffsetsRequest, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": ts}]}]})
    ask("InitProducerId, idempotent", M.InitProducerIdRequest, {"transactional_id": None,
                                                                "transaction_timeout_ms": -1})
    ask("InitProducerId, transactional", M.InitProducerIdRequest, {"transactional_id": "vs-probe-txn",
                                                                   "transaction_timeout_ms": 60000})
    ask("FindCoordinator", M.FindCoordinatorRequest, {"key": GROUP, "key_type": 0, "coordinator_keys": [GROUP]})
    join = {"group_id": GROUP, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": _subscription(TOPIC)}]}
    first = ask("JoinGroup, no member id", M.JoinGroupRequest, join)
    member = first.member_id if first is not None else ""
    joined = ask("JoinGroup, with it", M.JoinGroupRequest, dict(join, member_id=member)) if member else first
    generation = joined.generation_id if joined is not None else -1
    ask("SyncGroup", M.SyncGroupRequest, {"group_id": GROUP, "generation_id": generation, "member_id": member,
                                          "protocol_type": "consumer", "protocol_name": "range",
                                          "assignments": [{"member_id": member, "assignment": _assignment(TOPIC)}]})
    ask("Heartbeat", M.HeartbeatRequest, {"group_id": GROUP, "generation_id": generation, "member_id": member})
    ask("OffsetCommit", M.OffsetCommitRequest, {"group_id": GROUP, "generation_id_or_member_epoch": generation,
                                                "member_id": member, "topics": [
                                                    {"name": TOPIC, "topic_id": ids.get(TOPIC, uuid.UUID(int=0)),
                                                     "partitions": [{"partition_index": 0, "committed_offset": 2}]}]})
    ask("OffsetFetch", M.OffsetFetchRequest, {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                                              "groups": [{"group_id": GROUP, "topics": [
                                                  {"name": TOPIC, "topic_id": ids.get(TOPIC, uuid.UUID(int=0)),
                                                   "partition_indexes": [0]}]}]})
    ask("OffsetFetch, every partition", M.OffsetFetchRequest, {"group_id": GROUP, "topics": None, "groups": [
        {"group_id": GROUP, "topics": None}]})
    ask("Heartbeat, unknown member", M.HeartbeatRequest, {"group_id": GROUP, "generation_id": generation,
                                                          "member_id": "nobody"})
    ask("LeaveGroup", M.LeaveGroupRequest, {"group_id": GROUP, "member_id": member, "members": [
        {"member_id": member}]})
    if ask("ListGroups", M.ListGroupsRequest, {}) is not None:  # this sequence's group (the others are the clients')
        out[-1].response["groups"] = [g for g in out[-1].response["groups"] if g["group_id"] == GROUP]
    ask("DescribeGroups", M.DescribeGroupsRequest, {"groups": [GROUP]})
    ask("DescribeConfigs", M.DescribeConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None}]})
    ask("IncrementalAlterConfigs", M.IncrementalAlterConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configs": [
            # a century: longer than the records' age (T0 is in 2023), or Kafka's retention check, which
            # may run at any moment, deletes them before the ListOffsets and DeleteRecords probes below
            {"name": "retention.ms", "config_operation": 0, "value": "3153600000000"},
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}]})
    ask("IncrementalAlterConfigs, unknown config", M.IncrementalAlterConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configs": [
            {"name": "no.such.config", "config_operation": 0, "value": "1"}]}]})
    ask("Produce, compacted topic, a record without a key", M.ProduceRequest, produce(TOPIC, 0, R.encode(
        [R.Record(key=b"k", value=b"keyed", timestamp=T0), R.Record(key=None, value=b"keyless", timestamp=T0)])))
    ask("DescribeConfigs, altered", M.DescribeConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configuration_keys": ["retention.ms", "cleanup.policy"]}]})
    ask("DescribeConfigs, no such topic", M.DescribeConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": "vs-missing", "configuration_keys": None}]})
    ask("DescribeCluster", M.DescribeClusterRequest, {"include_cluster_authorized_operations": False})

    # ListOffsets of the largest timestamp, DeleteRecords, CreatePartitions
    ask("ListOffsets, max timestamp", M.ListOffsetsRequest, {"replica_id": -1, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -3}]}]})
    ask("DeleteRecords", M.DeleteRecordsRequest, {"topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "offset": 1}]}], "timeout_ms": 10000})
    ask("DeleteRecords, past the end", M.DeleteRecordsRequest, {"topics": [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "offset": 99}]}], "timeout_ms": 10000})
    ask("ListOffsets, earliest after DeleteRecords", M.ListOffsetsRequest, {"replica_id": -1, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -2}]}]})
    ask("Fetch below the log start", M.FetchRequest, fetch(0))
    ask("CreatePartitions", M.CreatePartitionsRequest, {"topics": [{"name": TOPIC, "count": 2, "assignments": None}],
                                                        "timeout_ms": 10000})
    ask("CreatePartitions, fewer", M.CreatePartitionsRequest, {"topics": [{"name": TOPIC, "count": 1,
                                                                           "assignments": None}], "timeout_ms": 10000})

    # an idempotent producer's sequences
    idem = ask("InitProducerId, for sequences", M.InitProducerIdRequest, {"transactional_id": None,
                                                                         "transaction_timeout_ms": -1})
    if idem is not None:
        def seq_batch(seq):
            return R.encode([R.Record(key=b"s", value=b"s%d" % seq, timestamp=T0)], producer_id=idem.producer_id,
                            producer_epoch=idem.producer_epoch, base_sequence=seq)

        ask("Produce, sequence 0", M.ProduceRequest, produce(TOPIC, 1, seq_batch(0)))
        ask("Produce, sequence 0 again", M.ProduceRequest, produce(TOPIC, 1, seq_batch(0)))
        ask("Produce, sequence 5", M.ProduceRequest, produce(TOPIC, 1, seq_batch(5)))
        ask("DescribeProducers", M.DescribeProducersRequest, {"topics": [{"name": TOPIC, "partition_indexes": [1]}]})

    # a transaction aborted, read_committed
    txn = "vs-probe-txn2"
    ask("FindCoordinator, transaction", M.FindCoordinatorRequest, {"key": txn, "key_type": 1,
                                                                   "coordinator_keys": [txn]})
    init = ask("InitProducerId, for a transaction", M.InitProducerIdRequest, {"transactional_id": txn,
                                                                             "transaction_timeout_ms": 60000})
    if init is not None:
        pid, epoch = init.producer_id, init.producer_epoch
        tx = {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
              "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": [{"name": TOPIC, "partitions": [1]}]}
        ask("AddPartitionsToTxn", M.AddPartitionsToTxnRequest, tx)
        blob = R.encode([R.Record(key=b"t", value=b"aborted", timestamp=T0)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=0, transactional=True)
        ask("Produce, transactional", M.ProduceRequest, dict(produce(TOPIC, 1, blob), transactional_id=txn))
        ask("ListTransactions", M.ListTransactionsRequest, {"state_filters": [], "producer_id_filters": [pid]})
        ask("DescribeTransactions", M.DescribeTransactionsRequest, {"transactional_ids": [txn]})
        ask("EndTxn, abort", M.EndTxnRequest, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch,
                                               "committed": False})
        settle(txn)
        ask("EndTxn, commit after the abort", M.EndTxnRequest, {"transactional_id": txn, "producer_id": pid,
                                                                "producer_epoch": epoch, "committed": True})
        ask("Fetch, read_committed", M.FetchRequest, dict(fetch(0, partition=1), isolation_level=1))
        ask("Fetch, read_uncommitted", M.FetchRequest, fetch(0, partition=1))
        ask("InitProducerId, again", M.InitProducerIdRequest, {"transactional_id": txn,
                                                               "transaction_timeout_ms": 60000})
        ask("EndTxn, fenced epoch", M.EndTxnRequest, {"transactional_id": txn, "producer_id": pid,
                                                      "producer_epoch": epoch, "committed": True})

    # the consumer protocol (KIP-848)
    cgroup = "vs-probe-cgroup"
    member = "vs-probe-member-0000000000"
    hb = {"group_id": cgroup, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
          "rebalance_timeout_ms": 30000, "subscribed_topic_names": [TOPIC], "subscribed_topic_regex": None,
          "server_assignor": None, "topic_partitions": []}
    ask("FindCoordinator, consumer group", M.FindCoordinatorRequest, {"key": cgroup, "key_type": 0,
                                                                      "coordinator_keys": [cgroup]})
    joined = ask("ConsumerGroupHeartbeat, join", M.ConsumerGroupHeartbeatRequest, hb)
    if joined is not None and joined.error_code == 0:
        ask("ConsumerGroupHeartbeat, stale epoch", M.ConsumerGroupHeartbeatRequest,
            dict(hb, member_epoch=joined.member_epoch + 5, subscribed_topic_names=None, topic_partitions=None))
        ask("ConsumerGroupDescribe", M.ConsumerGroupDescribeRequest, {"group_ids": [cgroup, "vs-probe-nobody"],
                                                                      "include_authorized_operations": False})
        ask("OffsetCommit, consumer group", M.OffsetCommitRequest, {
            "group_id": cgroup, "generation_id_or_member_epoch": joined.member_epoch, "member_id": member,
            "topics": [{"name": TOPIC, "topic_id": ids.get(TOPIC, uuid.UUID(int=0)), "partitions": [
                {"partition_index": 0, "committed_offset": 1}]}]})
        ask("OffsetDelete, subscribed", M.OffsetDeleteRequest, {"group_id": cgroup, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0}]}]})
        ask("ConsumerGroupHeartbeat, leave", M.ConsumerGroupHeartbeatRequest,
            dict(hb, member_epoch=-1, subscribed_topic_names=None, topic_partitions=None))
        ask("DeleteGroups", M.DeleteGroupsRequest, {"groups_names": [cgroup, "vs-probe-nobody"]})
    ask("DeleteTopics", M.DeleteTopicsRequest, {"topic_names": [TOPIC], "topics": [{"name": TOPIC}],
                                                "timeout_ms": 10000})
    ask("DeleteTopics, again", M.DeleteTopicsRequest, {"topic_names": [TOPIC], "topics": [{"name": TOPIC}],
                                                       "timeout_ms": 10000})
    return out


def run_cluster_probes(nodes: dict[int, tuple[str, int]], versions: dict[int, int]) -> list[Answer]:
    """Three brokers: the requests a client sends to the wrong one (not a
    partition's leader, not a group's or a transaction's coordinator), and what
    the cluster says of itself.  ``nodes``: node id → (host, port)."""
    out: list[Answer] = []
    topic, group, txn = "vs-multi", "vs-multi-group", "vs-multi-txn"

    def ask(label, node, cls, fields, record=True):
        got = exchange(*nodes[node], build(cls, fields), versions[cls.API_KEY], client_id="kafkaproto-probe")
        if record:
            out.append(Answer(label, cls.API_KEY, versions[cls.API_KEY], got.to_dict()))
        return got

    first = min(nodes)
    created = ask("CreateTopics, 3 partitions on 3 brokers", first, M.CreateTopicsRequest, {
        "topics": [{"name": topic, "num_partitions": 3, "replication_factor": 3}], "timeout_ms": 10000})
    topic_id = created.topics[0].topic_id
    deadline = time.monotonic() + 30
    while True:  # Kafka elects the leaders a moment after it answers, and each broker learns them in its own
        # time (a follower that has not yet answers a Produce with no leader): not answers compared
        views = {n: ask("", n, M.MetadataRequest, {"topics": [{"name": topic}]}, record=False) for n in sorted(nodes)}
        known = all(len(parts) == 3 and all(p.leader_id >= 0 for p in parts)
                    for parts in ([p for t in v.topics for p in t.partitions] for v in views.values()))
        if known or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    md = views[first]
    ask("Metadata", first, M.MetadataRequest, {"topics": [{"name": topic}]})
    leader = md.topics[0].partitions[0].leader_id
    other = next(n for n in sorted(nodes) if n != leader)
    records = {"acks": -1, "timeout_ms": 10000, "topic_data": [{"name": topic, "topic_id": topic_id, "partition_data": [
        {"index": 0, "records": _batch()}]}]}
    ask("Produce to a follower", other, M.ProduceRequest, records)
    ask("Produce to the leader", leader, M.ProduceRequest, records)
    follower_fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "topic_id": topic_id, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # a Kafka follower's high watermark trails the leader's a moment
        got = ask("", other, M.FetchRequest, follower_fetch, record=False)
        if got.responses[0].partitions[0].high_watermark == 3:
            break
        time.sleep(0.05)
    ask("Fetch from a follower", other, M.FetchRequest, follower_fetch)
    ask("ListOffsets from a follower", other, M.ListOffsetsRequest, {"replica_id": -1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    def settle(key, key_type):
        """Kafka makes its internal topics on first use: wait until it names a coordinator (not compared)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = ask("", first, M.FindCoordinatorRequest, {"key": key, "key_type": key_type,
                                                            "coordinator_keys": [key]}, record=False)
            if got.coordinators[0].error_code == 0:
                return
            time.sleep(0.2)

    settle(group, 0)
    coordinator = ask("FindCoordinator, group", first, M.FindCoordinatorRequest, {
        "key": group, "key_type": 0, "coordinator_keys": [group]}).coordinators[0].node_id
    elsewhere = next(n for n in sorted(nodes) if n != coordinator)
    ask("JoinGroup, not the coordinator", elsewhere, M.JoinGroupRequest, {
        "group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": _subscription(topic)}]})
    ask("OffsetCommit, not the coordinator", elsewhere, M.OffsetCommitRequest, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
            {"name": topic, "topic_id": topic_id, "partitions": [{"partition_index": 0, "committed_offset": 1}]}]})
    settle(txn, 1)
    txn_coordinator = ask("FindCoordinator, transaction", first, M.FindCoordinatorRequest, {
        "key": txn, "key_type": 1, "coordinator_keys": [txn]}).coordinators[0].node_id
    ask("InitProducerId, not the coordinator", next(n for n in sorted(nodes) if n != txn_coordinator),
        M.InitProducerIdRequest, {"transactional_id": txn, "transaction_timeout_ms": 60000})
    ask("DescribeCluster", first, M.DescribeClusterRequest, {"include_cluster_authorized_operations": False})
    ask("DeleteTopics", first, M.DeleteTopicsRequest, {"topic_names": [topic], "topics": [{"name": topic}],
                                                       "timeout_ms": 10000})
    return out


def normalized(value, name=""):
    """An answer with what differs between any two brokers reduced to "set or
    not", records to what they hold, error codes by name."""
    if isinstance(value, dict):
        return {k: normalized(v, k) for k, v in value.items() if k != "api_keys"}
    if isinstance(value, list):
        if name in VOLATILE:
            return f"<{len(value)} items>"
        out = [normalized(v, name) for v in value]
        if name == "results" and all(isinstance(v, dict) and "group_id" in v for v in out):
            out.sort(key=lambda v: v["group_id"])  # DeleteGroups: Kafka answers in its partitions' order
        return out
    if name in VOLATILE:
        return "<set>" if value not in (None, "", -1, b"") else value
    if name == "records":
        return [(r.offset, bytes(r.key or b""), bytes(r.value or b"")) for b in R.decode(value or b"")
                if not b.truncated for r in b.records]
    if name.endswith("error_code") and isinstance(value, int):
        return ErrorCode(value).name if value in ErrorCode._value2member_map_ else value
    return value


def differences(a, b, path=""):
    """(path, Kafka's value, the example's) for each field that differs."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            out += differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def compare_answers(kafka: list[Answer], example: list[Answer]) -> list[tuple]:
    rows = []
    for k, m in zip(kafka, example):
        assert k.label == m.label
        version = k.version if k.version == m.version else f"{k.version}/{m.version}"
        if m.response is None or k.response is None:
            if (k.note, m.note) != ("", ""):
                rows.append((k.label, api_name(k.api_key), version, "(the request)", k.note or "answered",
                             m.note or "answered"))
            continue
        for path, a, b in differences(normalized(k.response), normalized(m.response)):
            rows.append((k.label, api_name(k.api_key), version, path, a, b))
    return rows


def _cell(v) -> str:
    text = repr(v) if not isinstance(v, str) else v
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 90 else text[:87] + "..."


def render(versions_rows, answer_rows, step_rows) -> str:
    both = [r for r in versions_rows if r[2] != "-" and r[3] != "-"]
    lines = [
        "# The mock cluster against Apache Kafka 4.4",
        "",
        "Written by `tests/test_mock_vs_kafka.py`, the conformance suite of `kafkaproto.mock`",
        "(`KAFKAPROTO_WRITE_DOCS=1` rewrites it; the test fails when the versions or the answers",
        "below no longer match, and when a difference has no reason given).  The mock is one",
        "broker here, as the reference is: Apache Kafka 4.4.0, one KRaft node, the broker of",
        "[the conformance run](kafka-conformance.md).  [The mock's guide](mock.md) says what it is",
        "for; the cross-client scenarios run against both as well.",
        "",
        "## Versions advertised (ApiVersions)",
        "",
        f"The mock answers {sum(1 for r in versions_rows if r[3] != '-')} api keys; Kafka "
        f"{sum(1 for r in versions_rows if r[2] != '-')}.  Where both answer a key their ranges:",
        "",
        "| key | api | Kafka | mock | why they differ |",
        "| ---: | --- | --- | --- | --- |",
    ]
    lines += [f"| {k} | {n} | {a} | {b} | {VERSION_WHY.get(k, '') if a != b else ''} |" for k, n, a, b in both]
    only = [f"{n} ({k})" for k, n, a, b in versions_rows if b == "-"]
    lines += ["", f"Kafka only: {', '.join(only)}.", "", KAFKA_ONLY_WHY, ""]
    lines += [
        "## Answers to the same requests",
        "",
        "kafkaproto sends one fixed sequence to each broker (`run_probes`: a topic made, written,",
        "read and listed; configs altered; records deleted; an idempotent producer's sequences; a",
        "transaction aborted and read back; a classic group from JoinGroup to LeaveGroup; a group",
        "of the consumer protocol; admin calls), each request at the highest version both brokers",
        "and kafkaproto have (a key only Kafka answers: Kafka's).  Fields that differ between any",
        "two brokers (ids, addresses, times, error messages: `VOLATILE`) are compared as set or",
        "not; records as their offsets, keys and values; error codes by name.",
        "",
        f"{len(answer_rows)} differences:",
        "",
        "| request | api | version | field | Kafka | mock | why |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + f" | {_why(WHY, row[0], row[3]) or ''} |"
              for row in answer_rows]
    lines += [
        "",
        "## Client scenarios",
        "",
        "The steps of `tests/peers/kafka_scenarios.py` that one broker carried out and the other",
        "refused (one run each).  Every client produces and consumes against both.",
        "",
        "| client | step | Kafka | mock | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + f" | {_why(STEP_WHY, row[0], row[1]) or ''} |"
              for row in step_rows]
    return "\n".join(lines) + "\n"


def _doc_section(text: str, title: str) -> list[str]:
    """The table rows of one section of the page."""
    part = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [line for line in part.splitlines() if line.startswith("| ") and not line.startswith("| ---")]


@pytest.fixture(scope="module")
def measured(kafka_conformance, mock, mock_steps):
    kafka = kafka_conformance.cluster
    theirs = advertised(kafka.host, kafka.port)
    ours = advertised(*mock)
    library = supported_versions()
    common = {}
    for key in theirs.keys() & ours.keys() & library.keys():
        lo = max(theirs[key][0], ours[key][0], library[key][0])
        hi = min(theirs[key][1], ours[key][1], library[key][1])
        if lo <= hi:
            common[key] = hi
    kafka_versions = {k: common.get(k, min(hi, library[k][1])) for k, (_, hi) in theirs.items() if k in library}
    answers_kafka = run_probes(kafka.host, kafka.port, kafka_versions)
    answers_mock = run_probes(*mock, {k: v for k, v in common.items()})
    versions_rows = []
    for key in sorted(theirs.keys() | ours.keys()):
        def rng(d):
            return "-" if key not in d else f"{d[key][0]}-{d[key][1]}"
        versions_rows.append((key, api_name(key), rng(theirs), rng(ours)))
    answer_rows = compare_answers(answers_kafka, answers_mock)
    kafka_steps = {(s.client, s.name): s for s in kafka_conformance.steps}
    step_rows = []
    for s in mock_steps:
        k = kafka_steps.get((s.client, s.name))
        if k is not None and k.ok != s.ok:
            step_rows.append((s.client, s.name, "ok" if k.ok else f"refused: {k.detail}",
                              "ok" if s.ok else f"refused: {s.detail}"))
    return versions_rows, answer_rows, step_rows, mock_steps


def test_clients_produce_and_consume_against_both(measured, kafka_conformance):
    *_, mock_steps = measured
    for steps in (kafka_conformance.steps, mock_steps):
        done = {(s.client, s.name) for s in steps if s.ok}
        for needed in [("confluent-kafka", "produce"), ("confluent-kafka", "consume"), ("kafka-python", "produce"),
                       ("kafka-python", "consume"), ("aiokafka", "produce"), ("aiokafka", "consume(group)"),
                       ("kafkajs", "produce"), ("kafkajs", "consume"), ("Java", "idempotentProduce"),
                       ("Java", "classicConsumer")]:
            assert needed in done, (needed, [str(s) for s in steps if s.client == needed[0]])


def test_differences_from_kafka_are_the_documented_ones(measured):
    versions_rows, answer_rows, step_rows, _ = measured
    text = render(versions_rows, answer_rows, step_rows)
    old = DOC.read_text()
    if "\n## Three brokers" in old:  # written by the test below: kept as it is
        text += "\n## Three brokers" + old.split("\n## Three brokers", 1)[1]
    if os.environ.get("KAFKAPROTO_WRITE_DOCS") == "1":
        DOC.write_text(text)
    print(f"\n{len(answer_rows)} differences in the answers, {len(step_rows)} client steps that differ")
    unexplained = [r for r in answer_rows if _why(WHY, r[0], r[3]) is None]
    unexplained += [r for r in step_rows if _why(STEP_WHY, r[0], r[1]) is None]
    unexplained += [r for r in versions_rows if r[2] != "-" and r[3] != "-" and r[2] != r[3]
                    and r[0] not in VERSION_WHY]
    assert not unexplained, "differences from Kafka without a reason:\n" + "\n".join(map(str, unexplained))
    committed = DOC.read_text()
    for title in ("Versions advertised", "Answers to the same requests"):
        assert _doc_section(committed, title) == _doc_section(text, title), (
            f"{DOC.name}: '{title}' is out of date: run with KAFKAPROTO_WRITE_DOCS=1")


THREE_BROKERS = """The same comparison on three brokers: Kafka 4.4 on three KRaft nodes (the session's
`kafka_cluster`) and a mock of three, each asked by the probes of `run_cluster_probes` (a topic
of three partitions replicated three times; requests sent to a partition's follower, to a
broker that does not coordinate a group or a transaction).  Written by
`test_three_brokers_answer_as_kafka_does`."""


@pytest.mark.cluster
def test_three_brokers_answer_as_kafka_does(kafka_cluster):
    theirs = advertised(kafka_cluster.host, kafka_cluster.port)
    with MockCluster(brokers=3) as cluster:
        mock_nodes = {n: (a.split(":")[0], int(a.split(":")[1])) for n, a in cluster.brokers.items()}
        ours = advertised(*mock_nodes[1])
        library = supported_versions()
        versions = {k: min(theirs[k][1], ours[k][1], library[k][1])
                    for k in theirs.keys() & ours.keys() & library.keys()}
        kafka_nodes = {n.node_id: (n.host, n.port) for n in kafka_cluster.nodes}
        rows = compare_answers(run_cluster_probes(kafka_nodes, versions), run_cluster_probes(mock_nodes, versions))
    unexplained = [r for r in rows if _why(WHY, r[0], r[3]) is None]
    assert not unexplained, "differences from Kafka without a reason:\n" + "\n".join(map(str, unexplained))
    section = ["## Three brokers", "", THREE_BROKERS, "", f"{len(rows)} differences:", "",
               "| request | api | version | field | Kafka | mock | why |",
               "| --- | --- | --- | --- | --- | --- | --- |"]
    section += ["| " + " | ".join(_cell(c) for c in row) + f" | {_why(WHY, row[0], row[3]) or ''} |" for row in rows]
    text = DOC.read_text()
    if os.environ.get("KAFKAPROTO_WRITE_DOCS") == "1":
        DOC.write_text(text.split("\n## Three brokers", 1)[0].rstrip("\n") + "\n\n" + "\n".join(section) + "\n")
        text = DOC.read_text()
    assert _doc_section(text, "Three brokers") == _doc_section("\n".join(section), "Three brokers"), (
        f"{DOC.name}: 'Three brokers' is out of date: run with KAFKAPROTO_WRITE_DOCS=1")


def _rebalance_waits(host: str, port: int, group: str) -> list[tuple]:
    """A classic group's rebalances and session timeouts, as seen on the wire: a member id handed out
    (MEMBER_ID_REQUIRED) and never joined with holds a rebalance until its session timeout; a member that
    goes silent while another joins is let go at its session timeout, not at the 30 s rebalance timeout."""
    def ask(cls, fields, version, timeout=10.0):
        return exchange(host, port, build(cls, fields), version, client_id="kafkaproto-probe", timeout=timeout)

    deadline = time.monotonic() + 30
    while ask(M.FindCoordinatorRequest, {"key_type": 0, "coordinator_keys": [group]}, 4).coordinators[0].error_code:
        assert time.monotonic() < deadline, "no coordinator"
        time.sleep(0.2)
    join = {"group_id": group, "session_timeout_ms": 6000, "rebalance_timeout_ms": 30000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}

    def sync(member):
        return ask(M.SyncGroupRequest, {"group_id": group, "generation_id": member.generation_id,
                                        "member_id": member.member_id,
                                        "assignments": [{"member_id": member.member_id, "assignment": b"a"}]}, 3)

    a = ask(M.JoinGroupRequest, dict(join, member_id=ask(M.JoinGroupRequest, join, 5).member_id), 5)
    sync(a)
    out = []
    # a member id handed out, never used: the leader's JoinGroup waits for it until its session lapses
    assert ask(M.JoinGroupRequest, join, 5).error_code == ErrorCode.MEMBER_ID_REQUIRED
    t0 = time.monotonic()
    again = ask(M.JoinGroupRequest, dict(join, member_id=a.member_id), 5, timeout=40)
    waited = time.monotonic() - t0
    out.append(("join waited for the id handed out", again.error_code, again.generation_id - a.generation_id,
                4 < waited < 15))
    sync(again)
    # a new member joins; the old one sends nothing more: it is let go after its session timeout
    b_id = ask(M.JoinGroupRequest, join, 5).member_id
    t0 = time.monotonic()
    b = ask(M.JoinGroupRequest, dict(join, member_id=b_id), 5, timeout=40)
    waited = time.monotonic() - t0
    hb = ask(M.HeartbeatRequest, {"group_id": group, "generation_id": again.generation_id,
                                  "member_id": a.member_id}, 4)
    out.append(("the silent member let go", b.error_code, b.leader == b_id, [x.member_id for x in b.members] == [b_id],
                4 < waited < 15, hb.error_code))
    ask(M.LeaveGroupRequest, {"group_id": group, "members": [{"member_id": b_id}]}, 5)
    return out


def test_rebalances_wait_for_ids_handed_out_and_let_silent_members_go(kafka_conformance, mock):
    kafka = kafka_conformance.cluster
    expected = [("join waited for the id handed out", 0, 1, True),
                ("the silent member let go", 0, True, True, True, ErrorCode.UNKNOWN_MEMBER_ID)]
    assert _rebalance_waits(kafka.host, kafka.port, "kp-rebalance-waits") == expected
    assert _rebalance_waits(*mock, "kp-rebalance-waits") == expected
