"""The example broker (examples/mini_broker.py: kafkaproto.mock with one broker) serving real clients:
confluent-kafka, kafka-python and aiokafka produce with every codec (acks=0
and idempotent producers included) and read back, by assignment and through
consumer groups, with offsets committed and resumed; they commit and abort
transactions that read_committed consumers honour, and their admin clients
list and describe groups and describe configs."""

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
from kafkaproto import messages as M
from kafkaproto import records as R
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


GROUP_CONSUMERS = clients.GROUP_CONSUMERS

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
# transactions: (records, offsets to commit for the group, commit?) each


TRANSACT = clients.TRANSACTIONAL
READ_COMMITTED = {client: lambda b, t, n, client=client: clients.consume(
    client, b, t, n, timeout=20, partitions=[0], config=clients.READ_COMMITTED[client]) for client in CLIENTS}


def committed_offset(bootstrap, group, topic, partition):
    host, port = bootstrap.rsplit(":", 1)
    OF = M.OffsetFetchRequest
    got = send_request(host, int(port), OF(group_id=group, topics=[OF.OffsetFetchRequestTopic(
        name=topic, partition_indexes=[partition])]), 7)
    return got.topics[0].partitions[0].committed_offset


@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_commit_and_abort(broker, client):
    topic, group = clients.unique_topic("txn"), f"g-{uuid.uuid4().hex[:8]}"
    assert clients.create_topic(broker, topic, partitions=1) == 1
    first, dropped, last = some_records(3, b"-first"), some_records(2, b"-aborted"), some_records(2, b"-last")
    TRANSACT[client](broker, topic, group, [(first, {("in", 0): 5}, True), (dropped, {("in", 0): 9}, False),
                                            (last, {("in", 1): 2}, True)])
    values = [r["value"] for r in first + last]
    # a read_committed consumer of the same client: the aborted records, between the others, never show
    assert [r["value"] for r in READ_COMMITTED[client](broker, topic, len(values))] == values
    everything = clients.consume_confluent(broker, topic, 7, timeout=20, partitions=[0],
                                           config={"isolation.level": "read_uncommitted"})
    assert [r["value"] for r in everything] == [r["value"] for r in first + dropped + last]
    # offsets sent with a transaction count once it commits, never when it aborts
    assert (committed_offset(broker, group, "in", 0), committed_offset(broker, group, "in", 1)) == (5, 2)


