"""librdkafka's mock cluster (confluent-kafka) as a live peer.

The mock is a real, independent Kafka implementation with a few known
deviations.  kafkaproto must speak to it where it is right, read its
non-standard ApiVersions v3 reply the way Kafka's own classes do, fall back to
ApiVersions v0 as librdkafka itself does, and fail with a precise
KafkaProtocolError (message type, field path, byte offset) where its replies
miss fields - never crash, never return a wrong value.  Kafka's Java classes
(the ``java_oracle`` fixture) confirm each verdict on the same bytes.
"""

from __future__ import annotations

import time

import pytest

from kafkaproto import ErrorCode, KafkaProtocolError, TruncatedError, decode_response, encode_request
from kafkaproto.headers import decode_request_header, decode_response_header
from kafkaproto.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    LeaveGroupRequest,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
    api_name,
)
from kafkaproto.protocol import (
    api_versions_handshake,
    negotiate_versions,
    request_header_version,
    response_header_version,
    send_request,
    supported_versions,
)
from oracle.java_oracle import OracleError
from peers.brokers import RecordingProxy
from support.live_helpers import LiveConnection, decode_recorded

pytestmark = pytest.mark.peers

TIMEOUT = 10.0


def _body(frame, api_key, version):
    """The response body (after the response header) of a frame."""
    _, offset = decode_response_header(memoryview(frame), response_header_version(api_key, version))
    return bytes(frame[offset:])


@pytest.fixture(scope="module")
def mock_versions(mock_cluster):
    resp = send_request(mock_cluster.host, mock_cluster.port, ApiVersionsRequest(), 0, timeout=TIMEOUT)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


# ---------------------------------------------------------------------------
# ApiVersions


def test_api_versions_v0_to_v2(mock_cluster):
    seen = []
    for version in (0, 1, 2):
        req = ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="0.1.0")
        resp = send_request(mock_cluster.host, mock_cluster.port, req, version, timeout=TIMEOUT)
        assert isinstance(resp, ApiVersionsResponse)
        assert resp.error_code == ErrorCode.NONE
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert keys[18] == (0, 2), "the mock's ApiVersions tops out at v2"
        for key in (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14):  # what a producer and a group consumer need
            lo, hi = keys[key]
            assert 0 <= lo <= hi
        assert 19 not in keys and 20 not in keys  # no CreateTopics / DeleteTopics in the mock
        assert resp.throttle_time_ms == 0
        seen.append(keys)
    assert seen[0] == seen[1] == seen[2]


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_above_v2_gets_a_non_standard_reply(mock_cluster, java_oracle, version):
    """The mock answers UNSUPPORTED_VERSION in a layout that is neither v0 nor v3:
    error code, a one-byte count (1), one ApiVersions entry (18, 0, 2) and an int32
    throttle time.  Kafka's classes read it as v3 - an empty compact array, a throttle
    time made of the entry's bytes, no tags - and ignore the 5 bytes left; so do we."""
    req = ApiVersionsRequest(client_software_name="kafkaproto", client_software_version="0.1.0")
    with LiveConnection(mock_cluster.host, mock_cluster.port, timeout=TIMEOUT) as conn:
        frame, resp = conn.request_raw(req, version)
    body = _body(frame, 18, version)
    assert body == bytes.fromhex("0023" "01" "0012" "0000" "0002" "00000000")

    header, msg, end = decode_response(frame, 18, version, with_end=True)
    assert msg == resp
    assert msg.error_code == ErrorCode.UNSUPPORTED_VERSION == 35
    assert msg.api_keys == []
    assert msg.throttle_time_ms == 0x00120000  # the bytes of api_key 18 and min_version 0
    assert len(frame) - end == 5 and frame[end:] == bytes.fromhex("0200000000")

    java = java_oracle.decode(18, "response", version, body)
    assert java["trailing"] == 5
    assert java["json"]["errorCode"] == 35 and java["json"]["apiKeys"] == []
    assert java["json"]["throttleTimeMs"] == msg.throttle_time_ms
    assert java["reencoded"] == body[:-5] == msg.encode(version)

    # In the v0 layout the same bytes claim 16781824 entries: rejected before allocating.
    with pytest.raises(KafkaProtocolError) as info:
        ApiVersionsResponse.decode(body, 0)
    assert str(info.value) == "ApiVersionsResponse v0 .api_keys at byte 2: count 16781824 larger than the 7 bytes left"


def test_handshake_falls_back_to_v0(mock_cluster, recording_proxy):
    """api_versions_handshake asks at our highest version, gets the error reply with
    no ApiVersions entry, and retries at v0 - as librdkafka does (next tests)."""
    proxy = recording_proxy(mock_cluster.host, mock_cluster.port)
    version, resp = api_versions_handshake(proxy.host, proxy.port, timeout=TIMEOUT)
    assert version == 0
    assert resp.error_code == ErrorCode.NONE and len(resp.api_keys) > 10
    ours_highest = supported_versions()[18][1]
    conns = proxy.wait_for_connections(2, timeout=TIMEOUT)
    for c in conns:
        assert c.wait_closed(TIMEOUT)
    tried = [ex.version for c in conns for ex in decode_recorded(c)[0]]
    assert tried == [ours_highest, 0]

    negotiated = negotiate_versions(resp)
    assert negotiated[18] == 2
    theirs = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    ours = supported_versions()
    for key, v in negotiated.items():
        assert v == min(theirs[key][1], ours[key][1]), key
    assert set(negotiated) == set(theirs) & set(ours)


