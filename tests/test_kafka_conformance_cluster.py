"""Apache Kafka 4.4 on three nodes while a partition's leader moves, through
``ProxyConnection(decode=True)``: one decoding recording proxy in front of
each node (the nodes advertise them: the session's ``kafka_cluster``).

Kafka's Java producer and consumer work on partition 0 of a topic on all
three nodes while kafkaproto moves its leader twice (AlterPartitionReassignments
to another replica order, then ElectLeaders): their Produce and Fetch
requests meet NOT_LEADER_OR_FOLLOWER answers naming the new leader in the
tagged fields of KIP-951 (CurrentLeader, NodeEndpoints), the answers a
single node never writes.  kafkaproto also asks a broker for the quorum
(DescribeQuorum: three voters).  Every frame is checked as in
test_kafka_conformance.py: the proxies forward every byte, every frame
decodes and re-encodes byte for byte, agrees with Kafka's classes field by
field and reads the same in the other engine.
"""

from __future__ import annotations

import collections
import time

import pytest

from kafkaproto import ErrorCode
from kafkaproto import messages as M
from kafkaproto.protocol import api_versions_handshake, negotiate_versions
from peers.kafka_scenarios import Snapshot, build, exchange, quiet, start_java_moving
from support.conformance import check_events, java_disagreements, other_engine_disagreements

# Checks both engines (the other one in a child process): once is enough.
pytestmark = [pytest.mark.peers, pytest.mark.cluster, pytest.mark.engine_independent,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

TOPIC = "moving"
SECONDS = 12


@pytest.fixture(scope="module")
def moved(kafka_cluster):
    proxies = kafka_cluster.proxies  # the session's, in front of the nodes they are advertised for
    seen = [len(p.connections) for p in proxies]  # the connections of the tests before this one
    host, port = proxies[0].host, proxies[0].port
    versions = negotiate_versions(api_versions_handshake(host, port, client_id="kafkaproto")[1])
    answers = {}
    answers["CreateTopics"] = exchange(host, port, build(M.CreateTopicsRequest, {"topics": [
        {"name": TOPIC, "num_partitions": -1, "replication_factor": -1,
         "assignments": [{"partition_index": 0, "broker_ids": [1, 2, 3]}]}], "timeout_ms": 10000}),
        versions[19])
    wait = start_java_moving(",".join(p.bootstrap for p in proxies), TOPIC, SECONDS)
    time.sleep(SECONDS / 3)
    for order in ([2, 3, 1], [3, 1, 2]):  # the first replica is the preferred leader
        answers[f"reassign {order}"] = exchange(host, port, build(M.AlterPartitionReassignmentsRequest, {
            "timeout_ms": 10000, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "replicas": order}]}]}), versions[45])
        answers[f"elect {order[0]}"] = exchange(host, port, build(M.ElectLeadersRequest, {
            "election_type": 0, "timeout_ms": 10000, "topic_partitions": [
                {"topic": TOPIC, "partitions": [0]}]}), versions[43])
        time.sleep(SECONDS / 4)
    answers["DescribeQuorum"] = exchange(host, port, build(M.DescribeQuorumRequest, {"topics": [
        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}), versions[55])
    steps = wait()
    for proxy in proxies:
        quiet(proxy)
    conns = [c for p, n in zip(proxies, seen) for c in p.connections[n:]]
    snaps = [Snapshot(i, *c.snapshot()) for i, c in enumerate(conns)]
    return answers, steps, snaps


@pytest.fixture(scope="module")
def checks(moved):
    return [c for snap in moved[2] for c in check_events(snap.index, snap.events)]


def test_the_leader_moved_under_the_clients(moved, checks):
    answers, steps, snaps = moved
    assert all(s.ok for s in steps), [str(s) for s in steps]
    assert answers["CreateTopics"].topics[0].error_code == 0
    for name, answer in answers.items():
        if name.startswith("elect"):
            [result] = answer.replica_election_results
            assert result.partition_result[0].error_code == 0, (name, answer)
    quorum = answers["DescribeQuorum"].topics[0].partitions[0]
    assert len(quorum.current_voters) == 3 and quorum.leader_id in (1, 2, 3)
    # the answers only a moving leader gets: NOT_LEADER_OR_FOLLOWER naming the new one (KIP-951)
    told = collections.Counter()
    for c in checks:
        if c.kind != "response" or c.api_key not in (0, 1):
            continue
        parts = ([p for r in c.message.responses for p in r.partition_responses] if c.api_key == 0 else
                 [p for r in c.message.responses for p in r.partitions])
        for p in parts:
            if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                told[(M.api_name(c.api_key), p.current_leader.leader_id != -1, bool(c.message.node_endpoints))] += 1
    print(f"\nNOT_LEADER_OR_FOLLOWER answers (api, names the leader, with its endpoint): {dict(told)}")
    assert told[("Produce", True, True)] > 0


def test_the_proxies_forward_every_byte_unchanged(moved):
    for snap in moved[2]:
        assert (snap.to_broker, snap.to_client) == (snap.from_client, snap.from_broker), snap.index


def test_every_frame_decodes_reencodes_and_agrees_with_kafka(checks, java_oracle):
    bad = [f"{c.where}: {c.error}" for c in checks if not c.decoded or not c.reencoded]
    assert not bad, "\n".join(bad[:20])
    failures, rewritten, _ = java_disagreements(checks, java_oracle)
    assert not failures, "\n".join(failures[:20])
    assert not rewritten, rewritten
    kinds = collections.Counter(c.kind for c in checks)
    print(f"\n{kinds['request']} requests, {kinds['response']} responses across three nodes agree with "
          f"kafka-clients {java_oracle.kafka_version}")
    assert kinds["response"] > 100


def test_the_other_engine_reads_every_frame_the_same(moved, checks, tmp_path):
    streams = [(s.from_client, s.from_broker) for s in moved[2]]
    differ = other_engine_disagreements(streams, checks, tmp_path)
    assert not differ, differ[:10]