def test_an_open_transaction_holds_read_committed_back_until_it_ends(broker):
    """The coordinator step by step with the library's own client: the last
    stable offset, fencing by a new epoch, the aborted-transaction list, offsets
    committed with a transaction and OffsetFetch's require_stable."""
    host, port = broker.rsplit(":", 1)
    port = int(port)
    topic, group, tid = clients.unique_topic("open"), f"g-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    assert clients.create_topic(broker, topic, partitions=1) == 1
    init = send_request(host, port, M.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 4)
    pid, epoch = init.producer_id, init.producer_epoch
    assert (init.error_code, epoch) == (0, 0)
    A = M.AddPartitionsToTxnRequest
    added = send_request(host, port, A(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                                       v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                                           A.AddPartitionsToTxnTopic(name=topic, partitions=[0])]), 3)
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    P = M.ProduceRequest
    blob = R.encode([(b"k", b"open")], transactional=True, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    produced = send_request(host, port, P(transactional_id=tid, acks=-1, timeout_ms=1000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=blob)])]), 9)
    assert produced.responses[0].partition_responses[0].error_code == 0

    def fetch(isolation):
        F = M.FetchRequest
        got = send_request(host, port, F(max_wait_ms=0, isolation_level=isolation, topics=[F.FetchTopic(
            topic=topic, partitions=[F.FetchPartition(partition=0, partition_max_bytes=1 << 20)])]), 11)
        part = got.responses[0].partitions[0]
        batches = list(R.decode(part.records or b""))
        return (part.high_watermark, part.last_stable_offset, [(a.producer_id, a.first_offset) for a in
                                                              part.aborted_transactions or ()],
                [(b.is_control, [r.value for r in b.records]) for b in batches])

    assert fetch(1) == (1, 0, [], [])                         # open: nothing for read_committed
    assert fetch(0) == (1, 0, [], [(False, [b"open"])])       # read_uncommitted sees it
    again = send_request(host, port, M.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), 4)
    assert (again.producer_id, again.producer_epoch) == (pid, epoch + 1)   # the open transaction is aborted
    end = M.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
    assert send_request(host, port, end, 3).error_code == ErrorCode.PRODUCER_FENCED  # fenced (KIP-588: EndTxn v2+)
    hw, lso, aborted, batches = fetch(1)
    assert (hw, lso, aborted) == (2, 2, [(pid, 0)]) and batches[0] == (False, [b"open"]) and batches[1][0]
    L = M.ListOffsetsRequest
    listed = send_request(host, port, L(replica_id=-1, isolation_level=1, topics=[L.ListOffsetsTopic(
        name=topic, partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 5)
    assert listed.topics[0].partitions[0].offset == 2
    # offsets with a transaction: AddOffsetsToTxn first; pending until EndTxn commits them
    epoch += 1
    C = M.TxnOffsetCommitRequest
    commit = C(transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
        C.TxnOffsetCommitRequestTopic(name=topic, partitions=[C.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=2)])])
    assert send_request(host, port, commit, 3).topics[0].partitions[0].error_code == ErrorCode.INVALID_TXN_STATE
    assert send_request(host, port, M.AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid,
                                                             producer_epoch=epoch, group_id=group), 3).error_code == 0
    assert send_request(host, port, commit, 3).topics[0].partitions[0].error_code == 0
    OF = M.OffsetFetchRequest
    stable = OF(group_id=group, require_stable=True, topics=[OF.OffsetFetchRequestTopic(name=topic,
                                                                                       partition_indexes=[0])])
    assert send_request(host, port, stable, 7).topics[0].partitions[0].error_code == \
        ErrorCode.UNSTABLE_OFFSET_COMMIT
    end.producer_epoch = epoch
    assert send_request(host, port, end, 3).error_code == 0
    assert send_request(host, port, stable, 7).topics[0].partitions[0].committed_offset == 2


# --------------------------------------------------------------------------
# admin clients: groups and configs


@contextlib.contextmanager
def stable_member(bootstrap, topic, group):
    """A confluent-kafka consumer in ``group``, kept polling (so Stable) while the block runs."""
    import threading

    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "the-member",
                         "heartbeat.interval.ms": 200})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    assert consumer.assignment(), "the member got no partitions"  # (not called while another thread polls)
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            consumer.poll(0.1)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join()
        consumer.close()


def admin_confluent(bootstrap, group, topic):
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = {g.group_id: g.state.name for g in admin.list_consumer_groups().result(20).valid}
    d = admin.describe_consumer_groups([group])[group].result(20)
    members = [(m.client_id, sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions))
               for m in d.members]
    configs = {}
    for fut in admin.describe_configs([ConfigResource("topic", topic), ConfigResource("broker", "0")]).values():
        configs.update({k: v.value for k, v in fut.result(20).items()})
    return listed, d.state.name, members, configs


def admin_kafka_python(bootstrap, group, topic):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = {g["group_id"]: g["group_state"].upper() for g in admin.list_groups()}
        d = admin.describe_groups([group])[group]
        members = [(m["client_id"], sorted((a["topic"], p) for a in m["member_assignment"]["assigned_partitions"]
                                           for p in a["partitions"])) for m in d["members"]]
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic),
                                      ConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all")
        configs = {k: v["value"] for kind in got.values() for res in kind.values() for k, v in res.items()}
    finally:
        admin.close()
    return listed, d["group_state"].upper(), members, configs