@pytest.fixture(scope="module")
def librdkafka_bootstrap(mock_cluster):
    """The bootstrap connection of a confluent-kafka (librdkafka) client asking the mock
    for all topics, recorded through a proxy: ``(exchanges, leftovers)``."""
    from confluent_kafka import Producer

    with RecordingProxy(mock_cluster.host, mock_cluster.port) as proxy:
        producer = Producer({"bootstrap.servers": proxy.bootstrap, "socket.timeout.ms": int(TIMEOUT * 1000)})
        md = producer.list_topics(timeout=TIMEOUT)
        assert md.brokers
        del producer  # closes its connections
        first = proxy.wait_for_connections(1, timeout=TIMEOUT)[0]
        assert first.wait_closed(TIMEOUT)
        return decode_recorded(first)


def test_librdkafka_falls_back_to_v0_too(librdkafka_bootstrap):
    """librdkafka on its own mock: ApiVersions v3, the odd reply, then v0."""
    exchanges, leftovers = librdkafka_bootstrap
    assert leftovers == []
    av = [ex for ex in exchanges if ex.api_key == 18]
    assert [ex.version for ex in av] == [3, 0]
    assert av[0].response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert len(av[0].response_frame) - av[0].response_end == 5
    assert av[1].response.error_code == ErrorCode.NONE


def test_librdkafka_traffic_decodes_and_reencodes(librdkafka_bootstrap, java_oracle):
    """Every frame of librdkafka's bootstrap connection decodes; requests re-encode to
    their exact bytes, and in canonical form up to the end of the body.  librdkafka
    writes 3 bytes (01 00 00) after the body of each all-topics Metadata v13 request;
    Kafka's parser leaves the same 3 bytes unread, and so do we (reported through
    ``with_end``, kept with the message, dropped in canonical form)."""
    exchanges, _ = librdkafka_bootstrap
    trailing = {}
    for ex in exchanges:
        name = f"{api_name(ex.api_key)} v{ex.version}"
        h = ex.request_header
        again = encode_request(ex.request, ex.version, h.correlation_id, h.client_id,
                               header_tagged_fields=h.unknown_tagged_fields)[4:]
        assert again == ex.request_frame, name
        again = encode_request(ex.request, ex.version, h.correlation_id, h.client_id,
                               header_tagged_fields=h.unknown_tagged_fields, canonical=True)[4:]
        assert again == ex.request_frame[:ex.request_end], name
        extra = len(ex.request_frame) - ex.request_end
        if extra:
            trailing[name] = trailing.get(name, []) + [ex.request_frame[ex.request_end:].hex()]
            _, offset = decode_request_header(memoryview(ex.request_frame), request_header_version(ex.api_key,
                                                                                                   ex.version))
            java = java_oracle.decode(ex.api_key, "request", ex.version, ex.request_frame[offset:])
            assert java["trailing"] == extra and java["reencoded"] == ex.request_frame[offset:ex.request_end]
        assert ex.response is not None, name
    # whether the bootstrap includes an all-topics Metadata request depends on timing;
    # every one it holds carries the 3 bytes, and no other request has any
    all_topics = sum(1 for ex in exchanges if ex.api_key == 3 and ex.request.topics is None)
    assert trailing == ({"Metadata v13": ["010000"] * all_topics} if all_topics else {})


# ---------------------------------------------------------------------------
# Metadata


