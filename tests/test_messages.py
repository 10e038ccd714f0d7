"""Generated messages: coverage of the schemas, round trips of every class and
version, tagged fields, defaults, errors with field paths."""

import copy
import gc
import pickle
import random
import subprocess
import sys
import uuid
import weakref

import pytest
from hypothesis import HealthCheck, given, settings

from kafkaproto import (
    EncodeError,
    InvalidValueError,
    KafkaProtocolError,
    TruncatedError,
    UnknownApiError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from kafkaproto import _kinds as K
from kafkaproto.error_codes import ErrorCode, error_name, is_retriable
from kafkaproto.messages import APIS, CLASSES, api_name, get, request_class, response_class
from support.message_values import random_message, strategy

ALL = sorted(CLASSES)
PAIRS = [(name, v) for name in ALL for v in range(get(name).LOWEST_VERSION, get(name).HIGHEST_VERSION + 1)
         if get(name).supports(v) and get(name).NAME == name]


def test_every_api_key_0_to_94_has_both_halves():
    assert sorted(APIS) == list(range(95))
    for key, (_req, _resp) in APIS.items():
        assert request_class(key).API_KEY == key == response_class(key).API_KEY
        assert request_class(key).VALID_VERSIONS == response_class(key).VALID_VERSIONS


def test_kafka_4_4_keys_and_a_key_beyond_them():
    assert request_class(93).NAME == "StreamsGroupTopologyDescriptionUpdateRequest"
    assert request_class(94).NAME == "UnregisterControllerRequest"
    with pytest.raises(UnknownApiError):
        request_class(95)
    frame = b"\x00\x5f\x00\x00\x00\x00\x00\x01\x00\x00"
    with pytest.raises(UnknownApiError, match="api key 95 is not known"):
        decode_request(frame)


def test_layers_give_old_versions_back():
    produce = request_class(0)
    assert produce.VALID_VERSIONS == "0-13"
    assert produce.NEWEST_VERSIONS == "3-13" and produce.SNAPSHOT_ONLY_VERSIONS == "0-2"
    assert request_class(1).VALID_VERSIONS == "0-18"
    # ZooKeeper-era keys come from the snapshot
    assert request_class(4).NAME == "LeaderAndIsrRequest"


def test_api_key_74_alias():
    assert request_class(74).NAME == "ListConfigResourcesRequest"
    assert get("ListClientMetricsResourcesRequest") is request_class(74)
    assert api_name(74) == "ListConfigResources"


def test_data_and_header_schemas_exist():
    for name in ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment", "LeaderChangeMessage",
                 "DefaultPrincipalData", "RequestHeader", "ResponseHeader", "VotersRecord"):
        assert get(name).NAME == name
    sub = get("ConsumerProtocolSubscription")(topics=["a", "b"], user_data=b"\x01")
    assert get("ConsumerProtocolSubscription").decode(sub.encode(1), 1) == sub


def test_generated_header_schema_agrees_with_the_header_codec():
    from kafkaproto import RequestHeader, encode_request_header

    for v in (0, 1, 2):
        # header v0 has no client id (and Kafka 4's schema no longer lets one be dropped silently)
        client_id = "c1" if v else ""
        gen = get("RequestHeader")(request_api_key=18, request_api_version=3, correlation_id=7, client_id=client_id)
        assert gen.encode(v) == encode_request_header(RequestHeader(18, 3, 7, client_id or None), v)


@pytest.mark.parametrize("name,version", PAIRS)
def test_random_round_trip_every_class_and_version(name, version):
    cls = get(name)
    for seed in range(3):
        obj = random_message(cls, version, random.Random(seed))
        data = obj.encode(version)
        back, end = cls.decode(data, version, with_end=True)
        assert end == len(data)
        assert back == obj
        assert back.encode(version) == data


@pytest.mark.parametrize("name", ["MetadataResponse", "FetchResponse", "ProduceRequest", "ApiVersionsResponse",
                                  "JoinGroupRequest", "OffsetCommitRequest", "CreateTopicsRequest",
                                  "DescribeTopicPartitionsResponse", "ConsumerGroupHeartbeatResponse"])
def test_hypothesis_round_trip(name):
    cls = get(name)
    for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategy(cls, version))
        def check(obj):
            data = obj.encode(version)
            assert cls.decode(data, version) == obj
            assert cls.decode(data, version).encode(version) == data

        check()


# ---------------------------------------------------------------------------
# tagged fields


