"""kafkaproto.mock, request by request: what each api answers (Kafka's rules
for leaders, epochs, producers, fetch sessions, groups, transactions,
configs, SASL), the faults a test can ask for, the records and log files it
hands back.  Real clients against it: tests/test_mock_clients.py; against
Kafka 4.4 itself: tests/test_mock_vs_kafka.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest

from kafkaproto import ErrorCode as E
from kafkaproto import FrameReader, decode_response, log
from kafkaproto import messages as M
from kafkaproto import records as R
from kafkaproto.mock import MockCluster
from kafkaproto.net import send_parts
from kafkaproto.protocol import encode_request_parts
from peers.kafka_scenarios import build


class Client:
    """Requests to one broker of a cluster on one connection."""

    def __init__(self, cluster: MockCluster, node: int, client_id: str = "test"):
        host, port = cluster.brokers[node].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.reader = FrameReader()
        self.correlation = 0
        self.client_id = client_id

    def ask(self, msg, version: int, expect: bool = True):
        if isinstance(msg, tuple):
            msg = build(*msg)
        self.correlation += 1
        send_parts(self.sock, encode_request_parts(msg, version, self.correlation, self.client_id, lenient=True))
        if not expect:
            return None
        while True:
            for frame in self.reader.feed(b""):
                return decode_response(frame, msg.API_KEY, version)[1]
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("closed")
            for frame in self.reader.feed(data):
                return decode_response(frame, msg.API_KEY, version)[1]

    def close(self):
        self.sock.close()


def produce_request(topic, partition, blob, acks=-1, transactional_id=None):
    return (M.ProduceRequest, {"acks": acks, "timeout_ms": 5000, "transactional_id": transactional_id,
                               "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                                                  "records": blob}]}]})


def fetch_request(topic, partition, offset, *, isolation=0, max_wait=0, min_bytes=0, session_id=0,
                  session_epoch=-1, epoch=-1):
    return (M.FetchRequest, {"replica_id": -1, "max_wait_ms": max_wait, "min_bytes": min_bytes, "max_bytes": 1 << 20,
                             "isolation_level": isolation, "session_id": session_id, "session_epoch": session_epoch,
                             "topics": [{"topic": topic, "partitions": [
                                 {"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                                  "current_leader_epoch": epoch}]}]})


def batch(n=3, start=0, **kw):
    return R.encode([(b"k%d" % i, b"v%d" % i) for i in range(start, start + n)], **kw)


def part0(response):
    return response.responses[0].partition_responses[0] if hasattr(response.responses[0], "partition_responses") \
        else response.responses[0].partitions[0]


@pytest.fixture
def cluster():
    with MockCluster(brokers=3, topics={"t": 3, "one": 1}) as c:
        yield c


def leader_client(cluster, topic="one", partition=0):
    return Client(cluster, cluster.leader(topic, partition))


# -- the cluster ------------------------------------------------------------------


def test_metadata_spreads_leaders_and_lists_live_brokers(cluster):
    c = Client(cluster, 1)
    md = c.ask(M.MetadataRequest(topics=None), 12)
    assert sorted(b.node_id for b in md.brokers) == [1, 2, 3]
    assert {b.port for b in md.brokers} == {int(a.split(":")[1]) for a in cluster.brokers.values()}
    t = next(t for t in md.topics if t.name == "t")
    assert sorted(p.leader_id for p in t.partitions) == [1, 2, 3]
    assert all(len(p.replica_nodes) == 3 and p.leader_epoch == 0 for p in t.partitions)
    assert cluster.bootstrap == ",".join(cluster.brokers.values())
    # auto-creation (Kafka's num.partitions), and a refusal of it
    md = c.ask((M.MetadataRequest, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True}), 12)
    assert md.topics[0].error_code == 0 and len(md.topics[0].partitions) == 1
    md = c.ask((M.MetadataRequest, {"topics": [{"name": "nope"}], "allow_auto_topic_creation": False}), 12)
    assert md.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    dc = c.ask(M.DescribeClusterRequest(), 1)
    assert dc.cluster_id == cluster.cluster_id and len(dc.brokers) == 3


def test_api_versions_kip511_and_features(cluster):
    c = Client(cluster, 2)
    v = c.ask((M.ApiVersionsRequest, {"client_software_name": "x", "client_software_version": "1"}), 3)
    keys = {k.api_key: (k.min_version, k.max_version) for k in v.api_keys}
    assert keys[0] == (3, 13) and keys[1] == (4, 18) and keys[68] == (0, 1)
    assert {f.name for f in v.finalized_features} >= {"group.version", "transaction.version"}


def test_produce_to_the_wrong_broker_names_the_leader(cluster):
    leader = cluster.leader("one", 0)
    other = next(n for n in cluster.brokers if n != leader)
    r = Client(cluster, other).ask(produce_request("one", 0, batch()), 12)
    p = part0(r)
    assert p.error_code == E.NOT_LEADER_OR_FOLLOWER
    assert p.current_leader.leader_id == leader
    assert [e.node_id for e in r.node_endpoints] == [leader]
    assert cluster.records("one") == []
    # a follower serves consumers (KIP-392); a broker without a replica does not
    r = Client(cluster, other).ask(fetch_request("one", 0, 0), 12)
    assert (part0(r).error_code, part0(r).high_watermark) == (0, 0)
    with MockCluster(brokers=3, topics={"solo": {"partitions": 1, "replication_factor": 1}}) as solo:
        stranger = next(n for n in solo.brokers if n != solo.leader("solo", 0))
        r = Client(solo, stranger).ask(fetch_request("solo", 0, 0), 12)
        assert part0(r).error_code == E.NOT_LEADER_OR_FOLLOWER
        assert part0(r).current_leader.leader_id == solo.leader("solo", 0)


def test_every_codec_stored_as_received(cluster):
    c = leader_client(cluster)
    sent = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        blob = batch(4, codec=codec)
        r = c.ask(produce_request("one", 0, blob), 12)
        assert part0(r).error_code == 0
        sent.append(blob)
    fetched = c.ask(fetch_request("one", 0, 0), 12)
    stored = bytes(part0(fetched).records)
    got = list(R.decode(stored))
    assert [b.codec for b in got] == [0, 1, 2, 3, 4]
    # the same bytes as sent, but for the offsets and the leader epoch (outside the CRC) the broker sets
    offset = 0
    for b, blob in zip(got, sent):
        raw = stored[b.offset:b.offset + b.size]
        assert raw[12:16] == b"\0\0\0\0" and raw[16:] == blob[16:] and b.base_offset == offset
        offset += 4
    assert [r.value for r in cluster.records("one")] == [b"v0", b"v1", b"v2", b"v3"] * 5


def test_bad_crc_and_unknown_partition(cluster):
    c = leader_client(cluster)
    bad = bytearray(batch())
    bad[-1] ^= 1
    assert part0(c.ask(produce_request("one", 0, bytes(bad)), 12)).error_code == E.CORRUPT_MESSAGE
    assert part0(c.ask(produce_request("one", 5, batch()), 12)).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert part0(c.ask(produce_request("one", 0, batch(), acks=2), 12)).error_code == E.INVALID_REQUIRED_ACKS


def test_acks_zero_gets_no_answer_but_stores(cluster):
    c = leader_client(cluster)
    c.ask(produce_request("one", 0, batch(), acks=0), 12, expect=False)
    r = c.ask((M.ListOffsetsRequest, {"replica_id": -1, "topics": [
        {"name": "one", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}), 9)
    assert r.topics[0].partitions[0].offset == 3
    assert cluster.requests("Produce")[0].response is None


def test_idempotent_producer_sequences(cluster):
    c = leader_client(cluster)
    pid = c.ask((M.InitProducerIdRequest, {"transactional_id": None, "transaction_timeout_ms": -1}), 4).producer_id

    def send(seq, epoch=0, n=2):
        blob = R.encode([(None, b"x")] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        return part0(c.ask(produce_request("one", 0, blob), 12))

    assert send(0).base_offset == 0
    assert send(2).base_offset == 2
    again = send(2)  # a retry of the last batch: its offsets again, nothing stored
    assert (again.error_code, again.base_offset) == (0, 2)
    assert send(7).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert send(4, epoch=1).error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER  # a new epoch starts at 0
    assert send(0, epoch=1).base_offset == 4
    assert send(4, epoch=0).error_code == E.INVALID_PRODUCER_EPOCH
    assert len(cluster.records("one")) == 6
    producers = c.ask((M.DescribeProducersRequest, {"topics": [{"name": "one", "partition_indexes": [0]}]}), 0)
    (state,) = producers.topics[0].partitions[0].active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (pid, 1, 1)


def test_fetch_long_poll_waits_for_data(cluster):
    c = leader_client(cluster)
    got = {}

    def poll():
        t0 = time.monotonic()
        got["r"] = Client(cluster, cluster.leader("one", 0)).ask(fetch_request("one", 0, 0, max_wait=5000,
                                                                               min_bytes=1), 12)
        got["s"] = time.monotonic() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.3)
    c.ask(produce_request("one", 0, batch()), 12)
    t.join(10)
    assert 0.2 < got["s"] < 4 and len(list(R.decode(part0(got["r"]).records))) == 1
    t0 = time.monotonic()
    r = c.ask(fetch_request("one", 0, 3, max_wait=300, min_bytes=1), 12)
    assert time.monotonic() - t0 >= 0.25 and not part0(r).records
    assert part0(c.ask(fetch_request("one", 0, 9), 12)).error_code == E.OFFSET_OUT_OF_RANGE


def test_fetch_sessions_send_only_what_changed(cluster):
    c = leader_client(cluster)
    c.ask(produce_request("one", 0, batch()), 12)
    full = c.ask(fetch_request("one", 0, 0, session_epoch=0), 12)
    sid = full.session_id
    assert sid and part0(full).high_watermark == 3
    # the next one, incremental, names the partition's new offset: nothing more to say of it
    inc = c.ask(fetch_request("one", 0, 3, session_id=sid, session_epoch=1), 12)
    assert inc.error_code == 0 and inc.responses == []
    c.ask(produce_request("one", 0, batch()), 12)
    inc = c.ask((M.FetchRequest, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                  "session_id": sid, "session_epoch": 2, "topics": []}), 12)
    assert part0(inc).high_watermark == 6 and len(list(R.decode(part0(inc).records))) == 1
    bad = c.ask((M.FetchRequest, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                  "session_id": sid, "session_epoch": 9, "topics": []}), 12)
    assert bad.error_code == E.INVALID_FETCH_SESSION_EPOCH
    bad = c.ask((M.FetchRequest, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                  "session_id": sid + 100, "session_epoch": 1, "topics": []}), 12)
    assert bad.error_code == E.FETCH_SESSION_ID_NOT_FOUND


def test_fetch_by_topic_id(cluster):
    c = leader_client(cluster)
    c.ask(produce_request("one", 0, batch()), 12)
    md = c.ask((M.MetadataRequest, {"topics": [{"name": "one"}]}), 12)
    tid = md.topics[0].topic_id
    r = c.ask((M.FetchRequest, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": tid, "partitions": [
                                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}), 17)
    assert r.responses[0].topic_id == tid and len(list(R.decode(part0(r).records))) == 1
    r = c.ask((M.FetchRequest, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": uuid.uuid4(),
                                                                                  "partitions": [
                                    {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}), 17)
    assert part0(r).error_code == E.UNKNOWN_TOPIC_ID


def test_list_offsets_every_kind(cluster):
    c = leader_client(cluster)
    T = 1_700_000_000_000
    c.ask(produce_request("one", 0, R.encode([(None, b"a", [], T), (None, b"b", [], T + 50)])), 12)
    c.ask(produce_request("one", 0, R.encode([(None, b"c", [], T + 10)])), 12)

    def at(ts):
        p = c.ask((M.ListOffsetsRequest, {"replica_id": -1, "topics": [
            {"name": "one", "partitions": [{"partition_index": 0, "timestamp": ts}]}]}), 9).topics[0].partitions[0]
        return p.timestamp, p.offset

    assert at(-2) == (-1, 0) and at(-1) == (-1, 3)
    assert at(-3) == (T + 50, 1)  # the batch with the largest timestamp: its last offset (Kafka's rule)
    assert at(T + 5) == (T + 50, 1) and at(T + 51) == (-1, -1)
    c.ask((M.DeleteRecordsRequest, {"topics": [{"name": "one", "partitions": [
        {"partition_index": 0, "offset": 2}]}], "timeout_ms": 1000}), 2)
    assert at(-2) == (-1, 2)
    assert part0(c.ask(fetch_request("one", 0, 0), 12)).error_code == E.OFFSET_OUT_OF_RANGE
    assert [r.value for r in cluster.records("one")] == [b"c"]


# -- faults ----------------------------------------------------------------------


def test_injected_errors_count_down(cluster):
    c = leader_client(cluster)
    cluster.inject_error("Produce", "NOT_ENOUGH_REPLICAS", count=2)
    codes = [part0(c.ask(produce_request("one", 0, batch()), 12)).error_code for _ in range(3)]
    assert codes == [E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS, 0]
    assert len(cluster.records("one")) == 3  # refused batches are not stored
    cluster.inject_error("Produce", E.KAFKA_STORAGE_ERROR, topic="t", partition=1)
    t1 = Client(cluster, cluster.leader("t", 1))
    assert part0(c.ask(produce_request("one", 0, batch()), 12)).error_code == 0  # another topic: untouched
    assert part0(t1.ask(produce_request("t", 1, batch()), 12)).error_code == E.KAFKA_STORAGE_ERROR
    assert part0(t1.ask(produce_request("t", 1, batch()), 12)).error_code == 0
    cluster.inject_error("FindCoordinator", E.COORDINATOR_NOT_AVAILABLE)
    r = c.ask((M.FindCoordinatorRequest, {"key": "g", "key_type": 0, "coordinator_keys": ["g"]}), 4)
    assert r.coordinators[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    cluster.inject_error("ApiVersions", E.UNKNOWN_SERVER_ERROR, broker=c and cluster.leader("one", 0))
    assert c.ask(M.ApiVersionsRequest(), 3).error_code == E.UNKNOWN_SERVER_ERROR


def test_latency_and_disconnections(cluster):
    c = leader_client(cluster)
    cluster.add_latency("Metadata", ms=200)
    t0 = time.monotonic()
    c.ask(M.MetadataRequest(topics=[]), 12)
    assert time.monotonic() - t0 >= 0.19
    cluster.clear_faults()
    cluster.disconnect("Metadata", mode="close")
    with pytest.raises(OSError):
        c.ask(M.MetadataRequest(topics=[]), 12)
    c = leader_client(cluster)
    cluster.disconnect("Metadata", mode="half_close")
    with pytest.raises(ConnectionError):
        c.ask(M.MetadataRequest(topics=[]), 12)
    c = leader_client(cluster)
    cluster.disconnect("Metadata", mode="drop")
    c.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        c.ask(M.MetadataRequest(topics=[]), 12)
    exchanges = cluster.requests("Metadata")
    assert [x.error for x in exchanges[-3:]] == ["connection close", "connection half_close", "dropped"]


def test_broker_down_and_back_moves_leaders(cluster):
    leader = cluster.leader("one", 0)
    cluster.stop_broker(leader)
    new = cluster.leader("one", 0)
    assert new != leader and new in cluster.brokers
    host, port = cluster.brokers[leader].split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2)
    md = Client(cluster, new).ask((M.MetadataRequest, {"topics": [{"name": "one"}]}), 12)
    assert leader not in [b.node_id for b in md.brokers]
    p = md.topics[0].partitions[0]
    assert (p.leader_id, p.leader_epoch, p.offline_replicas) == (new, 1, [leader])
    cluster.start_broker(leader)
    Client(cluster, leader).ask(M.ApiVersionsRequest(), 3)  # the same port again
    assert cluster.leader("one", 0) == new


def test_move_leader_fences_the_old_epoch(cluster):
    old = cluster.leader("one", 0)
    c = Client(cluster, old)
    c.ask(produce_request("one", 0, batch()), 12)
    new = next(n for n in cluster.brokers if n != old)
    cluster.move_leader("one", 0, new)
    assert part0(c.ask(produce_request("one", 0, batch()), 12)).error_code == E.NOT_LEADER_OR_FOLLOWER
    n = Client(cluster, new)
    assert part0(n.ask(fetch_request("one", 0, 0, epoch=0), 12)).error_code == E.FENCED_LEADER_EPOCH
    assert part0(n.ask(fetch_request("one", 0, 0, epoch=5), 12)).error_code == E.UNKNOWN_LEADER_EPOCH
    assert part0(n.ask(produce_request("one", 0, batch()), 12)).base_offset == 3
    r = n.ask((M.OffsetForLeaderEpochRequest, {"replica_id": -1, "topics": [{"topic": "one", "partitions": [
        {"partition": 0, "current_leader_epoch": 1, "leader_epoch": 0}]}]}), 4)
    assert (r.topics[0].partitions[0].leader_epoch, r.topics[0].partitions[0].end_offset) == (0, 3)
    stored = bytes(part0(n.ask(fetch_request("one", 0, 0, epoch=1), 12)).records)
    assert [b.partition_leader_epoch for b in R.decode(stored)] == [0, 1]


# -- groups and transactions ----------------------------------------------------------------


def coordinator(cluster, key, key_type=0):
    r = Client(cluster, 1).ask((M.FindCoordinatorRequest, {"key": key, "key_type": key_type,
                                                           "coordinator_keys": [key]}), 4)
    return Client(cluster, r.coordinators[0].node_id)


def test_classic_group_join_sync_commit(cluster):
    c = coordinator(cluster, "g")
    port = c.sock.getpeername()[1]
    wrong = Client(cluster, next(n for n, where in cluster.brokers.items() if where != f"127.0.0.1:{port}"))
    join = {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    assert wrong.ask((M.JoinGroupRequest, join), 9).error_code == E.NOT_COORDINATOR
    first = c.ask((M.JoinGroupRequest, join), 9)
    assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
    joined = c.ask((M.JoinGroupRequest, dict(join, member_id=first.member_id)), 9)
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, first.member_id)
    sync = c.ask((M.SyncGroupRequest, {"group_id": "g", "generation_id": 1, "member_id": first.member_id,
                                       "protocol_type": "consumer", "protocol_name": "range",
                                       "assignments": [{"member_id": first.member_id, "assignment": b"a"}]}), 5)
    assert bytes(sync.assignment) == b"a"
    commit = c.ask((M.OffsetCommitRequest, {"group_id": "g", "generation_id_or_member_epoch": 1,
                                            "member_id": first.member_id, "topics": [
                                                {"name": "one", "partitions": [
                                                    {"partition_index": 0, "committed_offset": 7}]}]}), 9)
    assert commit.topics[0].partitions[0].error_code == 0
    assert cluster.committed("g") == {("one", 0): 7}
    hb = c.ask((M.HeartbeatRequest, {"group_id": "g", "generation_id": 0, "member_id": first.member_id}), 4)
    assert hb.error_code == E.ILLEGAL_GENERATION
    d = c.ask((M.DescribeGroupsRequest, {"groups": ["g"]}), 5)
    assert d.groups[0].group_state == "Stable" and len(d.groups[0].members) == 1
    c.ask((M.LeaveGroupRequest, {"group_id": "g", "members": [{"member_id": first.member_id}]}), 5)
    d = c.ask((M.DeleteGroupsRequest, {"groups_names": ["g"]}), 2)
    assert d.results[0].error_code == 0


def test_classic_member_expires_after_its_session(cluster):
    c = coordinator(cluster, "g2")
    join = {"group_id": "g2", "session_timeout_ms": 6000, "rebalance_timeout_ms": 6000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    member = c.ask((M.JoinGroupRequest, join), 3).member_id  # v3: no member id round trip
    c.ask((M.SyncGroupRequest, {"group_id": "g2", "generation_id": 1, "member_id": member, "assignments": []}), 3)
    d = c.ask((M.DescribeGroupsRequest, {"groups": ["g2"]}), 5)
    assert d.groups[0].group_state == "Stable"
    time.sleep(7)
    d = c.ask((M.DescribeGroupsRequest, {"groups": ["g2"]}), 5)
    assert d.groups[0].group_state == "Empty"


def test_consumer_group_protocol_revokes_before_it_reassigns(cluster):
    c = coordinator(cluster, "cg")

    def hb(member, epoch, topics=None, owned=None):
        return c.ask((M.ConsumerGroupHeartbeatRequest, {
            "group_id": "cg", "member_id": member, "member_epoch": epoch, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": topics, "topic_partitions": owned}), 1)

    tid = {t.name: t.topic_id for t in Client(cluster, 1).ask(M.MetadataRequest(topics=None), 12).topics}
    a = hb("a", 0, ["t"], [])
    assert a.error_code == 0 and a.member_epoch == 1
    assert sorted(a.assignment.topic_partitions[0].partitions) == [0, 1, 2]
    b = hb("b", 0, ["t"], [])
    assert b.member_epoch == 2 and b.assignment.topic_partitions == []  # a still holds them all
    a = hb("a", 1)  # told to give up what b is to get (same epoch until it has)
    assert a.member_epoch == 1 and sorted(a.assignment.topic_partitions[0].partitions) == [0, 1]
    a = hb("a", 1, owned=[{"topic_id": tid["t"], "partitions": [0, 1]}])
    assert a.member_epoch == 2 and a.assignment is None
    b = hb("b", 2)
    assert b.assignment.topic_partitions[0].partitions == [2]
    assert hb("b", 1).error_code == E.FENCED_MEMBER_EPOCH
    d = c.ask((M.ConsumerGroupDescribeRequest, {"group_ids": ["cg"]}), 1)
    assert d.groups[0].group_state == "Stable" and d.groups[0].group_epoch == 2
    d = coordinator(cluster, "nope").ask((M.ConsumerGroupDescribeRequest, {"group_ids": ["nope"]}), 1)
    assert d.groups[0].error_code == E.GROUP_ID_NOT_FOUND
    commit = c.ask((M.OffsetCommitRequest, {"group_id": "cg", "generation_id_or_member_epoch": 1,
                                            "member_id": "b", "topics": [{"name": "t", "partitions": [
                                                {"partition_index": 2, "committed_offset": 1}]}]}), 9)
    assert commit.topics[0].partitions[0].error_code == E.STALE_MEMBER_EPOCH
    listed = c.ask((M.ListGroupsRequest, {"types_filter": ["consumer"]}), 5)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [("cg", "consumer")]
    hb("a", -1)
    assert hb("b", 2).assignment.topic_partitions[0].partitions == [0, 1, 2]


def test_transaction_commit_abort_and_read_committed(cluster):
    txc = coordinator(cluster, "tx", key_type=1)
    c = leader_client(cluster)
    init = txc.ask((M.InitProducerIdRequest, {"transactional_id": "tx", "transaction_timeout_ms": 60000}), 4)
    pid, epoch = init.producer_id, init.producer_epoch

    def add():
        r = txc.ask((M.AddPartitionsToTxnRequest, {"v3_and_below_transactional_id": "tx",
                                                   "v3_and_below_producer_id": pid,
                                                   "v3_and_below_producer_epoch": epoch,
                                                   "v3_and_below_topics": [{"name": "one", "partitions": [0]}]}), 3)
        return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code

    def send(seq, value):
        blob = R.encode([(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                        transactional=True)
        return part0(c.ask(produce_request("one", 0, blob, transactional_id="tx"), 11)).error_code

    def end(commit):
        return txc.ask((M.EndTxnRequest, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch,
                                          "committed": commit}), 4).error_code

    assert send(0, b"early") == E.INVALID_TXN_STATE  # not added to a transaction yet
    assert add() == 0 and send(0, b"kept") == 0 and end(True) == 0
    assert add() == 0 and send(1, b"dropped") == 0
    r = c.ask(fetch_request("one", 0, 0, isolation=1), 12)
    assert part0(r).last_stable_offset == 2  # the open transaction holds read_committed back
    assert end(False) == 0 and end(False) == 0  # a retried EndTxn is answered again
    assert end(True) == E.INVALID_TXN_STATE
    r = c.ask(fetch_request("one", 0, 0, isolation=1), 12)
    p = part0(r)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(pid, 2)]
    assert [x.value for x in cluster.records("one", committed=True)] == [b"kept"]
    assert [x.value for x in cluster.records("one")] == [b"kept", b"dropped"]
    listed = txc.ask(M.ListTransactionsRequest(), 1)
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [("tx", "CompleteAbort")]
    # a new producer for the id fences the old one (PRODUCER_FENCED since EndTxn v2, KIP-588)
    txc.ask((M.InitProducerIdRequest, {"transactional_id": "tx", "transaction_timeout_ms": 60000}), 4)
    assert end(True) == E.PRODUCER_FENCED
    r = txc.ask((M.EndTxnRequest, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch,
                                   "committed": True}), 1)
    assert r.error_code == E.INVALID_PRODUCER_EPOCH


def test_transactions_version_2(cluster):
    """KIP-890: Produce v12+ adds the partition itself, EndTxn v5 bumps the epoch."""
    txc = coordinator(cluster, "tx2", key_type=1)
    c = leader_client(cluster)
    init = txc.ask((M.InitProducerIdRequest, {"transactional_id": "tx2", "transaction_timeout_ms": 60000}), 5)
    pid, epoch = init.producer_id, init.producer_epoch

    def send(epoch, value):
        blob = R.encode([(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
        return part0(c.ask(produce_request("one", 0, blob, transactional_id="tx2"), 12)).error_code

    assert send(epoch, b"one") == 0
    end = txc.ask((M.EndTxnRequest, {"transactional_id": "tx2", "producer_id": pid, "producer_epoch": epoch,
                                     "committed": True}), 5)
    assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
    again = txc.ask((M.EndTxnRequest, {"transactional_id": "tx2", "producer_id": pid, "producer_epoch": epoch,
                                       "committed": True}), 5)
    assert (again.error_code, again.producer_epoch) == (0, epoch + 1)  # a retry
    other = txc.ask((M.EndTxnRequest, {"transactional_id": "tx2", "producer_id": pid, "producer_epoch": epoch,
                                       "committed": False}), 5)
    assert other.error_code == E.INVALID_TXN_STATE  # not a retry: the other outcome
    assert send(epoch, b"stale") == E.INVALID_PRODUCER_EPOCH
    assert send(epoch + 1, b"two") == 0  # the new epoch starts its sequences at 0
    txc.ask((M.EndTxnRequest, {"transactional_id": "tx2", "producer_id": pid, "producer_epoch": epoch + 1,
                               "committed": False}), 5)
    assert [r.value for r in cluster.records("one", committed=True)] == [b"one"]
    stored = list(R.decode(bytes(part0(c.ask(fetch_request("one", 0, 0), 12)).records)))
    assert [(b.is_control, b.producer_epoch) for b in stored] == [(False, 0), (True, 1), (False, 1), (True, 2)]


# -- admin -------------------------------------------------------------------------


def test_topics_and_configs(cluster):
    c = Client(cluster, 1)
    r = c.ask((M.CreateTopicsRequest, {"topics": [
        {"name": "new", "num_partitions": 2, "replication_factor": 2, "configs": [
            {"name": "retention.ms", "value": "1000"}]},
        {"name": "t", "num_partitions": 1, "replication_factor": 1},
        {"name": "bad name", "num_partitions": 1, "replication_factor": 1},
        {"name": "toomany", "num_partitions": 1, "replication_factor": 4}], "timeout_ms": 1000}), 7)
    assert [t.error_code for t in r.topics] == [0, E.TOPIC_ALREADY_EXISTS, E.INVALID_TOPIC_EXCEPTION,
                                                E.INVALID_REPLICATION_FACTOR]
    configs = {x.name: (x.value, x.config_source) for x in r.topics[0].configs}
    assert configs["retention.ms"] == ("1000", 1) and configs["cleanup.policy"] == ("delete", 5)
    r = c.ask((M.CreatePartitionsRequest, {"topics": [{"name": "new", "count": 4}, {"name": "new2", "count": 4}],
                                           "timeout_ms": 1000}), 3)
    assert [x.error_code for x in r.results] == [0, E.UNKNOWN_TOPIC_OR_PARTITION]
    assert cluster.topics()["new"] == 4
    r = c.ask((M.IncrementalAlterConfigsRequest, {"resources": [{"resource_type": 2, "resource_name": "new",
                                                                 "configs": [
        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
        {"name": "retention.ms", "config_operation": 1}]}]}), 1)
    assert r.responses[0].error_code == 0
    d = c.ask((M.DescribeConfigsRequest, {"resources": [{"resource_type": 2, "resource_name": "new",
                                                        "configuration_keys": ["cleanup.policy", "retention.ms"]}]}),
              4)
    assert {x.name: x.value for x in d.results[0].configs} == {"cleanup.policy": "delete,compact",
                                                               "retention.ms": "604800000"}
    r = c.ask((M.DeleteTopicsRequest, {"topics": [{"name": "new"}, {"name": "gone"}], "timeout_ms": 1000}), 6)
    assert [x.error_code for x in r.responses] == [0, E.UNKNOWN_TOPIC_OR_PARTITION]
    assert "new" not in cluster.topics()


# -- SASL --------------------------------------------------------------------------


def _scram_client(mechanism, user, password):
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    nonce = base64.b64encode(os.urandom(12)).decode()
    bare = f"n={user},r={nonce}"
    first = yield ("n,," + bare).encode()
    attrs = dict(a.split("=", 1) for a in first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    without = f"c=biws,r={attrs['r']}"
    message = f"{bare},{first.decode()},{without}".encode()
    sig = hmac.new(hashlib.new(algo, client_key).digest(), message, algo).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()
    final = yield f"{without},p={proof}".encode()
    server_key = hmac.new(salted, b"Server Key", algo).digest()
    assert final.decode() == "v=" + base64.b64encode(hmac.new(server_key, message, algo).digest()).decode()
    yield None


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl(mechanism):
    with MockCluster(brokers=1, users={"alice": "secret"}) as cluster:
        c = Client(cluster, 1)
        assert c.ask((M.SaslHandshakeRequest, {"mechanism": mechanism}), 1).error_code == 0
        if mechanism == "PLAIN":
            r = c.ask((M.SaslAuthenticateRequest, {"auth_bytes": b"\0alice\0secret"}), 2)
            assert r.error_code == 0
        else:
            steps = _scram_client(mechanism, "alice", "secret")
            token = next(steps)
            while token is not None:
                r = c.ask((M.SaslAuthenticateRequest, {"auth_bytes": token}), 2)
                assert r.error_code == 0, r
                token = steps.send(bytes(r.auth_bytes))
        assert c.ask(M.MetadataRequest(topics=[]), 12).brokers
        # a wrong password fails and closes; skipping authentication closes
        bad = Client(cluster, 1)
        bad.ask((M.SaslHandshakeRequest, {"mechanism": "PLAIN"}), 1)
        r = bad.ask((M.SaslAuthenticateRequest, {"auth_bytes": b"\0alice\0nope"}), 2)
        assert r.error_code == E.SASL_AUTHENTICATION_FAILED
        with pytest.raises(OSError):
            bad.ask(M.MetadataRequest(topics=[]), 12)
        skip = Client(cluster, 1)
        with pytest.raises(OSError):
            skip.ask(M.MetadataRequest(topics=[]), 12)


# -- what a test reads back ------------------------------------------------------------------


def test_requests_are_recorded_decoded(cluster):
    c = leader_client(cluster)
    c.ask(produce_request("one", 0, batch()), 12)
    (x,) = cluster.requests(api="Produce")
    assert x.api == "Produce" and x.api_version == 12 and x.client_id == "test"
    assert x.request.topic_data[0].name == "one" and x.response.responses[0].partition_responses[0].error_code == 0
    assert cluster.requests(api="Produce", broker=x.broker) == [x]
    assert cluster.responses("Produce") == [x.response]
    cluster.clear_requests()
    assert cluster.requests() == []


def test_write_log_reads_back_with_kafkaproto_log(cluster, tmp_path):
    c = leader_client(cluster)
    T = 1_700_000_000_000
    for i in range(200):  # enough bytes for index entries
        c.ask(produce_request("one", 0, R.encode([(b"k%d" % i, b"x" * 100, [], T + i)],
                                                 codec=("none", "gzip", "zstd")[i % 3])), 12)
    folder = cluster.write_log(tmp_path)
    files = sorted(p.name for p in (folder / "one-0").iterdir())
    assert files == ["00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"]
    assert (folder / "one-0" / "00000000000000000000.index").stat().st_size > 0
    table = log.open_log(str(folder), topics=["one"]).read_table()
    assert table.num_rows == 200 and table.column("offset").to_pylist() == list(range(200))
    assert [bytes(k) for k in table.column("key").to_pylist()[:2]] == [b"k0", b"k1"]


def test_write_log_keeps_aborted_transactions(cluster, tmp_path):
    txc = coordinator(cluster, "wl", key_type=1)
    c = leader_client(cluster)
    init = txc.ask((M.InitProducerIdRequest, {"transactional_id": "wl", "transaction_timeout_ms": 60000}), 5)
    pid, epoch = init.producer_id, init.producer_epoch
    c.ask(produce_request("one", 0, batch(2)), 12)
    blob = R.encode([(b"t", b"aborted")], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    assert part0(c.ask(produce_request("one", 0, blob, transactional_id="wl"), 12)).error_code == 0
    txc.ask((M.EndTxnRequest, {"transactional_id": "wl", "producer_id": pid, "producer_epoch": epoch,
                               "committed": False}), 5)
    c.ask(produce_request("one", 0, batch(1, start=5)), 12)
    folder = cluster.write_log(tmp_path)
    txn = (folder / "one-0" / "00000000000000000000.txnindex").read_bytes()
    assert txn == struct.pack(">hqqqq", 0, pid, 2, 3, 4)  # version, producer, first, marker, last stable offset
    kl = log.open_log(str(folder), topics=["one"])
    committed = kl.read_table(["offset", "value"], isolation="read_committed")
    assert committed.column("value").to_pylist() == [b"v0", b"v1", b"v5"]
    assert kl.read_table(["value"]).column("value").to_pylist() == [b"v0", b"v1", b"aborted", b"v5"]


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(cluster):
    txc = coordinator(cluster, "slow", key_type=1)
    c = leader_client(cluster)
    init = txc.ask((M.InitProducerIdRequest, {"transactional_id": "slow", "transaction_timeout_ms": 600}), 5)
    pid, epoch = init.producer_id, init.producer_epoch
    blob = R.encode([(b"t", b"late")], producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    assert part0(c.ask(produce_request("one", 0, blob, transactional_id="slow"), 12)).error_code == 0
    time.sleep(1.8)  # the timeout, and the coordinator's next look (twice a second)
    end = txc.ask((M.EndTxnRequest, {"transactional_id": "slow", "producer_id": pid, "producer_epoch": epoch,
                                     "committed": True}), 5)
    assert end.error_code == E.PRODUCER_FENCED
    assert cluster.records("one", committed=True) == [] and len(cluster.records("one")) == 1


def test_write_log_reads_back_with_kafka_dump_log_segments(cluster, tmp_path):
    kb = pytest.importorskip("peers.kafka_broker")
    try:
        kb.ensure_kafka()
    except Exception as exc:  # noqa: BLE001
        if os.environ.get("KAFKAPROTO_REQUIRE_PEERS") == "1":
            raise
        pytest.skip(f"Kafka's jars: {exc}")
    c = leader_client(cluster)
    T = 1_700_000_000_000
    for i in range(60):
        c.ask(produce_request("one", 0, R.encode([(b"k%d" % i, b"y" * 200, [], T + i)],
                                                 codec=("none", "snappy", "lz4")[i % 3])), 12)
    folder = cluster.write_log(tmp_path)
    stem = folder / "one-0" / "00000000000000000000"
    out = kb.run_kafka_tool("org.apache.kafka.tools.DumpLogSegments", "--files",
                            f"{stem}.log,{stem}.index,{stem}.timeindex", "--deep-iteration")
    text = out.stdout
    assert out.returncode == 0, out.stderr
    assert text.count("| offset: ") == 60 and "isvalid: true" in text and "isvalid: false" not in text
    assert "Mismatches" not in text and "mismatch" not in text.lower(), text[-2000:]
    assert f"offset: 59 CreateTime: {T + 59}" in text


# -- the command line ----------------------------------------------------------------


def test_command_line_prints_the_bootstrap_and_serves():
    proc = subprocess.Popen([sys.executable, "-m", "kafkaproto", "mock", "--brokers", "2", "--topic", "x:2",
                             "--until-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        hosts = line.split(",")
        assert len(hosts) == 2 and all(h.startswith("127.0.0.1:") for h in hosts)
        host, port = hosts[0].split(":")
        with socket.create_connection((host, int(port)), timeout=5):
            pass
    finally:
        proc.stdin.close()
        assert proc.wait(10) == 0


def test_command_line_refuses_bad_arguments():
    r = subprocess.run([sys.executable, "-m", "kafkaproto", "mock", "--topic", "x:y"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--topic" in r.stderr


# -- the pytest plugin (its fixtures, without a client library) ---------------------------------------


@pytest.mark.kafka_mock(brokers=2, topics={"m": 2}, errors=[("Metadata", "UNKNOWN_SERVER_ERROR")],
                        latency={"ApiVersions": 100})
def test_the_marker_makes_the_cluster(kafka_mock):
    assert len(kafka_mock.brokers) == 2 and kafka_mock.topics() == {"m": 2}
    c = Client(kafka_mock, 1)
    t0 = time.monotonic()
    c.ask(M.ApiVersionsRequest(), 3)
    assert time.monotonic() - t0 >= 0.09
    md = c.ask(M.MetadataRequest(topics=None), 12)
    assert md.topics[0].error_code == E.UNKNOWN_SERVER_ERROR
    assert c.ask(M.MetadataRequest(topics=None), 12).topics[0].error_code == 0


@pytest.mark.parametrize("kafka_mock", [1, {"brokers": 3, "partitions": 4}], indirect=True)
def test_the_fixture_is_parametrized(kafka_mock):
    md = Client(kafka_mock, 1).ask((M.MetadataRequest, {"topics": [{"name": "auto"}]}), 12)
    assert len(md.brokers) == len(kafka_mock.brokers)
    assert len(md.topics[0].partitions) == (4 if len(kafka_mock.brokers) == 3 else 1)


def test_the_factory_and_the_session_cluster(kafka_mock_factory, kafka_mock_session):
    a, b = kafka_mock_factory(brokers=1), kafka_mock_factory(brokers=2, users={"u": "p"})
    assert a.bootstrap != b.bootstrap and len(b.brokers) == 2
    assert len(kafka_mock_session.brokers) == 3
    kafka_mock_session.add_latency(ms=1)  # cleared after this test


def test_a_handler_that_fails_answers_unknown_server_error(cluster, capsys):
    def broken(ctx, m, v):
        raise RuntimeError("a bug")

    cluster._call(cluster._cluster.handlers.__setitem__, 60, broken)  # DescribeCluster
    c = Client(cluster, 1)
    assert c.ask(M.DescribeClusterRequest(), 1).error_code == E.UNKNOWN_SERVER_ERROR
    assert c.ask(M.ApiVersionsRequest(), 3).error_code == 0  # the connection goes on
    (x,) = cluster.requests("DescribeCluster")
    assert x.error == "RuntimeError: a bug" and "RuntimeError" in capsys.readouterr().err


def test_a_member_commits_while_the_group_prepares_a_rebalance(cluster):
    """Eager clients commit as they give their partitions up, when a new member joins (Kafka accepts it;
    only a rebalance being completed refuses commits)."""
    c = coordinator(cluster, "eager")
    join = {"group_id": "eager", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    first = c.ask((M.JoinGroupRequest, join), 3)
    c.ask((M.SyncGroupRequest, {"group_id": "eager", "generation_id": 1, "member_id": first.member_id,
                                "assignments": [{"member_id": first.member_id, "assignment": b"a"}]}), 3)
    other = coordinator(cluster, "eager")
    other.ask((M.JoinGroupRequest, join), 3, expect=False)  # waits for the first member to rejoin
    time.sleep(0.2)

    def commit():
        r = c.ask((M.OffsetCommitRequest, {"group_id": "eager", "generation_id_or_member_epoch": 1,
                                           "member_id": first.member_id, "topics": [{"name": "one", "partitions": [
                                               {"partition_index": 0, "committed_offset": 5}]}]}), 8)
        return r.topics[0].partitions[0].error_code

    assert c.ask((M.HeartbeatRequest, {"group_id": "eager", "generation_id": 1, "member_id": first.member_id}),
                 3).error_code == E.REBALANCE_IN_PROGRESS
    assert commit() == 0 and cluster.committed("eager") == {("one", 0): 5}


def test_a_member_that_joins_again_unchanged_starts_no_rebalance(cluster):
    """Kafka's rule: a follower's JoinGroup with the same metadata, in a Stable group, gets the
    current generation back; the other members go on (their heartbeats are answered NONE)."""
    join = {"group_id": "again", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"m"}]}
    a, b = coordinator(cluster, "again"), coordinator(cluster, "again")
    first = a.ask((M.JoinGroupRequest, join), 3)
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("b", b.ask((M.JoinGroupRequest, join), 3)))
    t.start()
    time.sleep(0.3)  # b waits for a to join again
    first = a.ask((M.JoinGroupRequest, dict(join, member_id=first.member_id)), 3)
    t.join(10)
    second = got["b"]
    assert first.generation_id == second.generation_id == 2 and first.leader == first.member_id
    t = threading.Thread(target=lambda: got.setdefault("sync", b.ask((M.SyncGroupRequest, {
        "group_id": "again", "generation_id": 2, "member_id": second.member_id, "assignments": []}), 3)))
    t.start()
    a.ask((M.SyncGroupRequest, {"group_id": "again", "generation_id": 2, "member_id": first.member_id,
                                "assignments": [{"member_id": first.member_id, "assignment": b"x"},
                                                {"member_id": second.member_id, "assignment": b"y"}]}), 3)
    t.join(10)
    assert bytes(got["sync"].assignment) == b"y"
    again = b.ask((M.JoinGroupRequest, dict(join, member_id=second.member_id)), 3)
    assert (again.error_code, again.generation_id, again.members) == (0, 2, [])
    hb = a.ask((M.HeartbeatRequest, {"group_id": "again", "generation_id": 2, "member_id": first.member_id}), 3)
    assert hb.error_code == 0


def test_offset_delete_refuses_a_topic_a_classic_member_subscribes_to(cluster):
    """Kafka: OffsetDelete of a topic that a member of the (classic, consumer) group subscribes to is
    GROUP_SUBSCRIBED_TO_TOPIC; a topic no member subscribes to is deleted."""
    c = coordinator(cluster, "od")
    sub = M.ConsumerProtocolSubscription(topics=["one"])
    meta = struct.pack(">h", 1) + sub.encode(1)
    join = {"group_id": "od", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": meta}]}
    member = c.ask((M.JoinGroupRequest, join), 3).member_id
    c.ask((M.SyncGroupRequest, {"group_id": "od", "generation_id": 1, "member_id": member, "assignments": []}), 3)
    for topic in ("one", "t"):
        c.ask((M.OffsetCommitRequest, {"group_id": "od", "generation_id_or_member_epoch": 1, "member_id": member,
                                       "topics": [{"name": topic, "partitions": [
                                           {"partition_index": 0, "committed_offset": 1}]}]}), 8)
    r = c.ask((M.OffsetDeleteRequest, {"group_id": "od", "topics": [
        {"name": "one", "partitions": [{"partition_index": 0}]},
        {"name": "t", "partitions": [{"partition_index": 0}]}]}), 0)
    assert r.error_code == 0
    assert [t.partitions[0].error_code for t in r.topics] == [E.GROUP_SUBSCRIBED_TO_TOPIC, 0]
    assert cluster.committed("od") == {("one", 0): 1}
