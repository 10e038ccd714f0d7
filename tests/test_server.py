"""For people who write brokers, mocks and debuggers: the server-side
connection, answers to requests we cannot read, strict decoding and partial
results, lenient encoding, field introspection, storing produced batches
and serving them (checked by Kafka's own classes)."""

from __future__ import annotations

import struct

import pytest

from kafkaproto import ErrorCode
from kafkaproto import records as R
from kafkaproto.errors import (
    CorruptRecordError,
    EncodeError,
    TrailingBytesError,
    TruncatedError,
    UnsupportedVersionError,
)
from kafkaproto.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkaproto.protocol import (
    Connection,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
    read_request,
    request_header,
    trailing_bytes,
)
from kafkaproto.server import (
    ServerConnection,
    api_versions_response,
    fetch_partition,
    unsupported_version_response,
)

P = ProduceRequest


def produce(acks, records=b"", topic="t"):
    return P(acks=acks, timeout_ms=100, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=records)])])


def joined(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


# --------------------------------------------------------------------------
# the server-side connection


def test_responses_leave_in_request_order_whatever_order_they_are_given():
    client = Connection(client_id="c")
    stream = b"".join(joined(client.send(msg, v)) for msg, v in [
        (MetadataRequest(topics=None), 12), (produce(0, R.encode([(b"k", b"v")])), 9),
        (ApiVersionsRequest(), 3), (produce(-1, R.encode([(b"k", b"v")])), 9)])
    server = ServerConnection()
    got = [req for i in range(0, len(stream), 5) for req in server.receive(stream[i:i + 5])]
    assert [(r.api_key, r.correlation_id, r.expects_response) for r in got] == [
        (3, 1, True), (0, 2, False), (18, 3, True), (0, 4, True)]
    assert got[0].client_id == "c" and server.pending == 3
    assert server.respond(got[3], ProduceResponse()) == []           # waits for the two before it
    assert server.respond(got[2], api_versions_response()) == []
    with pytest.raises(ValueError, match="expects no response"):
        server.respond(got[1], ProduceResponse())
    out = server.respond(got[0], MetadataResponse(cluster_id="x"))
    assert server.pending == 0
    with pytest.raises(ValueError, match="not waiting"):
        server.respond(got[0], MetadataResponse())
    answers = client.receive(joined(out))
    assert [(cid, type(m).__name__) for cid, _, m in answers] == [
        (1, "MetadataResponse"), (3, "ApiVersionsResponse"), (4, "ProduceResponse")]
    assert answers[0][2].cluster_id == "x" and client.pending == 0


def test_zero_copy_records_in_requests_and_fetch_partitions_as_parts():
    batch = R.encode([(b"k%d" % i, b"v" * 100) for i in range(10)], codec="lz4")
    server = ServerConnection()
    frame = encode_request(produce(-1, batch), 9, 7, "c")
    (req,) = server.receive(frame)
    records = req.message.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and bytes(records) == batch
    stored, next_offset = R.assign_offsets(records, 1000)
    assert next_offset == 1010
    part = fetch_partition(0, stored, high_watermark=next_offset)
    resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])
    parts = encode_response_parts(resp, 11, 9)
    assert any(p is stored for p in parts)
    _, back = decode_response(joined(parts)[4:], 1, 11)
    (b,) = R.decode(back.responses[0].partitions[0].records)
    assert [r.offset for r in b.records] == list(range(1000, 1010))
    again, _ = R.assign_offsets(batch, next_offset)
    two = fetch_partition(3, [stored, again], high_watermark=1, aborted_transactions=[(7, 1000)])
    resp.responses[0].partitions = [two]
    parts = encode_response_parts(resp, 11, 9)
    assert any(p is stored for p in parts) and any(p is again for p in parts)  # each stored batch by reference
    _, back = decode_response(joined(parts)[4:], 1, 11)
    got = back.responses[0].partitions[0]
    assert got.records == stored + again and got.aborted_transactions[0].producer_id == 7
    assert [r.offset for b in R.decode(got.records) for r in b.records] == list(range(1000, 1020))