def test_unknown_tagged_fields_survive_byte_exactly():
    cls = get("ApiVersionsRequest")
    body = bytes.fromhex("0361626301320302" "0000" "0703616263")  # name "abc", version "12", two unknown tags
    body = bytes.fromhex("04616263" "033132" "02" "0000" "0703616263")
    msg = cls.decode(body, 3)
    assert msg.client_software_name == "abc" and msg.client_software_version == "12"
    assert msg.unknown_tagged_fields == ((0, b""), (7, b"abc"))
    assert msg.encode(3) == body


def test_known_and_unknown_tags_merge_in_ascending_order():
    cls = get("FetchResponse")
    part = cls.PartitionData(partition_index=1, records=None)
    part.current_leader = cls.LeaderIdAndEpoch(leader_id=3, leader_epoch=4)  # tag 1
    part.unknown_tagged_fields = [(0x7F, b"z")]
    part.diverging_epoch = cls.EpochEndOffset(epoch=1, end_offset=2)  # tag 0
    msg = cls(responses=[cls.FetchableTopicResponse(topic_id=uuid.UUID(int=5), partitions=[part])])
    data = msg.encode(13)
    back = cls.decode(data, 13)
    assert back == msg
    # the partition's tagged section: 3 entries, tags 0, 1, 127
    assert b"\x03\x00" in data and back.responses[0].partitions[0].unknown_tagged_fields == ((0x7F, b"z"),)


def test_tagged_fields_with_default_values_are_not_written():
    cls = get("FetchResponse")
    plain = cls(responses=[cls.FetchableTopicResponse(partitions=[cls.PartitionData(records=None)])])
    data = plain.encode(12)
    explicit = cls(responses=[cls.FetchableTopicResponse(partitions=[cls.PartitionData(
        records=None, current_leader=cls.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1))])])
    assert explicit.encode(12) == data


def test_tagged_value_must_fill_its_declared_size():
    cls = get("ApiVersionsResponse")
    good = cls(finalized_features_epoch=5).encode(3)
    assert cls.decode(good, 3).finalized_features_epoch == 5
    # tag 1 (finalized_features_epoch, int64) declared as 9 bytes instead of 8
    bad = good[:-11] + b"\x01\x01\x09" + good[-8:] + b"\x00"
    with pytest.raises(KafkaProtocolError):
        cls.decode(bad, 3)


def test_unknown_tags_on_a_non_flexible_version_raise():
    msg = get("MetadataRequest")(topics=None)
    msg.unknown_tagged_fields = [(1, b"x")]
    with pytest.raises(EncodeError, match="not flexible"):
        msg.encode(4)
    assert get("MetadataRequest").decode(msg.encode(9), 9).unknown_tagged_fields == ((1, b"x"),)


# ---------------------------------------------------------------------------
# versions, defaults, ignorable


def test_fields_absent_from_a_version_are_defaults_on_decode():
    cls = get("MetadataResponse")
    msg = cls.decode(cls(brokers=[], topics=[]).encode(0), 0)
    assert msg.cluster_id is None and msg.controller_id == -1 and msg.throttle_time_ms == 0


def test_non_ignorable_non_default_field_cannot_be_dropped():
    cls = get("CreateTopicsRequest")
    with pytest.raises(EncodeError, match=r"CreateTopicsRequest v0 \.validate_only: True is not the default"):
        cls(validate_only=True).encode(0)
    assert cls(validate_only=False).encode(0) == cls().encode(0)
    # ignorable: dropped (FetchRequest v3 has no isolation level)
    assert get("FetchRequest")(isolation_level=1).encode(3) == get("FetchRequest")().encode(3)
    # ignorable: silently dropped
    msg = get("MetadataResponse")(cluster_id="c", brokers=[], topics=[])
    assert get("MetadataResponse").decode(msg.encode(1), 1).cluster_id is None


def test_unsupported_versions_raise():
    with pytest.raises(UnsupportedVersionError, match=r"MetadataRequest v14 is not supported \(versions 0-13\)"):
        get("MetadataRequest")().encode(14)
    with pytest.raises(UnsupportedVersionError):
        get("MetadataRequest").decode(b"", -1)