def admin_aiokafka(bootstrap, group, topic):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    async def run():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            listed = {g: "?" for g, _protocol in await admin.list_consumer_groups()}  # no states in its answer
            (resp,) = await admin.describe_consumer_groups([group])
            (g,) = resp.to_object()["groups"]
            members = []
            for m in g["members"]:
                assigned = ConsumerProtocolMemberAssignment.decode(m["member_assignment"]).partitions()
                members.append((m["client_id"], sorted((tp.topic, tp.partition) for tp in assigned)))
            configs = {}
            for r in await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic),
                                                   ConfigResource(ConfigResourceType.BROKER, "0")]):
                for res in r.to_object()["resources"]:
                    configs.update({c["config_names"]: c["config_value"] for c in res["config_entries"]})
            return listed, g["state"].upper(), members, configs
        finally:
            await admin.close()

    return asyncio.run(asyncio.wait_for(run(), 60))


ADMINS = {"confluent": admin_confluent, "kafka_python": admin_kafka_python, "aiokafka": admin_aiokafka}


@pytest.mark.parametrize("client", CLIENTS)
def test_admin_clients_list_and_describe_groups_and_configs(broker, client):
    topic, group = clients.unique_topic("admin"), f"g-{uuid.uuid4().hex[:8]}"
    assert clients.create_topic(broker, topic, partitions=PARTITIONS) == PARTITIONS
    with stable_member(broker, topic, group):
        listed, state, members, configs = ADMINS[client](broker, group, topic)
    assert listed[group] in ("STABLE", "?")
    assert state == "STABLE"
    assert members == [("the-member", [(topic, p) for p in range(PARTITIONS)])]
    assert configs["cleanup.policy"] == "delete" and configs["message.timestamp.type"] == "CreateTime"
    assert configs["num.partitions"] == str(PARTITIONS) and configs["node.id"] == "0"


# --------------------------------------------------------------------------
# the broker's own behaviour


def test_too_new_api_versions_gets_the_kip_511_reply(broker):
    import socket
    import struct

    from kafkaproto import FrameReader, decode_response

    host, port = broker.rsplit(":", 1)
    used, versions = api_versions_handshake(host, int(port))  # the library asks with its newest (5): answered
    assert used == 5
    keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert keys[18] == (0, 5) and keys[0] == (3, 13) and keys[1] == (4, 18)
    # a version from the future: KIP-511's reply, in v0's layout, naming the versions to retry with
    header = struct.pack(">hhih", 18, 99, 7, 1) + b"c" + b"\0\0"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        reader, frames = FrameReader(), []
        while not frames:
            frames = list(reader.feed(sock.recv(1 << 16)))
    _, reply = decode_response(frames[0], 18, 0)
    assert reply.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in reply.api_keys] == [(18, 0, 5)]


