"""The example broker (examples/mini_broker.py) serving real clients:
confluent-kafka, kafka-python and aiokafka produce with every codec (acks=0
and idempotent producers included) and read back, by assignment and through
consumer groups, with offsets committed and resumed."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kafkaproto import ErrorCode
from kafkaproto.messages import JoinGroupRequest, MetadataRequest
from kafkaproto.protocol import api_versions_handshake, send_request
from peers import clients

pytestmark = [pytest.mark.peers, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

BROKER = Path(__file__).resolve().parent.parent / "examples" / "mini_broker.py"
CLIENTS = ("confluent", "kafka_python", "aiokafka")
PARTITIONS = 3


@contextlib.contextmanager
def mini_broker(tmp_path, *args):
    """The example as a child process → its bootstrap address; its stderr must stay clean."""
    stderr = tmp_path / "mini_broker.stderr"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen([sys.executable, str(BROKER), "--listen", "127.0.0.1:0", *args],
                                stdout=subprocess.PIPE, stderr=err)
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("listening on "), (line, stderr.read_text())
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
    assert "Traceback" not in stderr.read_text(), stderr.read_text()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with mini_broker(tmp_path_factory.mktemp("broker"), "--partitions", str(PARTITIONS)) as bootstrap:
        yield bootstrap


def some_records(n, tag=b""):
    return [{"key": b"k%d" % i + tag, "value": tag + b"v" * (i * 40), "headers": [("h", b"%d" % i), ("h", b"")]}
            for i in range(n)]


def by_position(records):
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


# --------------------------------------------------------------------------
# consumers in a group (subscribe, commit, close)


def _record(key, value, headers, ts, ts_type, partition, offset):
    return {"key": key, "value": value, "headers": list(headers or []), "timestamp_ms": ts,
            "timestamp_type": ts_type, "partition": partition, "offset": offset}


def group_confluent(bootstrap, topic, group, n, timeout=20.0):
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    consumer.subscribe([topic])
    out, deadline = [], time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert not msg.error(), msg.error()
            ts_type, ts = msg.timestamp()
            out.append(_record(msg.key(), msg.value(), msg.headers(), ts, ts_type - 1, msg.partition(),
                               msg.offset()))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return by_position(out)


def group_kafka_python(bootstrap, topic, group, n, timeout=20.0):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    out, deadline = [], time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=200).values():
                out += [_record(m.key, m.value, m.headers, m.timestamp, m.timestamp_type, m.partition, m.offset)
                        for m in msgs]
        consumer.commit()
    finally:
        consumer.close()
    return by_position(out)


def group_aiokafka(bootstrap, topic, group, n, timeout=20.0):
    from aiokafka import AIOKafkaConsumer

    async def run():
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
        await consumer.start()
        out, deadline = [], time.monotonic() + timeout
        try:
            while len(out) < n and time.monotonic() < deadline:
                for msgs in (await consumer.getmany(timeout_ms=200)).values():
                    out += [_record(m.key, m.value, m.headers, m.timestamp, m.timestamp_type, m.partition,
                                    m.offset) for m in msgs]
            await consumer.commit()
        finally:
            await consumer.stop()
        return out

    return by_position(asyncio.run(run()))


GROUP_CONSUMERS = {"confluent": group_confluent, "kafka_python": group_kafka_python, "aiokafka": group_aiokafka}


# --------------------------------------------------------------------------
# produce with every codec


@pytest.mark.parametrize("codec", clients.CODECS)
@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_produces_with_every_codec(broker, client, codec):
    # kafka-python is idempotent by default (InitProducerId); librdkafka is asked to be
    config = {"enable.idempotence": True} if client == "confluent" else None
    topic = clients.unique_topic("mini")
    assert clients.create_topic(broker, topic, partitions=2) == 2
    before = int(time.time() * 1000)
    sent = clients.produce(client, broker, topic, some_records(6), codec, partition=1, timeout=20, config=config)
    assert [r["offset"] for r in sent] == list(range(6))
    got = clients.consume_confluent(broker, topic, len(sent), timeout=20, partitions=[1])
    clients.assert_same_records(sent, got, sent_between=(before, int(time.time() * 1000)))
    assert {r["timestamp_type"] for r in got} == {0}


@pytest.mark.parametrize("client", CLIENTS)
def test_acks_0_records_arrive(broker, client):
    topic = clients.unique_topic("acks0")
    sent = clients.produce(client, broker, topic, some_records(5), "gzip", timeout=20, config={"acks": 0})
    got = clients.consume_confluent(broker, topic, len(sent), timeout=20, partitions=[0])
    clients.assert_same_records(sent, got, compare_offsets=False)  # nobody told the producer the offsets
    assert [r["offset"] for r in got] == list(range(5))


# --------------------------------------------------------------------------
# consumer groups


@pytest.mark.parametrize("client", CLIENTS)
def test_a_group_consumes_then_resumes_from_its_committed_offsets(broker, client):
    producer = CLIENTS[(CLIENTS.index(client) + 1) % len(CLIENTS)]
    topic, group = clients.unique_topic("group"), f"g-{uuid.uuid4().hex[:8]}"
    first = clients.produce(producer, broker, topic, some_records(12), "lz4", partition=None, timeout=20)
    assert len({r["partition"] for r in first}) > 1  # auto-created with PARTITIONS partitions, keys spread
    consume = GROUP_CONSUMERS[client]
    clients.assert_same_records(by_position(first), consume(broker, topic, group, len(first)))
    second = clients.produce(producer, broker, topic, some_records(4, b"-again"), "snappy", partition=None,
                             timeout=20)
    # a new member of the same group starts where the first committed
    clients.assert_same_records(by_position(second), consume(broker, topic, group, len(second)))


def test_two_members_share_the_partitions(broker):
    from confluent_kafka import Consumer

    topic, group = clients.unique_topic("pair"), f"g-{uuid.uuid4().hex[:8]}"
    sent = clients.produce("confluent", broker, topic, some_records(30), "zstd", partition=None, timeout=20)
    conf = {"bootstrap.servers": broker, "group.id": group, "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100, "heartbeat.interval.ms": 200}
    members = [Consumer(conf), Consumer(conf)]
    got = set()  # (partition, offset): a partition handed over may be read again from its last commit
    try:
        for c in members:
            c.subscribe([topic])
        deadline = time.monotonic() + 30
        # both must hold partitions at once: the first member gives some up when the second joins
        while time.monotonic() < deadline and not (all(c.assignment() for c in members) and len(got) == len(sent)):
            for c in members:
                msg = c.poll(0.05)
                if msg is not None and not msg.error():
                    got.add((msg.partition(), msg.offset()))
        assignments = [{tp.partition for tp in c.assignment()} for c in members]
    finally:
        for c in members:
            c.close()
    assert all(assignments) and not assignments[0] & assignments[1], assignments
    assert assignments[0] | assignments[1] == set(range(PARTITIONS))
    assert sorted(got) == sorted((r["partition"], r["offset"]) for r in sent)


# --------------------------------------------------------------------------
# the broker's own behaviour


def test_too_new_api_versions_gets_the_kip_511_reply_and_a_retry(broker):
    host, port = broker.rsplit(":", 1)
    used, versions = api_versions_handshake(host, int(port))  # the library asks with its newest (5) first
    assert used == 3
    keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert keys[18] == (0, 3) and keys[0] == (3, 12) and keys[1] == (4, 12)


def test_answers_without_a_client_library(broker):
    host, port = broker.rsplit(":", 1)
    port = int(port)
    # Metadata v13 is a version the library speaks but the broker does not advertise
    assert send_request(host, port, MetadataRequest(topics=None), 13).error_code == ErrorCode.UNSUPPORTED_VERSION
    P = JoinGroupRequest.JoinGroupRequestProtocol
    join = JoinGroupRequest(group_id=f"g-{uuid.uuid4().hex[:8]}", session_timeout_ms=10000, rebalance_timeout_ms=1000,
                            protocol_type="consumer", protocols=[P(name="range", metadata=b"m1")])
    first = send_request(host, port, join, 9)  # alone in the group: leader at once, with its own metadata
    assert (first.error_code, first.generation_id, first.leader) == (0, 1, first.member_id)
    assert [(m.member_id, m.metadata) for m in first.members] == [(first.member_id, b"m1")]
    join.protocols = [P(name="roundrobin", metadata=b"m2")]
    assert send_request(host, port, join, 9).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_log_append_time(tmp_path):
    with mini_broker(tmp_path, "--log-append-time") as bootstrap:
        topic = clients.unique_topic("lat")
        before = int(time.time() * 1000)
        sent = clients.produce("aiokafka", bootstrap, topic, some_records(3), "zstd", timeout=20)
        got = clients.consume_confluent(bootstrap, topic, len(sent), timeout=20)
        after = int(time.time() * 1000)
    clients.assert_same_records(sent, got)
    assert {r["timestamp_type"] for r in got} == {1}
    assert all(before <= r["timestamp_ms"] <= after for r in got)


# --------------------------------------------------------------------------
# every version the broker advertises, with the library as the client


def at_version(msg, version):
    # encode_request has no lenient=True: a request object with fields a version
    # lacks is made fit for it by a lenient body round trip
    return type(msg).decode(msg.encode(version, lenient=True), version)


def test_every_advertised_version_is_answered(broker):
    from kafkaproto import messages as M
    from kafkaproto import records

    host, port = broker.rsplit(":", 1)
    _, answer = api_versions_handshake(host, int(port))
    advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    def call(msg, step):
        lo, hi = advertised[msg.API_KEY]
        version = min(lo + step, hi)
        return send_request(host, int(port), at_version(msg, version), version)

    steps = max(hi - lo for lo, hi in advertised.values()) + 1
    for step in range(steps):
        topic, group = clients.unique_topic("versions"), f"g-{uuid.uuid4().hex[:8]}"
        created = call(M.CreateTopicsRequest(topics=[M.CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=2, replication_factor=1)]), step)
        assert created.topics[0].error_code == 0
        meta = call(M.MetadataRequest(topics=[M.MetadataRequest.MetadataRequestTopic(name=topic)]), step)
        assert [len(t.partitions) for t in meta.topics] == [2] and meta.brokers[0].port == int(port)
        P = M.ProduceRequest
        blob = records.encode([(b"k", b"v%d" % step), (None, b"w")], codec="gzip")
        produced = call(P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(name=topic, partition_data=[
            P.PartitionProduceData(index=1, records=blob)])]), step)
        assert produced.responses[0].partition_responses[0].error_code == 0
        F = M.FetchRequest
        fetched = call(F(max_wait_ms=0, max_bytes=1 << 20, topics=[F.FetchTopic(topic=topic, partitions=[
            F.FetchPartition(partition=1, fetch_offset=1, partition_max_bytes=1 << 20)])]), step)
        part = fetched.responses[0].partitions[0]
        assert part.high_watermark == 2 and [r.value for b in records.decode(part.records) for r in b] == [
            b"v%d" % step, b"w"]
        L = M.ListOffsetsRequest
        listed = call(L(replica_id=-1, topics=[L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsPartition(partition_index=1, timestamp=-1)])]), step)
        assert listed.topics[0].partitions[0].offset == 2
        assert call(M.InitProducerIdRequest(transactional_id=None), step).producer_id >= 0
        coordinator = call(M.FindCoordinatorRequest(key=group, coordinator_keys=[group]), step)
        assert int(port) in (coordinator.port, *(c.port for c in coordinator.coordinators))
        # a group of one, every api at this step's version
        J = M.JoinGroupRequest
        joined = call(J(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=1000, protocol_type="consumer",
                        protocols=[J.JoinGroupRequestProtocol(name="range", metadata=b"meta")]), step)
        me, generation = joined.member_id, joined.generation_id
        assert joined.error_code == 0 and joined.leader == me and joined.members[0].metadata == b"meta"
        S = M.SyncGroupRequest
        synced = call(S(group_id=group, generation_id=generation, member_id=me, protocol_type="consumer",
                        protocol_name="range", assignments=[S.SyncGroupRequestAssignment(member_id=me,
                                                                                         assignment=b"mine")]), step)
        assert (synced.error_code, synced.assignment) == (0, b"mine")
        assert call(M.HeartbeatRequest(group_id=group, generation_id=generation, member_id=me), step).error_code == 0
        C = M.OffsetCommitRequest
        committed = call(C(group_id=group, generation_id_or_member_epoch=generation, member_id=me, topics=[
            C.OffsetCommitRequestTopic(name=topic, partitions=[C.OffsetCommitRequestPartition(
                partition_index=1, committed_offset=2, committed_metadata="m")])]), step)
        assert committed.topics[0].partitions[0].error_code == 0
        OF = M.OffsetFetchRequest
        offsets = call(OF(group_id=group, topics=[OF.OffsetFetchRequestTopic(name=topic, partition_indexes=[0, 1])]),
                       step)
        assert [(p.committed_offset, p.metadata) for p in offsets.topics[0].partitions] == [(-1, ""), (2, "m")]
        left = call(M.LeaveGroupRequest(group_id=group, member_id=me, members=[
            M.LeaveGroupRequest.MemberIdentity(member_id=me)]), step)
        assert left.error_code == 0