def test_defaults_repr_equality_to_dict():
    cls = get("MetadataResponse")
    a = cls()
    assert a.controller_id == -1 and a.brokers == [] and a.cluster_id is None
    assert a.brokers is not cls().brokers  # fresh lists
    assert a == cls() and a != cls(controller_id=1)
    assert repr(cls.MetadataResponseBroker(node_id=1, host="h", port=9)) == \
        "MetadataResponseBroker(node_id=1, host='h', port=9, rack=None)"
    d = cls(brokers=[cls.MetadataResponseBroker(node_id=1, host="h", port=9)]).to_dict()
    assert d["brokers"] == [{"node_id": 1, "host": "h", "port": 9, "rack": None}]
    with pytest.raises(TypeError, match="has no field nope"):
        cls(nope=1)


def test_nullable_struct_marker():
    cls = get("DescribeTopicPartitionsRequest")
    assert cls.decode(cls(cursor=None).encode(0), 0).cursor is None
    c = cls.Cursor(topic_name="t", partition_index=3)
    assert cls.decode(cls(cursor=c).encode(0), 0).cursor == c
    assert cls(cursor=None).encode(0).endswith(b"\xff\x00")


# ---------------------------------------------------------------------------
# errors carry the field path and offset


def _metadata_v12():
    cls = get("MetadataResponse")
    topics = [cls.MetadataResponseTopic(name=f"t{t}", topic_id=uuid.UUID(int=t + 1), partitions=[
        cls.MetadataResponsePartition(partition_index=p, leader_id=1, leader_epoch=7, replica_nodes=[1, 2, 3],
                                      isr_nodes=[1, 2], offline_replicas=[]) for p in range(10)]) for t in range(5)]
    return cls, cls(brokers=[cls.MetadataResponseBroker(node_id=1, host="b", port=1)], cluster_id="c",
                    controller_id=1, topics=topics)


def test_error_path_and_offset_on_truncation():
    cls, msg = _metadata_v12()
    data = msg.encode(12)
    # find where topics[3].partitions[7].leader_epoch lives by truncating at every byte
    seen = set()
    for cut in range(len(data)):
        with pytest.raises(KafkaProtocolError) as info:
            cls.decode(data[:cut], 12)
        err = info.value
        assert str(err).startswith("MetadataResponse v12 ")
        assert err.offset is not None and err.offset <= cut
        seen.add(str(err).split(" at byte")[0])
    assert "MetadataResponse v12 .topics[3].partitions[7].leader_epoch" in seen
    assert "MetadataResponse v12 .brokers[0].host" in seen


def test_error_message_shape():
    cls, msg = _metadata_v12()
    data = msg.encode(12)
    r = cls.decode(data, 12, with_end=True)
    assert r[1] == len(data)
    # cut in the middle of the leader_epoch of topics[3].partitions[7]
    for cut in range(len(data)):
        try:
            cls.decode(data[:cut], 12)
        except KafkaProtocolError as exc:
            path = ["topics", "[3]", "partitions", "[7]", "leader_epoch"]
            if exc.path == path and "need 4 bytes, 2 left" in str(exc):
                assert str(exc) == (f"MetadataResponse v12 .topics[3].partitions[7].leader_epoch at byte {exc.offset}: "
                                    "need 4 bytes, 2 left")
                break
    else:
        pytest.fail("no truncation inside leader_epoch")


# An independent map of where every value of an encoded message sits, walked
# from the field specs (not from the engines' plans): it predicts, for every
# truncation, the error class, field path, offset and detail of the error.

_FIXED = {K.BOOL: 1, K.INT8: 1, K.INT16: 2, K.INT32: 4, K.INT64: 8, K.UINT16: 2, K.UINT32: 4, K.FLOAT64: 8, K.UUID: 16}


def _uvarint_size(u):
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


def _layout(cls, obj, version, flexible, path, pos, out):
    """Append (kind, path, start, ...) for each value of obj as it is encoded; return the end offset."""
    for f in cls._FIELDS:
        if not f.versions >> version & 1 or (flexible and f.tagged >> version & 1):
            continue
        v = getattr(obj, f.attr)
        compact = flexible and f.compact
        if f.kind == K.ARRAY:
            n = -1 if v is None else len(v)
            prefix = _uvarint_size(n + 1) if compact else 4
            out.append(("count", [*path, f.attr], pos, prefix, n, compact))
            pos += prefix
            for i, x in enumerate(v or ()):
                pos = _value(f.elem, f, x, version, flexible, [*path, f.attr, f"[{i}]"], pos, out)
        else:
            pos = _value(f.kind, f, v, version, flexible, [*path, f.attr], pos, out)
    if flexible:
        out.append(("tags", path, pos))  # no tagged fields set: a one-byte count of 0
        pos += 1
    return pos