def test_fetch_partition_writes_null_aborted_transactions_by_default():
    """Kafka answers a read-uncommitted Fetch with null AbortedTransactions (a
    count of -1), a read-committed one with a list, empty or not; versions
    before 4 have no such field."""
    frames = {}
    for aborted in (None, [], [(7, 1000)]):
        part = fetch_partition(0, b"", high_watermark=0, aborted_transactions=aborted)
        resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])
        frames[repr(aborted)] = frame = joined(encode_response_parts(resp, 11, 9))
        _, back = decode_response(frame[4:], 1, 11)
        got = back.responses[0].partitions[0].aborted_transactions
        assert (got is None) if aborted is None else len(got) == len(aborted)
        assert encode_response_parts(resp, 3, 9)  # v3 has no such field: nothing to write
    null, empty = frames["None"], frames["[]"]
    at = next(i for i in range(len(null)) if null[i] != empty[i])
    assert len(null) == len(empty) and (null[at:at + 4], empty[at:at + 4]) == (b"\xff" * 4, b"\x00" * 4)
    assert null[at + 4:] == empty[at + 4:]


# --------------------------------------------------------------------------
# requests we cannot read


def _raw_request(api_key, version, correlation_id, client_id, body=b""):
    cid = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid + body


def test_an_api_versions_request_too_new_gets_the_kip_511_reply():
    frame = _raw_request(18, 99, 42, "new-client", b"\x00\x01\x02")
    req = read_request(frame)
    assert isinstance(req.error, UnsupportedVersionError) and req.message is None
    assert (req.header.api_key, req.header.api_version, req.header.correlation_id, req.client_id) == (
        18, 99, 42, "new-client")
    server = ServerConnection()
    (req,) = server.receive(struct.pack(">i", len(frame)) + frame)
    reply = unsupported_version_response(req, {18: (0, 2), 3: (0, 12)})
    out = joined(server.respond(req, reply, version=0))
    # a client at v3 reads it as KIP-511 says: the v0 layout, and the versions to retry with
    _, msg = decode_response(out[4:], 18, 3)
    assert msg.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in msg.api_keys] == [(18, 0, 2)]


def test_headers_of_keys_and_versions_we_do_not_know():
    assert request_header(_raw_request(999, 3, 5, "x")).correlation_id == 5
    header = request_header(_raw_request(3, 60, 6, "meta", b"\x00"))  # Metadata v60: flexible (open range): tags
    assert (header.api_version, header.client_id) == (60, "meta")
    with pytest.raises(TruncatedError):
        request_header(b"\x00\x03")
    join = read_request(_raw_request(11, 60, 9, "g", b"\x00" * 20))
    reply = unsupported_version_response(join)
    assert reply is None  # JoinGroup v60 is not a version we can write: Kafka closes the connection
    join = read_request(encode_request(JoinGroupRequest(group_id="g"), 5, 9, "g")[4:])
    reply = unsupported_version_response(join)
    assert isinstance(reply, JoinGroupResponse) and reply.error_code == ErrorCode.UNSUPPORTED_VERSION
    meta = read_request(encode_request(MetadataRequest(topics=None), 9, 1, "c")[4:])
    assert unsupported_version_response(meta) is None  # Metadata v9 responses have no top-level error code
    # a version we read, a body cut short: the version is not what went wrong, Kafka hangs up
    cut = read_request(encode_request(JoinGroupRequest(group_id="g"), 5, 9, "g")[4:-6])
    assert isinstance(cut.error, TruncatedError) and unsupported_version_response(cut) is None
    assert unsupported_version_response(read_request(_raw_request(999, 0, 1, "c"))) is None  # unknown key


def test_api_versions_response_advertises_what_the_library_speaks():
    msg = api_versions_response()
    keys = {k.api_key: (k.min_version, k.max_version) for k in msg.api_keys}
    assert keys[18][1] >= 4 and keys[0][0] == 0 and len(keys) > 80


# --------------------------------------------------------------------------
# strict decoding, partial results


def test_strict_decoding_names_the_trailing_bytes():
    frame = encode_request(MetadataRequest(topics=None), 12, 1, "c")[4:] + b"abc"
    header, msg = decode_request(frame)
    assert trailing_bytes(msg) == 3
    with pytest.raises(TrailingBytesError, match=r"MetadataRequest v12 trailing bytes at byte \d+: 3 bytes after"):
        decode_request(frame, strict=True)
    resp = encode_response(ApiVersionsResponse(), 3, 1)[4:] + b"\x00" * 5
    with pytest.raises(TrailingBytesError, match="5 bytes after the body") as err:
        decode_response(resp, 18, 3, strict=True)
    assert err.value.header.correlation_id == 1
    assert trailing_bytes(decode_response(resp[:-5], 18, 3)[1]) == 0