def test_answers_without_a_client_library(broker):
    host, port = broker.rsplit(":", 1)
    port = int(port)
    # DescribeAcls is an api the library speaks but the broker does not advertise
    assert send_request(host, port, M.DescribeAclsRequest(), 3).error_code == ErrorCode.UNSUPPORTED_VERSION
    P = JoinGroupRequest.JoinGroupRequestProtocol
    join = JoinGroupRequest(group_id=f"g-{uuid.uuid4().hex[:8]}", session_timeout_ms=10000, rebalance_timeout_ms=1000,
                            protocol_type="consumer", protocols=[P(name="range", metadata=b"m1")])
    required = send_request(host, port, join, 9)  # KIP-394: a new member gets its member id first
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    join.member_id = required.member_id
    first = send_request(host, port, join, 9)  # alone in the group: leader at once, with its own metadata
    assert (first.error_code, first.generation_id, first.leader) == (0, 1, first.member_id)
    assert [(m.member_id, m.metadata) for m in first.members] == [(first.member_id, b"m1")]
    join.protocols, join.member_id = [P(name="roundrobin", metadata=b"m2")], ""  # a second member, no common protocol
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
        # the topic's id, for the versions that name topics by id (Produce 13, Fetch 13+, OffsetCommit 10...)
        topic_id = send_request(host, int(port), MetadataRequest(topics=[
            M.MetadataRequest.MetadataRequestTopic(name=topic)]), 12).topics[0].topic_id
        P = M.ProduceRequest
        blob = records.encode([(b"k", b"v%d" % step), (None, b"w")], codec="gzip")
        produced = call(P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
            name=topic, topic_id=topic_id, partition_data=[P.PartitionProduceData(index=1, records=blob)])]), step)
        assert produced.responses[0].partition_responses[0].error_code == 0
        F = M.FetchRequest
        fetched = call(F(max_wait_ms=0, max_bytes=1 << 20, topics=[F.FetchTopic(
            topic=topic, topic_id=topic_id, partitions=[
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
        join = J(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=1000, protocol_type="consumer",
                 protocols=[J.JoinGroupRequestProtocol(name="range", metadata=b"meta")])
        joined = call(join, step)
        if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:  # v4+ (KIP-394): the member id first
            join.member_id = joined.member_id
            joined = call(join, step)
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
            C.OffsetCommitRequestTopic(name=topic, topic_id=topic_id, partitions=[C.OffsetCommitRequestPartition(
                partition_index=1, committed_offset=2, committed_metadata="m")])]), step)
        assert committed.topics[0].partitions[0].error_code == 0
        # a transaction that writes to partition 0 and commits the group's offset of partition 0 with it
        tid = f"tx-{group}"
        init = call(M.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000), step)
        pid, epoch = init.producer_id, init.producer_epoch
        assert (init.error_code, epoch) == (0, 0)
        A = M.AddPartitionsToTxnRequest
        added = call(A(v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
                       v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=[0])]), step)
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert call(M.AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=0, group_id=group),
                    step).error_code == 0
        T = M.TxnOffsetCommitRequest
        txn_commit = call(T(transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=0, topics=[
            T.TxnOffsetCommitRequestTopic(name=topic, topic_id=topic_id, partitions=[T.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_metadata="t")])]), step)
        assert txn_commit.topics[0].partitions[0].error_code == 0
        assert call(M.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=0, committed=True),
                    step).error_code == 0
        OF = M.OffsetFetchRequest
        offsets = call(OF(group_id=group, topics=[OF.OffsetFetchRequestTopic(name=topic, partition_indexes=[0, 1])],
                          groups=[OF.OffsetFetchRequestGroup(group_id=group, topics=[OF.OffsetFetchRequestTopics(
                              name=topic, topic_id=topic_id, partition_indexes=[0, 1])])]), step)
        fetched_topics = offsets.groups[0].topics if offsets.groups else offsets.topics  # v8+: by group
        assert [(p.committed_offset, p.metadata) for p in fetched_topics[0].partitions] == [(1, "t"), (2, "m")]
        assert group in [g.group_id for g in call(M.ListGroupsRequest(), step).groups]
        (described,) = call(M.DescribeGroupsRequest(groups=[group]), step).groups
        assert (described.group_state, described.protocol_data) == ("Stable", "range")
        assert [(m.member_id, m.member_metadata, m.member_assignment) for m in described.members] == [
            (me, b"meta", b"mine")]
        D = M.DescribeConfigsRequest
        (configs,) = call(D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name=topic,
                                                                 configuration_keys=["retention.ms"])]), step).results
        assert (configs.error_code, [(c.name, c.value) for c in configs.configs]) == (
            0, [("retention.ms", "604800000")])
        left = call(M.LeaveGroupRequest(group_id=group, member_id=me, members=[
            M.LeaveGroupRequest.MemberIdentity(member_id=me)]), step)
        assert left.error_code == 0