def _value(kind, f, v, version, flexible, path, pos, out):
    compact = flexible and f.compact
    if kind in _FIXED:
        out.append(("fixed", path, pos, _FIXED[kind]))
        return pos + _FIXED[kind]
    if kind == K.STRUCT:
        assert v is not None and not f.nullable >> version & 1, "keep the sample free of nullable structs"
        return _layout(f.struct, v, version, flexible, path, pos, out)
    body = -1 if v is None else len(v.encode() if isinstance(v, str) else v)
    prefix = _uvarint_size(body + 1) if compact else (2 if kind == K.STRING else 4)
    out.append(("length", path, pos, prefix, max(body, 0), compact))
    return pos + prefix + max(body, 0)


def _expected_error(entries, cut):
    """(error class, path, offset, detail) of decoding the first `cut` bytes."""
    for entry in entries:
        kind, path, start = entry[:3]
        left = cut - start
        if kind == "fixed":
            if left < entry[3]:
                return TruncatedError, path, start, f"need {entry[3]} bytes, {left} left"
        elif kind == "tags":
            if left < 1:
                return TruncatedError, path, start, "need 1 bytes, 0 left"
        else:
            prefix, size, compact = entry[3:]
            if left < prefix:  # inside the length: a varint runs out, an int16/int32 is short
                return TruncatedError, path, start, (f"need {left + 1} bytes, {left} left" if compact
                                                      else f"need {prefix} bytes, {left} left")
            if kind == "count" and size > left - prefix:
                return InvalidValueError, path, start, f"count {size} larger than the {left - prefix} bytes left"
            if kind == "length" and size > left - prefix:
                return TruncatedError, path, start, f"need {size} bytes, {left - prefix} left"
    raise AssertionError(f"the whole message fits in {cut} bytes")


@pytest.mark.parametrize("version", [8, 12])  # int16/int32 lengths, then compact ones with tagged sections
def test_every_truncation_names_its_field_and_offset(version):
    cls, msg = _metadata_v12()
    msg.brokers[0].rack = "r1"
    data = msg.encode(version)
    entries = []
    assert _layout(cls, msg, version, cls.is_flexible(version), [], 0, entries) == len(data)
    context = f"MetadataResponse v{version}"
    for cut in range(len(data)):
        error, path, offset, detail = _expected_error(entries, cut)
        with pytest.raises(KafkaProtocolError) as info:
            cls.decode(data[:cut], version)
        exc = info.value
        assert (type(exc), exc.path, exc.offset, exc.detail) == (error, path, offset, detail), cut
        where = "." + ".".join(path).replace(".[", "[") if path else exc.what
        assert str(exc) == f"{context} {where} at byte {offset}: {detail}", cut


def test_encode_errors_have_paths():
    cls = get("MetadataResponse")
    msg = cls(brokers=[cls.MetadataResponseBroker(node_id=1, host=None, port=1)])
    with pytest.raises(EncodeError, match=r"MetadataResponse v1 \.brokers\[0\]\.host: null in a non-nullable"):
        msg.encode(1)
    msg = cls(brokers=[cls.MetadataResponseBroker(node_id=2**40, host="h", port=1)])
    with pytest.raises(EncodeError, match=r"\.brokers\[0\]\.node_id: value 1099511627776 out of range"):
        msg.encode(1)
    with pytest.raises(EncodeError, match="expected MetadataResponseBroker, got str"):
        cls(brokers=["x"]).encode(1)


# ---------------------------------------------------------------------------
# frames, headers, error codes


def test_header_version_rules():
    assert request_header_version(7, 0) == 0          # ControlledShutdown v0
    assert request_header_version(3, 8) == 1 and request_header_version(3, 9) == 2
    assert response_header_version(18, 3) == 0       # ApiVersions: always v0
    assert response_header_version(3, 9) == 1 and response_header_version(3, 8) == 0
    assert request_header_version(80, 0) == 2 and response_header_version(80, 0) == 1  # headerVersions key


def test_version_masks_agree_with_every_class():
    """The header versions are read from the generated version masks, not the classes: the two say the same."""
    from kafkaproto.capture.walker.streams import request_versions
    from kafkaproto.messages import version_masks

    for key, (req, resp) in APIS.items():
        masks = version_masks(key)
        for at, name in ((0, req), (3, resp)):
            if name is None:
                assert masks[at] == 0
                continue
            cls = get(name)
            if at == 0:
                assert request_versions().get(key) == (cls.LOWEST_VERSION, cls.HIGHEST_VERSION), name
            for v in range(-1, 80):
                assert bool(masks[at] >> v & 1 if 0 <= v < 64 else 0) == cls.supports(v), (name, v)
                if v < 0:
                    flexible = False
                elif v < 64:
                    flexible = bool(masks[at + 1] >> v & 1)
                else:
                    flexible = masks[at + 2] is not None and v >= masks[at + 2]
                assert flexible == cls.is_flexible(v), (name, v)


