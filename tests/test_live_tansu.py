"""tansu (a Kafka-compatible broker) as a live peer, and real clients' traffic.

1. kafkaproto drives tansu itself: ApiVersions handshake at the highest common
   version, Metadata at several versions, CreateTopics, Produce of a record
   batch written by a real client (confluent-kafka, captured from the wire),
   Fetch of it back (batch headers read by hand), ListOffsets, DeleteTopics;
   every response decoded and its fields checked.
2. Real clients (confluent-kafka, kafka-python, aiokafka) produce and consume
   through a recording proxy in front of tansu: every frame in both
   directions decodes, and re-encodes to the same bytes - except where tansu
   writes tagged fields that hold their default value, which kafkaproto (like
   Kafka's own classes, checked with the Java oracle) does not write back.
"""

from __future__ import annotations

import collections
import os
import uuid

import pytest

from kafkaproto import (
    ErrorCode,
    TruncatedError,
    decode_response,
    encode_request,
    encode_response,
    response_header_version,
)
from kafkaproto.headers import decode_response_header
from kafkaproto.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
    api_name,
)
from kafkaproto.protocol import api_versions_handshake, negotiate_versions, supported_versions
from oracle.java_oracle import OracleError
from peers import clients
from peers.brokers import PeerUnavailable, Tansu
from support.live_helpers import LiveConnection, consume_aiokafka_group, decode_recorded, read_batch_headers, settled

pytestmark = [
    pytest.mark.peers,
    # kafka-python 3.0 loads its schemas with deprecated importlib.resources calls
    pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning"),
]

TIMEOUT = 10.0
T0 = 1_700_000_000_000
ZERO_UUID = uuid.UUID(int=0)


def _records(n=5):
    """What the real clients send: keys (one null), repeated header keys, a tombstone."""
    out = []
    for i in range(n):
        out.append({"key": None if i == 1 else b"key-%d" % i,
                    "value": None if i == 3 else (b"value-%d " % i) * (i + 1),
                    "headers": [("dup", b"a"), ("dup", b"b"), ("i", str(i).encode())],
                    "timestamp_ms": T0 + i})
    return out


def _body(frame, api_key, version):
    _, offset = decode_response_header(memoryview(frame), response_header_version(api_key, version))
    return bytes(frame[offset:])


# ---------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def handshake(tansu):
    version, resp = api_versions_handshake(tansu.host, tansu.port, timeout=TIMEOUT)
    return version, resp, negotiate_versions(resp)


@pytest.fixture(scope="module")
def negotiated(handshake):
    return handshake[2]


@pytest.fixture
def conn(tansu):
    with LiveConnection(tansu.host, tansu.port, timeout=TIMEOUT) as c:
        yield c


CLIENT_RUNS = {
    # client: (producer codec, consumer)
    "confluent": ("none", "confluent"),
    "kafka_python": ("gzip", "kafka_python"),
    "aiokafka": ("lz4", "aiokafka_group"),
}


@pytest.fixture(scope="module")
def recorded():
    """Each real client produces and consumes 5 records through a recording proxy
    in front of a fresh tansu; returns {client: (records sent, records read, [RecordedConnection])}."""
    out = {}
    try:
        with Tansu.behind_proxy() as broker:
            for client, (codec, consumer) in CLIENT_RUNS.items():
                topic = clients.unique_topic(f"rec-{client}")
                clients.create_topic(broker.bootstrap, topic, timeout=TIMEOUT)
                broker.proxy.clear(settle=0.2)
                sent = clients.produce(client, broker.bootstrap, topic, _records(), codec, timeout=TIMEOUT)
                if consumer == "confluent":
                    got = [(r["key"], r["value"]) for r in
                           clients.consume_confluent(broker.bootstrap, topic, len(sent), timeout=TIMEOUT)]
                elif consumer == "kafka_python":
                    got = [(r["key"], r["value"]) for r in
                           clients.consume_kafka_python(broker.bootstrap, topic, len(sent), timeout=TIMEOUT)]
                else:
                    # joining a group waits for tansu's rebalance delay (about 3 s): more time
                    got = [(k, v) for _, _, k, v in
                           consume_aiokafka_group(broker.bootstrap, topic, len(sent), timeout=3 * TIMEOUT)]
                conns = [c for c in settled(broker.proxy) if c.client_to_server]
                broker.proxy.clear()
                out[client] = (sent, got, conns)
    except PeerUnavailable as exc:  # as the peers' own fixtures do
        if os.environ.get("KAFKAPROTO_REQUIRE_PEERS", "") not in ("", "0"):
            pytest.fail(f"required Kafka peer unavailable: {exc}", pytrace=False)
        pytest.skip(f"Kafka peer unavailable: {exc}")
    return out