def test_a_body_that_fails_part_way_keeps_what_was_read():
    good = encode_response(LeaveGroupResponse(error_code=25, members=[
        LeaveGroupResponse.MemberResponse(member_id="m", group_instance_id="i")]), 3, 8)[4:]
    with pytest.raises(TruncatedError) as err:
        decode_response(good[:-4], 13, 3)
    exc = err.value
    assert exc.header.correlation_id == 8 and exc.path[:2] == ["members", "[0]"]
    assert exc.partial.error_code == 25 and exc.partial.members is None
    req = read_request(encode_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]),
                                      4, 2, "c")[4:-2])
    assert req.header.correlation_id == 2 and req.error.partial is not None and req.error.partial.topics is None


# --------------------------------------------------------------------------
# one response object for every version; introspection


def test_lenient_encoding_drops_fields_a_version_lacks():
    reply = LeaveGroupResponse(error_code=0, members=[LeaveGroupResponse.MemberResponse(member_id="m")])
    with pytest.raises(EncodeError, match="members"):
        encode_response(reply, 1, 1)
    assert encode_response(reply, 1, 1, lenient=True) == encode_response(LeaveGroupResponse(error_code=0), 1, 1)
    offsets = ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=[
        ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=0, offset=5, leader_epoch=3)])])
    for v in range(ListOffsetsResponse.LOWEST_VERSION, ListOffsetsResponse.HIGHEST_VERSION + 1):
        frame = encode_response(offsets, v, 1, lenient=True)
        _, back = decode_response(frame[4:], 2, v)
        assert back.topics[0].partitions[0].partition_index == 0


def test_fields_of_a_version():
    fields = {f.name: f for f in MetadataResponse.fields(12)}
    assert list(fields)[:2] == ["throttle_time_ms", "brokers"]
    assert fields["cluster_id"].nullable and fields["cluster_id"].type == "string"
    assert fields["brokers"].type == "[]MetadataResponseBroker"
    assert [f.name for f in fields["brokers"].fields] == ["node_id", "host", "port", "rack"]
    assert "error_code" not in fields  # v13 on
    tagged = {f.name: f for f in ApiVersionsResponse.fields(3) if f.tagged}
    assert tagged["finalized_features_epoch"].tag == 1 and tagged["finalized_features_epoch"].default == -1
    assert not any(f.tagged for f in ApiVersionsResponse.fields(2))
    topic_data = {f.name: f for f in P.fields(9)}["topic_data"]
    partition_data = {f.name: f for f in topic_data.fields}["partition_data"]
    assert {f.name: f.zero_copy for f in partition_data.fields} == {"index": False, "records": True}
    with pytest.raises(UnsupportedVersionError):
        MetadataResponse.fields(99)


@pytest.mark.engine_independent
def test_nested_structs_tell_their_fields_too():
    Topic = MetadataResponse.MetadataResponseTopic
    assert Topic.fields(12) == {f.name: f for f in MetadataResponse.fields(12)}["topics"].fields
    assert [f.name for f in Topic.fields(0)] == ["error_code", "name", "partitions"]
    assert Topic.VALID_VERSIONS == "0-13" and Topic.supports(13) and not Topic.supports(14)
    # tagged only where the message is flexible: the message decides, not the struct
    partition = FetchResponse.PartitionData
    assert {f.name: f.tag for f in partition.fields(12) if f.tagged} == {
        "diverging_epoch": 0, "current_leader": 1, "snapshot_id": 2}
    assert "diverging_epoch" not in {f.name for f in partition.fields(11)}
    # a struct held by fields of some versions only answers for those
    assert LeaveGroupResponse.MemberResponse.VALID_VERSIONS == "3-5"
    with pytest.raises(UnsupportedVersionError, match=r"LeaveGroupResponse\.MemberResponse v2 .*versions 3-5"):
        LeaveGroupResponse.MemberResponse.fields(2)


@pytest.mark.engine_independent
def test_every_nested_struct_answers_for_exactly_the_versions_that_hold_it():
    from kafkaproto import messages

    def walk(cls, v, held):
        infos = {f.name: f for f in cls.fields(v)}
        for f in cls._FIELDS:
            if f.struct is not None and f.versions >> v & 1:
                held.setdefault(f.struct, set()).add(v)
                assert f.struct.fields(v) == infos[f.attr].fields, (f.struct.__qualname__, v)
                walk(f.struct, v, held)

    checked, nested = set(), set()
    for cls in {messages.get(name) for name in messages.CLASSES}:
        nested |= {x for x in vars(cls).values() if isinstance(x, type) and x.__qualname__.startswith(cls.NAME + ".")}
        held = {}
        for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            if cls.supports(v):
                walk(cls, v, held)
        for struct_cls, versions in held.items():
            assert {v for v in range(64) if struct_cls.supports(v)} == versions, struct_cls.__qualname__
            checked.add(struct_cls)
    assert checked == nested and len(nested) > 300