def test_header_tables_load_no_message_class():
    """What the compiled loops are handed is built without importing the 190 message modules."""
    code = ("import sys; from kafkaproto.protocol import header_table; header_table(True); header_table(False); "
            "print(sorted(m for m in sys.modules if m.startswith('kafkaproto.messages._gen.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['kafkaproto.messages._gen.error_codes']"]


def test_request_frames_round_trip_every_api():
    for key in APIS:
        cls = request_class(key)
        v = cls.HIGHEST_VERSION
        msg = random_message(cls, v, random.Random(key))
        frame = encode_request(msg, v, correlation_id=key, client_id="tool")
        header, back = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (key, v, key)
        assert header.client_id == ("tool" if request_header_version(key, v) else None)
        assert back == msg
        resp = random_message(response_class(key), v, random.Random(key))
        rframe = encode_response(resp, v, correlation_id=9)
        rheader, rback = decode_response(rframe[4:], key, v)
        assert rheader.correlation_id == 9 and rback == resp


def test_trailing_bytes_after_a_body_are_tolerated():
    # librdkafka sends some after Metadata requests; Kafka's parser ignores them
    frame = encode_request(get("MetadataRequest")(topics=[]), 4, 1, "rdkafka")[4:] + b"\x00\x00"
    header, msg, end = decode_request(frame, with_end=True)
    assert msg.topics == [] and end == len(frame) - 2


def test_api_versions_error_reply_in_v0_layout():
    resp = get("ApiVersionsResponse")(error_code=35, api_keys=[
        get("ApiVersionsResponse").ApiVersion(api_key=18, min_version=0, max_version=2)])
    frame = encode_response(resp, 0, 5)
    header, msg = decode_response(frame[4:], 18, 4)
    assert msg.error_code == ErrorCode.UNSUPPORTED_VERSION and msg.api_keys[0].max_version == 2