def test_metadata_through_send_request(mock_cluster, mock_versions, java_oracle):
    top = min(mock_versions[3][1], supported_versions()[3][1])
    assert top == 13
    topic = f"mock-md-{time.monotonic_ns()}"
    M = MetadataRequest
    for version in (0, 1, 2, 4, 7, 9, 12, top):
        req = M(topics=[M.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True)
        resp = send_request(mock_cluster.host, mock_cluster.port, req, version, timeout=TIMEOUT)
        assert [(b.host, b.port) for b in resp.brokers] == [(mock_cluster.host, mock_cluster.port)]
        node = resp.brokers[0].node_id
        [t] = resp.topics
        assert (t.name, t.error_code) == (topic, ErrorCode.NONE)
        assert sorted(p.partition_index for p in t.partitions) == [0, 1, 2, 3]  # the mock auto-creates 4
        assert all(p.leader_id == node and p.error_code == 0 for p in t.partitions)
        if version >= 1:
            assert resp.controller_id >= 0
        if version >= 2:
            assert resp.cluster_id.startswith("mockCluster")
        else:
            assert resp.cluster_id is None  # absent before v2: the default


def test_metadata_flexible_replies_carry_one_extra_byte(mock_cluster, java_oracle):
    """Every flexible (v9+) Metadata reply of the mock ends with one byte more than
    its body; Kafka's parser leaves it unread too, and so do we (tolerated, reported)."""
    M = MetadataRequest
    with LiveConnection(mock_cluster.host, mock_cluster.port, timeout=TIMEOUT) as conn:
        for version in range(0, 14):
            frame, resp = conn.request_raw(M(topics=[] if version == 0 else None), version)
            _, msg, end = decode_response(frame, 3, version, with_end=True)
            assert msg == resp and msg.brokers
            extra = len(frame) - end
            assert extra == (1 if version >= 9 else 0), version
            if extra:
                assert frame[end:] == b"\x00"
            java = java_oracle.decode(3, "response", version, _body(frame, 3, version))
            assert java["trailing"] == extra, version
            assert java["reencoded"] == msg.encode(version)


# ---------------------------------------------------------------------------
# replies that miss fields


def _produce_request():
    P = ProduceRequest
    return P(acks=1, timeout_ms=1000, topic_data=[
        P.TopicProduceData(name="mock-no-such-topic", partition_data=[P.PartitionProduceData(index=0, records=None)])])


def test_produce_v5_reply_misses_log_start_offset(mock_cluster, mock_versions, java_oracle):
    """The mock writes its Produce v5 reply in the v4 layout (no log_start_offset)."""
    assert mock_versions[0][0] <= 5 <= mock_versions[0][1]  # it claims to speak v5
    v4_body = _body(_raw_frame(mock_cluster, _produce_request(), 4), 0, 4)
    frame = _raw_frame(mock_cluster, _produce_request(), 5)
    # the 8-byte log_start_offset is read where the 4-byte throttle time sits, the last 4 bytes
    expected = (f"ProduceResponse v5 .responses[0].partition_responses[0].log_start_offset "
                f"at byte {len(frame) - 4}: need 8 bytes, 4 left")
    with pytest.raises(TruncatedError) as info:
        decode_response(frame, 0, 5)
    assert str(info.value) == expected
    assert info.value.offset == len(frame) - 4 and info.value.path[-1] == "log_start_offset"
    with pytest.raises(KafkaProtocolError) as info:  # through the blocking helper: the same error
        send_request(mock_cluster.host, mock_cluster.port, _produce_request(), 5, timeout=TIMEOUT)
    assert str(info.value) == expected

    # the raw reply is exactly the v4 body, which reads cleanly as v4
    v5_body = _body(frame, 0, 5)
    assert v5_body == v4_body
    v4 = ProduceResponse.decode(v5_body, 4)
    assert v4.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(OracleError, match="BufferUnderflowException"):  # Kafka's classes fail on it too
        java_oracle.decode(0, "response", 5, v5_body)
    # every other version it claims decodes
    for version in range(mock_versions[0][0], mock_versions[0][1] + 1):
        if version != 5:
            resp = send_request(mock_cluster.host, mock_cluster.port, _produce_request(), version, timeout=TIMEOUT)
            assert resp.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _raw_frame(mock_cluster, msg, version):
    with LiveConnection(mock_cluster.host, mock_cluster.port, timeout=TIMEOUT) as conn:
        conn.sock.sendall(encode_request(msg, version, 77, "kafkaproto"))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = conn.sock.recv(1 << 16)
            assert chunk, "mock closed the connection"
            data += chunk
    return data[4:]


def _leave_group(version):
    L = LeaveGroupRequest
    if version < 3:
        return L(group_id="mock-group", member_id="m-1")
    return L(group_id="mock-group", members=[L.MemberIdentity(member_id="m-1")])


@pytest.mark.parametrize("version, message", [
    (3, "LeaveGroupResponse v3 .members at byte 10: need 4 bytes, 0 left"),
    (4, "LeaveGroupResponse v4 .members at byte 11: null (length -1) in a non-nullable field"),
])
def test_leave_group_v3_v4_replies_miss_members(mock_cluster, mock_versions, java_oracle, version, message):
    """The mock answers LeaveGroup v3/v4 without the members array (v3: the bytes end;
    v4: the body's tag byte is read as a null compact array)."""
    assert mock_versions[13][1] >= version
    frame = _raw_frame(mock_cluster, _leave_group(version), version)
    with pytest.raises(KafkaProtocolError) as info:
        decode_response(frame, 13, version)
    assert str(info.value) == message
    assert info.value.path == ["members"]
    with pytest.raises(KafkaProtocolError):  # the blocking helper raises the same
        send_request(mock_cluster.host, mock_cluster.port, _leave_group(version), version, timeout=TIMEOUT)
    with pytest.raises(OracleError):  # Kafka's classes cannot read it either
        java_oracle.decode(13, "response", version, _body(frame, 13, version))
    # v0-v2 replies are well formed
    for old in (0, 1, 2):
        resp = send_request(mock_cluster.host, mock_cluster.port, _leave_group(old), old, timeout=TIMEOUT)
        assert resp.error_code != ErrorCode.NONE  # no such group/member in the mock
        assert resp.members == []