@pytest.fixture(scope="module")
def client_batch(recorded):
    """The record batch confluent-kafka wrote (uncompressed, not idempotent), from its ProduceRequest."""
    _, _, conns = recorded["confluent"]
    batches = [bytes(pd.records) for c in conns for ex in decode_recorded(c)[0] if ex.api_key == 0
               for td in ex.request.topic_data for pd in td.partition_data]
    assert len(batches) == 1
    return batches[0]


# ---------------------------------------------------------------------------
# 1. kafkaproto drives tansu


def test_api_versions_handshake_at_highest_common_version(tansu, handshake):
    version, resp, negotiated = handshake
    theirs = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    ours = supported_versions()
    # tansu advertises ApiVersions 0-4 but answers our v5 request normally instead of with the
    # KIP-511 error (Kafka's own clients also keep a reply that decodes): v5 was used, 4 is negotiated
    assert version == ours[18][1] == 5 and theirs[18][1] == 4
    assert resp.error_code == ErrorCode.NONE and resp.throttle_time_ms == 0
    for key in (0, 1, 2, 3, 18, 19, 20):
        assert key in theirs
    assert set(negotiated) == set(theirs) & set(ours)
    for key, v in negotiated.items():
        assert v == min(theirs[key][1], ours[key][1]), key
    # tansu 0.6.0 against the newest schemas: what the rest of this file uses
    assert (negotiated[0], negotiated[1], negotiated[2], negotiated[3]) == (11, 17, 9, 12)
    assert (negotiated[19], negotiated[20]) == (7, 6)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_raw_reply(tansu, java_oracle, version):
    """tansu's ApiVersions reply at every version decodes exactly; from v3 on tansu
    also writes all four tagged fields (SupportedFeatures, FinalizedFeaturesEpoch,
    FinalizedFeatures, ZkMigrationReady) holding their defaults - the bytes that
    librdkafka before 2.2 mis-skipped.  We read them as the defaults and write
    them back as they came; in canonical form, like Kafka's own classes, we do not
    write them (19 bytes fewer)."""
    req = ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="0.1.0")
    with LiveConnection(tansu.host, tansu.port, timeout=TIMEOUT) as c:
        frame, resp = c.request_raw(req, version)
    header, msg, end = decode_response(frame, 18, version, with_end=True)
    assert end == len(frame) and msg == resp and resp.error_code == 0
    assert len(resp.api_keys) >= 30
    assert encode_response(msg, version, header.correlation_id)[4:] == frame  # faithful
    ours = encode_response(msg, version, header.correlation_id, canonical=True)[4:]
    java = java_oracle.decode(18, "response", version, _body(frame, 18, version))
    assert java["trailing"] == 0
    if version < 3:
        assert ours == frame
        return
    tags = frame[len(ours) - 1:]
    assert frame[:len(ours) - 1] == ours[:-1] and ours[-1:] == b"\x00"
    assert tags == bytes.fromhex("04" "0001" "01" "0108" "ffffffffffffffff" "0201" "01" "0301" "00")
    assert (msg.supported_features, msg.finalized_features_epoch, msg.finalized_features,
            msg.zk_migration_ready) == ([], -1, [], False)
    assert not msg.unknown_tagged_fields
    assert len(frame) - len(ours) == 19
    assert java["reencoded"] == _body(ours, 18, version)  # Kafka drops them too


def test_metadata_at_several_versions(tansu, conn, negotiated):
    topic = clients.unique_topic("md")
    C = CreateTopicsRequest
    created = conn.request(C(topics=[C.CreatableTopic(name=topic, num_partitions=2, replication_factor=1)],
                             timeout_ms=5000), negotiated[19])
    assert created.topics[0].error_code == ErrorCode.NONE
    M = MetadataRequest
    for version in sorted({0, 1, 4, 7, 9, 11, negotiated[3]}):
        req = M(topics=[M.MetadataRequestTopic(name=topic)])
        if version >= 4:
            req.allow_auto_topic_creation = False
        resp = conn.request(req, version)
        [broker] = resp.brokers
        assert (broker.host, broker.port) == (tansu.host, tansu.port)
        [t] = resp.topics
        assert (t.name, t.error_code, t.is_internal) == (topic, ErrorCode.NONE, False)
        assert [p.partition_index for p in t.partitions] == [0, 1]
        for p in t.partitions:
            assert (p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) == (0, broker.node_id, [broker.node_id],
                                                                                 [broker.node_id])
        if version >= 1:
            assert resp.controller_id == broker.node_id
        assert resp.cluster_id == (tansu.cluster_id if version >= 2 else None)
        assert t.topic_id == (created.topics[0].topic_id if version >= 10 else ZERO_UUID)
        if version >= 7:
            assert all(p.leader_epoch >= 0 for p in t.partitions)
    # all topics: null from v1 on, an empty array in v0
    assert topic in {t.name for t in conn.request(M(topics=[]), 0).topics}
    assert topic in {t.name for t in conn.request(M(topics=None), negotiated[3]).topics}