def test_error_codes():
    assert ErrorCode.of(3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and ErrorCode.of(3).retriable
    assert ErrorCode.of(12345) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode(12345) is ErrorCode.UNKNOWN_SERVER_ERROR and ErrorCode(-20000) is ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(ValueError):
        ErrorCode("3")  # not a code at all
    assert error_name(35) == "UNSUPPORTED_VERSION" and not is_retriable(35)
    assert len(ErrorCode) > 130


@pytest.mark.parametrize("name,version", PAIRS)
def test_hypothesis_round_trip_every_class_and_version(name, version):
    cls = get(name)

    @settings(max_examples=4, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy(cls, version))
    def check(obj):
        data = obj.encode(version)
        back = cls.decode(data, version)
        assert back == obj and back.encode(version) == data

    check()


def test_signature_lists_the_fields_with_their_defaults():
    import inspect
    import pydoc

    request = get("MetadataRequest")
    for cls in (request, get("MetadataResponse").MetadataResponseTopic, get("FetchResponse").PartitionData):
        sig = inspect.signature(cls)
        names = [f.attr for f in cls._FIELDS] + ["unknown_tagged_fields"]
        assert list(sig.parameters) == names, cls
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
        plain = cls()
        for f in cls._FIELDS:
            assert sig.parameters[f.attr].default == getattr(plain, f.attr), (cls, f.attr)
        assert sig.parameters["unknown_tagged_fields"].default == ()
        sig.bind(**{f.attr: getattr(plain, f.attr) for f in cls._FIELDS})
    # help() heads the class with its signature (it was "MetadataRequest(**kwargs)")
    text = pydoc.render_doc(request, renderer=pydoc.plaintext)
    head = next(line for line in text.splitlines() if "MetadataRequest(" in line and "class" not in line)
    assert "MetadataRequest(*, topics=[], allow_auto_topic_creation=True," in head, head


# ---------------------------------------------------------------------------
# decoded objects: what they promise after decoding


def _decoded_metadata():
    cls, built = _metadata_v12()
    built.topics[1].topic_authorized_operations = -2147483648
    return cls, built, cls.decode(built.encode(12), 12)


def test_decoded_tree_is_the_built_tree():
    cls, built, msg = _decoded_metadata()
    assert msg == built and repr(msg) == repr(built) and msg.to_dict() == built.to_dict()
    u = msg.topics[2].topic_id
    assert type(u) is uuid.UUID and u == uuid.UUID(int=3) and hash(u) == hash(uuid.UUID(int=3))
    assert str(u) == str(uuid.UUID(int=3)) and u.bytes == uuid.UUID(int=3).bytes
    assert u.is_safe is uuid.SafeUUID.unknown and u < uuid.UUID(int=4)
    assert msg.topics[1].topic_authorized_operations == -2147483648


def test_decoded_tree_mutated_collected_and_encoded():
    cls, built, msg = _decoded_metadata()
    topic = msg.topics[0]
    topic.name = "renamed"
    topic.partitions.append(cls.MetadataResponsePartition(partition_index=99, replica_nodes=[4]))
    topic.partitions[0].replica_nodes.append(9)
    msg.topics[1].partitions = []
    msg.brokers = msg.brokers + [cls.MetadataResponseBroker(node_id=2, host="h2", port=2)]
    del msg.topics[4]
    gc.collect()
    again = cls.decode(msg.encode(12), 12)
    assert again == msg and again != built
    assert again.topics[0].name == "renamed" and again.topics[0].partitions[-1].replica_nodes == [4]
    assert again.topics[0].partitions[0].replica_nodes == [1, 2, 3, 9] and again.topics[1].partitions == []
    assert [b.node_id for b in again.brokers] == [1, 2] and len(again.topics) == 4


def test_decoded_tree_freed_when_dropped():
    cls, _, msg = _decoded_metadata()
    part = msg.topics[3].partitions[7]
    nodes = part.replica_nodes
    before = sys.getrefcount(part), sys.getrefcount(nodes)
    del msg
    # the tree's own references are gone at once (reference counting; no collection needed)
    assert (sys.getrefcount(part), sys.getrefcount(nodes)) == (before[0] - 1, before[1])
    del part
    assert sys.getrefcount(nodes) == before[1] - 1


def test_decoded_tree_pickles_and_copies():
    cls, built, msg = _decoded_metadata()
    for other in (pickle.loads(pickle.dumps(msg)), pickle.loads(pickle.dumps(msg, 2)), copy.deepcopy(msg),
                  copy.copy(msg)):
        assert other == msg and other.encode(12) == msg.encode(12)
        assert other.topics[2].topic_id == uuid.UUID(int=3)


def test_decode_leaves_the_collector_as_it_was():
    cls, built, msg = _decoded_metadata()
    data = built.encode(12)
    assert gc.isenabled()
    cls.decode(data, 12)
    assert gc.isenabled()
    with pytest.raises(KafkaProtocolError):
        cls.decode(data[:100], 12)
    assert gc.isenabled()
    gc.disable()
    try:
        cls.decode(data, 12)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.compiled_only
def test_compiled_decoded_tree_is_untracked():
    # no cycles in a decoded tree: the compiled engine keeps it out of the collector
    cls, built, msg = _decoded_metadata()
    for obj in (msg, msg.topics, msg.topics[0], msg.topics[0].partitions[0].replica_nodes, msg.brokers[0],
                msg.topics[0].topic_id):
        assert not gc.is_tracked(obj)
    assert gc.is_tracked(built) and gc.is_tracked(built.topics)
    # what is added later is tracked as usual
    msg.topics.append(cls.MetadataResponseTopic(name="new"))
    assert gc.is_tracked(msg.topics[-1])


def test_subclass_of_a_decoded_class_lives_and_dies_as_python_classes_do():
    # the compiled engine gives the classes it fills a one-pass dealloc; a
    # subclass (with a __dict__, weak references and a finalizer) keeps its own
    cls, built, msg = _decoded_metadata()
    died = []

    class Topic(cls.MetadataResponseTopic):
        def __del__(self):
            died.append(self.name)

    t = Topic(name="sub", partitions=[cls.MetadataResponsePartition(replica_nodes=[1])])
    t.extra = [t]  # a cycle through the __dict__: only the collector frees it
    ref = weakref.ref(t)
    parts = t.partitions
    before = sys.getrefcount(parts)
    del t
    gc.collect()
    assert ref() is None and died == ["sub"] and sys.getrefcount(parts) == before - 1
    assert cls.decode(msg.encode(12), 12) == built