# --------------------------------------------------------------------------
# storing produced batches


CASES = [(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")] + \
        [(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")]


@pytest.mark.parametrize("magic,codec", CASES)
def test_assign_offsets_as_kafka_reads_them(java_oracle, magic, codec):
    blob = R.encode([(b"k%d" % i, b"v%d" % i) for i in range(3)], magic=magic, codec=codec, now=1000) + \
        R.encode([(b"x", b"y")], magic=magic, codec=codec, now=2000)
    out, nxt = R.assign_offsets(blob, 500, log_append_time=9999 if magic else None)
    assert nxt == 504
    if magic or codec == "none":
        assert len(out) == len(blob)  # patched where they are: nothing re-encoded
    ours = [(r.offset, r.timestamp, r.key) for b in R.decode(out) for r in b.records]  # CRCs checked
    assert [o for o, _, _ in ours] == [500, 501, 502, 503]
    theirs = java_oracle.records_decode(out)
    assert all(b["is_valid"] for b in theirs)
    assert [(r["offset"], r["timestamp"]) for b in theirs for r in b["records"]] == [(o, t) for o, t, _ in ours]
    if magic:
        assert {t for _, t, _ in ours} == {9999} and {b["timestamp_type"] for b in theirs} == {"log_append"}
    again, _ = R.assign_offsets(out, 500, log_append_time=9999 if magic else None)
    assert again == out


def test_assign_offsets_says_what_a_log_index_needs():
    blob = R.encode([(b"k", b"v")] * 3, producer_id=9, producer_epoch=1, base_sequence=40, now=77) + \
        R.encode([(b"k", b"v")], now=88)
    out, nxt, batches = R.assign_offsets(blob, 10, batches=True)
    assert nxt == 14 and [(b.position, b.base_offset, b.last_offset, b.max_timestamp, b.producer_id,
                           b.base_sequence) for b in batches] == [(0, 10, 12, 77, 9, 40),
                                                                  (batches[0].size, 13, 13, 88, -1, -1)]
    assert R.assign_offsets(None, 5) == (None, 5)


def test_assign_offsets_refuses_a_partial_batch():
    blob = R.encode([(b"k", b"v")])
    with pytest.raises(CorruptRecordError, match="ends inside a batch"):
        R.assign_offsets(blob[:-3], 0)


def test_accepts_rejects_and_abandons():
    conn = ServerConnection(versions={18: (0, 2), 3: (0, 12), 11: (0, 5)})
    stream = (encode_request(MetadataRequest(topics=None), 12, 1, "c") + encode_request(ApiVersionsRequest(), 3, 2, "c")
              + encode_request(MetadataRequest(topics=None), 4, 3, "c")
              + encode_request(JoinGroupRequest(group_id="g"), 6, 4, "c"))
    meta, av, meta4, join = conn.receive(stream)
    assert conn.accepts(meta) and conn.accepts(meta4) and not conn.accepts(av) and not conn.accepts(join)
    assert conn.reject(av) == []                        # waits behind Metadata
    assert conn.abandon(meta) != []                     # a failed handler: the KIP-511 reply can go now
    out = conn.reject(join)                             # JoinGroup v6 > 5: its top-level error code says so
    assert out == []                                    # behind Metadata v4
    done = conn.respond(meta4, MetadataResponse())
    frames = joined(done)
    _, reply = decode_response(frames[4:4 + struct.unpack(">i", frames[:4])[0]], 3, 4)
    assert reply == MetadataResponse()
    rest = frames[4 + struct.unpack(">i", frames[:4])[0]:]
    _, jg = decode_response(rest[4:], 11, 6)
    assert jg.error_code == ErrorCode.UNSUPPORTED_VERSION and conn.pending == 0
    assert [k.api_key for k in conn.api_versions().api_keys] == [3, 11, 18]


def test_one_request_object_for_every_version():
    from kafkaproto.messages import OffsetFetchRequest

    req = OffsetFetchRequest(group_id="g", topics=None, require_stable=True)
    for v in range(OffsetFetchRequest.LOWEST_VERSION, 8):
        if v < 2:
            req.topics = []
        frame = encode_request(req, v, 1, "c", lenient=True)
        assert decode_request(frame[4:])[1].group_id == "g"
    with pytest.raises(EncodeError):
        encode_request(req, 6, 1, "c")  # require_stable: v7 on