def test_create_and_delete_topics(conn, negotiated):
    C, D, M = CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest
    a, b = clients.unique_topic("ct-a"), clients.unique_topic("ct-b")
    resp = conn.request(C(topics=[C.CreatableTopic(name=a, num_partitions=3, replication_factor=1)],
                          timeout_ms=5000), negotiated[19])
    [r] = resp.topics
    assert (r.name, r.error_code, r.error_message) == (a, ErrorCode.NONE, None)
    assert (r.num_partitions, r.replication_factor) == (3, 1)
    assert r.topic_id != ZERO_UUID
    again = conn.request(C(topics=[C.CreatableTopic(name=a, num_partitions=3, replication_factor=1)],
                           timeout_ms=5000), negotiated[19])
    assert again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    # an old version too (v0: no error message, no partition count in the reply)
    old = conn.request(C(topics=[C.CreatableTopic(name=b, num_partitions=1, replication_factor=1)],
                         timeout_ms=5000), 0)
    assert [(t.name, t.error_code) for t in old.topics] == [(b, ErrorCode.NONE)]
    md = conn.request(M(topics=[M.MetadataRequestTopic(name=a), M.MetadataRequestTopic(name=b)]), negotiated[3])
    assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [(a, 0, 3), (b, 0, 1)]
    assert md.topics[0].topic_id == r.topic_id and md.topics[1].topic_id not in (ZERO_UUID, r.topic_id)

    deleted = conn.request(D(topics=[D.DeleteTopicState(name=a)], timeout_ms=5000), negotiated[20])
    assert [(t.name, t.error_code) for t in deleted.responses] == [(a, ErrorCode.NONE)]
    deleted_old = conn.request(D(topic_names=[b], timeout_ms=5000), 1)
    assert [(t.name, t.error_code) for t in deleted_old.responses] == [(b, ErrorCode.NONE)]
    gone = conn.request(D(topic_names=[b], timeout_ms=5000), 1)
    assert gone.responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    md = conn.request(M(topics=[M.MetadataRequestTopic(name=a)], allow_auto_topic_creation=False), negotiated[3])
    assert [(t.name, t.error_code, t.partitions) for t in md.topics] == [(a, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]


def test_produce_a_real_clients_batch_and_fetch_it_back(tansu, conn, negotiated, client_batch):
    [produced] = read_batch_headers(client_batch)
    assert produced["magic"] == 2 and produced["crc_ok"] and produced["raw"] == client_batch
    n = produced["records_count"]
    assert n == 5 and produced["last_offset_delta"] == 4
    assert (produced["base_timestamp"], produced["max_timestamp"]) == (T0, T0 + 4)
    assert produced["producer_id"] == -1  # not idempotent: the same batch may be appended again

    C, P, F, L, D = CreateTopicsRequest, ProduceRequest, FetchRequest, ListOffsetsRequest, DeleteTopicsRequest
    topic = clients.unique_topic("produce")
    created = conn.request(C(topics=[C.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)],
                             timeout_ms=5000), negotiated[19])
    topic_id = created.topics[0].topic_id
    produce_versions = [3, 5, 7, 9, negotiated[0]]
    for i, version in enumerate(produce_versions):
        req = P(acks=-1, timeout_ms=5000, topic_data=[
            P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=client_batch)])])
        resp = conn.request(req, version)
        [t] = resp.responses
        [p] = t.partition_responses
        assert (t.name, p.index, p.error_code, p.base_offset) == (topic, 0, ErrorCode.NONE, i * n)
        assert p.log_append_time_ms == -1  # CreateTime topic
        if version >= 5:
            assert p.log_start_offset == 0
    total = n * len(produce_versions)

    for version in sorted({4, 7, 12, negotiated[1]}):
        req = F(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0, topics=[
            F.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
                F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
        resp = conn.request(req, version)
        assert resp.error_code == ErrorCode.NONE
        [t] = resp.responses
        assert (t.topic, t.topic_id) == ((topic, ZERO_UUID) if version < 13 else ("", topic_id))
        [p] = t.partitions
        assert (p.partition_index, p.error_code, p.high_watermark) == (0, ErrorCode.NONE, total)
        if version >= 4:
            assert p.last_stable_offset == total
        if version >= 5:
            assert p.log_start_offset == 0
        batches = read_batch_headers(p.records)
        assert [b.get("base_offset") for b in batches] == [i * n for i in range(len(produce_versions))]
        for b in batches:
            assert b["crc_ok"] and b["records_count"] == n
            # the broker sets base offset and leader epoch (outside the CRC); the rest is the client's batch
            assert b["raw"][16:] == client_batch[16:]
            assert b["partition_leader_epoch"] == 0

    # tansu 0.6.0 answers ListOffsets "latest" with the last batch's base offset + 1, not the
    # high watermark (a tansu bug: it ignores the batch's last_offset_delta).  A real client
    # reads the same number from the same broker, so the bytes say so: we pin it.
    tansu_latest = (len(produce_versions) - 1) * n + 1
    assert tansu_latest != total
    for version in sorted({1, 4, 7, negotiated[2]}):
        req = L(replica_id=-1, topics=[L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
        latest = conn.request(req, version).topics[0].partitions[0]
        req.topics[0].partitions[0].timestamp = -2
        earliest = conn.request(req, version).topics[0].partitions[0]
        assert (latest.partition_index, latest.error_code, latest.offset) == (0, ErrorCode.NONE, tansu_latest)
        assert (earliest.partition_index, earliest.error_code, earliest.offset) == (0, ErrorCode.NONE, 0)
        if version >= 4:
            assert latest.leader_epoch == 0
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": tansu.bootstrap, "group.id": "kafkaproto-live",
                         "socket.timeout.ms": int(TIMEOUT * 1000)})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT, cached=False) == (
            0, tansu_latest)
    finally:
        consumer.close()

    deleted = conn.request(D(topics=[D.DeleteTopicState(name=topic)], timeout_ms=5000), negotiated[20])
    assert deleted.responses[0].error_code == ErrorCode.NONE


def test_list_offsets_v0_reply_is_truncated(conn, java_oracle_legacy):
    """tansu 0.6.0 answers ListOffsets v0 with an old_style_offsets array that claims
    one int64 and carries 2 bytes: a tansu bug.  kafkaproto names the field and the
    offset; Kafka's own classes (3.9.1: 4.0 removed ListOffsets v0) cannot read it either."""
    C, L = CreateTopicsRequest, ListOffsetsRequest
    topic = clients.unique_topic("lo0")
    conn.request(C(topics=[C.CreatableTopic(name=topic, num_partitions=2, replication_factor=1)],
                   timeout_ms=5000), 7)
    req = L(replica_id=-1, topics=[L.ListOffsetsTopic(name=topic, partitions=[
        L.ListOffsetsPartition(partition_index=0, timestamp=-1, max_num_offsets=1),
        L.ListOffsetsPartition(partition_index=1, timestamp=-1, max_num_offsets=1)])])
    conn.sock.sendall(encode_request(req, 0, 99, "kafkaproto"))
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = conn.sock.recv(1 << 16)
        assert chunk
        data += chunk
    frame = data[4:]
    name_len = len(topic.encode())
    pos = 4 + 4 + 2 + name_len + 4 + 4 + 2 + 4  # cid, topics, name, partitions, index, error, count
    with pytest.raises(TruncatedError) as info:
        decode_response(frame, 2, 0)
    assert str(info.value) == (f"ListOffsetsResponse v0 .topics[0].partitions[0].old_style_offsets[0] "
                               f"at byte {pos}: need 8 bytes, {len(frame) - pos} left")
    assert len(frame) - pos == 2
    with pytest.raises(OracleError, match="BufferUnderflowException"):
        java_oracle_legacy.decode(2, "response", 0, frame[4:])


def test_pipelined_requests_on_one_connection(conn, negotiated):
    """Several requests written at once; the answers (ApiVersions with its v0 response
    header, flexible Metadata with a v1 header, old Metadata) come back in order."""
    M = MetadataRequest
    answers = conn.pipeline([(ApiVersionsRequest(), 3), (M(topics=None), negotiated[3]), (M(topics=[]), 0),
                             (ApiVersionsRequest(), 0)])
    assert [type(r).__name__ for _, r in answers] == ["ApiVersionsResponse", "MetadataResponse",
                                                       "MetadataResponse", "ApiVersionsResponse"]
    assert [int.from_bytes(f[:4], "big") for f, _ in answers] == [1, 2, 3, 4]
    assert answers[0][1].api_keys and answers[3][1].api_keys
    assert answers[1][1].brokers == answers[2][1].brokers
    assert conn.conn.pending == 0


# ---------------------------------------------------------------------------
# 2. real clients, recorded


def test_real_clients_delivered(recorded):
    for client, (sent, got, conns) in recorded.items():
        assert got == [(r["key"], r["value"]) for r in sent], client
        assert conns, client


def test_recorded_traffic_decodes_and_reencodes(recorded, java_oracle_for):
    """Every frame of every recorded connection decodes and re-encodes to its exact
    bytes; in canonical form every response too, except tagged fields tansu writes
    with their default value - dropped exactly as Kafka's own classes drop them
    (checked below)."""
    summary = {}
    dropped = collections.Counter()
    for client, (_, _, conns) in recorded.items():
        apis = collections.Counter()
        frames = 0
        for c in conns:
            exchanges, leftovers = decode_recorded(c)
            assert leftovers == [], (client, leftovers)
            # A client may close its connection with requests in flight (librdkafka's
            # periodic Metadata refresh, while the consumer closes): those go unanswered.
            # Answers come in request order, so unanswered requests can only be the tail.
            answered = [ex.response_frame is not None for ex in exchanges]
            tail = len(answered) - answered[::-1].index(True) if True in answered else 0
            assert all(answered[:tail]), (client, "a request unanswered before an answered one")
            assert all(ex.api_key != 0 for ex in exchanges[tail:]), (client, "a Produce unanswered")
            for i, ex in enumerate(exchanges):
                name = f"{api_name(ex.api_key)} v{ex.version}"
                apis[name] += 1
                frames += 1
                h = ex.request_header
                # no client sent bytes after a request body here
                assert ex.request_end == len(ex.request_frame), (client, name)
                again = encode_request(ex.request, ex.version, h.correlation_id, h.client_id,
                                       header_tagged_fields=h.unknown_tagged_fields)
                assert again[4:] == ex.request_frame, (client, name)
                if i >= tail:
                    continue
                frames += 1
                assert ex.response_end == len(ex.response_frame), (client, name)
                rh = ex.response_header
                faithful = encode_response(ex.response, ex.version, rh.correlation_id,
                                           header_tagged_fields=rh.unknown_tagged_fields)[4:]
                assert faithful == ex.response_frame, (client, name)
                ours = encode_response(ex.response, ex.version, rh.correlation_id,
                                       header_tagged_fields=rh.unknown_tagged_fields, canonical=True)[4:]
                if ours == ex.response_frame:
                    continue
                # Not byte-identical: Kafka's classes must write exactly what we write.
                theirs = _body(ex.response_frame, ex.api_key, ex.version)
                java = java_oracle_for(ex.api_key, ex.version).decode(ex.api_key, "response", ex.version, theirs)
                assert java["trailing"] == 0
                assert java["reencoded"] == _body(ours, ex.api_key, ex.version), (client, name)
                assert len(ours) < len(ex.response_frame)
                assert decode_response(ours, ex.api_key, ex.version) == (rh, ex.response)
                dropped[(name, len(ex.response_frame) - len(ours))] += 1
        summary[client] = (frames, dict(apis))
    print("\nrecorded traffic (frames = requests + responses):")
    for client, (frames, apis) in summary.items():
        print(f"  {client}: {frames} frames, {sorted(apis.items())}")
    print(f"  responses re-encoded shorter (default-valued tagged fields dropped): {dict(dropped)}")

    # What each client exercised (at least): produce, fetch, offsets; aiokafka as a group member.
    for client, (_, apis) in summary.items():
        for api in ("ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets"):
            assert any(k.startswith(api + " ") for k in apis), (client, api)
    for api in ("FindCoordinator", "JoinGroup", "SyncGroup", "OffsetFetch", "OffsetCommit"):
        assert any(k.startswith(api + " ") for k in summary["aiokafka"][1]), api
    # The only differences: ApiVersions v3/v4 (4 default tags, 19 bytes) and Fetch v16
    # (an empty NodeEndpoints tag, 3 bytes), from tansu; nothing from any client.
    assert {name for name, _ in dropped} <= {"ApiVersions v3", "ApiVersions v4", "Fetch v16"}
    assert all(size == (19 if name.startswith("ApiVersions") else 3) for name, size in dropped)
    assert dropped, "tansu no longer writes default-valued tagged fields: update this test"
