"""Tests of the Java oracle harness itself (not of kafkaproto).

They check the oracle against byte strings worked out by hand from the
Kafka protocol, so that the oracle can be trusted as a reference.
"""

from __future__ import annotations

import base64

import pytest

from .conftest_oracle import get_oracle
from .java_oracle import KAFKA_VERSIONS, OracleError

# Starts a JVM (the "peers" marker is registered in pyproject.toml).
pytestmark = pytest.mark.peers

API_VERSIONS = 18
METADATA = 3
PRODUCE = 0
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

APIVERSIONS_V3_HEX = "12 61 70 61 63 68 65 2d 6b 61 66 6b 61 2d 6a 61 76 61 06 33 2e 39 2e 31 00"


@pytest.fixture(scope="module", params=KAFKA_VERSIONS)
def java_oracle(request):
    """Both oracles: kafka-clients 4.4.0 and 3.9.1."""
    return get_oracle(request.param)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# --------------------------------------------------------------------- basics


def test_ping_reports_the_kafka_release(java_oracle, request):
    info = java_oracle.ping()
    assert info["pong"] is True
    assert info["kafka_version"] == java_oracle.kafka_version == request.node.callspec.params["java_oracle"]


def test_api_versions_request_v3_exact_bytes(java_oracle):
    body = java_oracle.encode(
        API_VERSIONS,
        "request",
        3,
        {"clientSoftwareName": "apache-kafka-java", "clientSoftwareVersion": "3.9.1"},
    )
    assert body == h(APIVERSIONS_V3_HEX)

    decoded = java_oracle.decode(API_VERSIONS, "request", 3, body)
    assert decoded["json"] == {"clientSoftwareName": "apache-kafka-java", "clientSoftwareVersion": "3.9.1"}
    assert decoded["reencoded"] == body
    assert decoded["consumed"] == len(body)
    assert decoded["trailing"] == 0
    assert decoded["trailing_bytes"] == b""


def test_decode_reports_trailing_bytes(java_oracle):
    decoded = java_oracle.decode(API_VERSIONS, "request", 3, h(APIVERSIONS_V3_HEX) + b"\xab\xcd")
    assert decoded["consumed"] == 25
    assert decoded["trailing"] == 2
    assert decoded["trailing_bytes"] == b"\xab\xcd"
    assert decoded["reencoded"] == h(APIVERSIONS_V3_HEX)


def test_api_versions_request_v0_is_empty(java_oracle):
    # v0-v2 have no fields; the v3 fields are dropped when they hold defaults.
    assert java_oracle.encode(API_VERSIONS, "request", 0, {}) == b""
    reply = java_oracle.encode_full(API_VERSIONS, "request", 0, {"clientSoftwareName": ""})
    assert reply["hex"] == ""


def test_metadata_request_v0(java_oracle):
    body = java_oracle.encode(METADATA, "request", 0, {"topics": [{"name": "t1"}, {"name": "abc"}]})
    # int32 array length, then int16-length-prefixed names
    assert body == h("00000002 0002 7431 0003 616263")
    decoded = java_oracle.decode(METADATA, "request", 0, body)
    assert [t["name"] for t in decoded["json"]["topics"]] == ["t1", "abc"]
    assert decoded["reencoded"] == body
    assert decoded["trailing"] == 0


def test_metadata_request_v0_rejects_null_topics(java_oracle):
    # topics is nullable only from v1: Kafka refuses to write null at v0.
    with pytest.raises(OracleError):
        java_oracle.encode(METADATA, "request", 0, {"topics": None})
    assert java_oracle.encode(METADATA, "request", 1, {"topics": None}) == h("ffffffff")


def test_metadata_request_v12(java_oracle):
    body = java_oracle.encode(METADATA, "request", 12, {"topics": [{"name": "t1"}]})
    expected = h(
        "02"  # compact array: 1 topic
        + "00" * 16  # topicId (zero uuid)
        + "03 7431"  # compact nullable string "t1"
        + "00"  # topic tagged fields
        + "01"  # allowAutoTopicCreation (default true)
        + "00"  # includeTopicAuthorizedOperations
        + "00"  # tagged fields
    )
    assert body == expected
    decoded = java_oracle.decode(METADATA, "request", 12, body)
    topic = decoded["json"]["topics"][0]
    assert topic["name"] == "t1"
    assert base64.urlsafe_b64decode(topic["topicId"] + "==") == bytes(16)
    assert decoded["json"]["allowAutoTopicCreation"] is True
    assert decoded["reencoded"] == body

    # null topics (all topics) is a compact null array: varint 0
    assert java_oracle.encode(METADATA, "request", 12, {"topics": None}) == h("00 01 00 00")


def test_fill_defaults_and_unknown_keys(java_oracle):
    reply = java_oracle.encode_full(METADATA, "request", 12, {"topics": [{"name": "t1", "nmae": 1}], "bogus": 2})
    assert sorted(reply["unknown_keys"]) == ["bogus", "topics[0].nmae"]
    # Kafka's strict converter needs every field of the version
    with pytest.raises(OracleError, match="topicId"):
        java_oracle.encode(METADATA, "request", 12, {"topics": [{"name": "t1"}]}, fill_defaults=False)


def test_unsupported_version_is_an_error(java_oracle):
    with pytest.raises(OracleError, match="does not have version"):
        java_oracle.encode(API_VERSIONS, "request", 99, {})
    with pytest.raises(OracleError, match="unknown api_key"):
        java_oracle.encode(9999, "request", 0, {})


def test_metadata_response_round_trip(java_oracle):
    resp = {
        "throttleTimeMs": 5,
        "brokers": [{"nodeId": 1, "host": "h", "port": 9092, "rack": None}],
        "clusterId": "cid",
        "controllerId": 1,
        "topics": [
            {
                "errorCode": 0,
                "name": "t",
                "isInternal": False,
                "partitions": [
                    {
                        "errorCode": 0,
                        "partitionIndex": 0,
                        "leaderId": 1,
                        "leaderEpoch": 3,
                        "replicaNodes": [1, 2],
                        "isrNodes": [1],
                        "offlineReplicas": [],
                    }
                ],
            }
        ],
    }
    for version in (1, 9, 12):
        body = java_oracle.encode(METADATA, "response", version, resp)
        decoded = java_oracle.decode(METADATA, "response", version, body)
        assert decoded["reencoded"] == body
        assert decoded["trailing"] == 0
        part = decoded["json"]["topics"][0]["partitions"][0]
        assert part["replicaNodes"] == [1, 2]
        assert decoded["json"]["brokers"][0]["port"] == 9092


# -------------------------------------------------------------------- headers


def test_request_header_v2_client_id_keeps_int16_length(java_oracle):
    header = {"requestApiKey": 3, "requestApiVersion": 12, "correlationId": 7, "clientId": "c1"}
    data = java_oracle.encode_header("request", 2, header)
    # api key, api version, correlation id, int16-length client id, empty tagged fields
    assert data == h("0003 000c 00000007 0002 6331 00")
    decoded = java_oracle.decode_header("request", 2, data)
    assert decoded["json"] == header
    assert decoded["reencoded"] == data

    assert java_oracle.encode_header("request", 1, header) == h("0003 000c 00000007 0002 6331")
    assert java_oracle.encode_header("request", 1, dict(header, clientId=None)) == h("0003 000c 00000007 ffff")
    v0 = {"requestApiKey": 3, "requestApiVersion": 0, "correlationId": 7}
    if java_oracle.kafka_version.startswith("3."):
        assert java_oracle.encode_header("request", 0, v0) == h("0003 0000 00000007")
    else:  # header v0 went with its one user, ControlledShutdown v0 (Kafka 4.0)
        with pytest.raises(OracleError, match="does not have version 0"):
            java_oracle.encode_header("request", 0, v0)


def test_response_headers(java_oracle):
    assert java_oracle.encode_header("response", 0, {"correlationId": 258}) == h("00000102")
    assert java_oracle.encode_header("response", 1, {"correlationId": 258}) == h("00000102 00")
    decoded = java_oracle.decode_header("response", 1, h("00000102 00 ff"))
    assert decoded["json"] == {"correlationId": 258}
    assert decoded["trailing_bytes"] == b"\xff"


def test_header_versions(java_oracle):
    # ApiVersions responses always use header v0, even when the request is flexible
    assert java_oracle.header_versions(API_VERSIONS, 3) == {"request": 2, "response": 0, "supported": True}
    assert java_oracle.header_versions(API_VERSIONS, 2) == {"request": 1, "response": 0, "supported": True}
    assert java_oracle.header_versions(METADATA, 8) == {"request": 1, "response": 0, "supported": True}
    assert java_oracle.header_versions(METADATA, 9) == {"request": 2, "response": 1, "supported": True}
    # ControlledShutdown v0 is the one API with request header v0; Kafka 4.0 removed the API
    if java_oracle.kafka_version.startswith("3."):
        assert java_oracle.header_versions(7, 0)["request"] == 0
    else:
        with pytest.raises(OracleError, match="Unsupported API key 7"):
            java_oracle.header_versions(7, 0)


def test_versions_table(java_oracle):
    apis = {a["api_key"]: a for a in java_oracle.versions()}
    assert apis[PRODUCE]["name"] == "Produce"
    assert apis[METADATA]["name"] == "Metadata"
    av = apis[API_VERSIONS]
    assert av["name"] == "ApiVersions"
    assert av["oldest_version"] == 0
    assert av["latest_version"] >= 3
    flex = {v["version"]: v["flexible"] for v in av["versions"]}
    assert flex[2] is False and flex[3] is True
    for api in apis.values():
        versions = [v["version"] for v in api["versions"]]
        assert versions == list(range(api["oldest_version"], api["latest_version_unstable"] + 1))
        for v in api["versions"]:
            assert v["flexible"] == (v["request_header_version"] >= 2)


# -------------------------------------------------------------------- records


def _sample_records(magic):
    records = [
        {"timestamp": 1_700_000_000_000, "key": b"k1", "value": b"hello"},
        {"timestamp": 1_700_000_000_005, "key": None, "value": b"x" * 300},
        {"timestamp": 1_700_000_000_003, "key": b"k3", "value": None},
    ]
    if magic == 0:
        for r in records:
            del r["timestamp"]
    if magic == 2:
        records[0]["headers"] = [("a", b"\x01"), ("a", None), ("b", b"")]
        records[2]["offset_delta"] = 5
    return records


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_records_round_trip(java_oracle, magic, codec):
    records = _sample_records(magic)
    if codec == "zstd" and magic < 2:
        # zstd exists only from magic 2 on; Kafka's builder refuses it.
        with pytest.raises(OracleError, match="(?i)zstandard|zstd"):
            java_oracle.records_encode(records, magic=magic, codec=codec, base_offset=40)
        return
    data = java_oracle.records_encode(records, magic=magic, codec=codec, base_offset=40)
    batches = java_oracle.records_decode(data)
    full = java_oracle.records_decode_full(data)
    assert full["trailing"] == 0
    assert sum(b["size_in_bytes"] for b in batches) == len(data)

    assert all(b["magic"] == magic for b in batches)
    assert all(b["is_valid"] for b in batches)
    assert all(b["compression"] == codec for b in batches)
    if magic < 2 and codec == "none":
        assert len(batches) == 3  # one legacy entry per record
    else:
        assert len(batches) == 1

    got = [r for b in batches for r in b["records"]]
    offsets = [40, 41, 45] if magic == 2 else [40, 41, 42]
    assert [r["offset"] for r in got] == offsets
    assert [r["key_hex"] for r in got] == ["6b31", None, "6b33"]
    assert [r["value_hex"] for r in got] == [b"hello".hex(), ("x" * 300).encode().hex(), None]
    if magic == 0:
        assert [r["timestamp"] for r in got] == [-1, -1, -1]
    else:
        assert [r["timestamp"] for r in got] == [1_700_000_000_000, 1_700_000_000_005, 1_700_000_000_003]
        assert max(b["max_timestamp"] for b in batches) == 1_700_000_000_005
    if magic == 2:
        assert got[0]["headers"] == [["a", "01"], ["a", None], ["b", ""]]
        assert got[1]["headers"] == []
        assert batches[0]["base_offset"] == 40
        assert batches[0]["last_offset"] == 45
        assert batches[0]["count"] == 3


def test_records_v2_producer_fields(java_oracle):
    data = java_oracle.records_encode(
        [{"timestamp": 10, "value": b"a"}, {"timestamp": 11, "value": b"b"}],
        codec="lz4",
        base_offset=1000,
        producer_id=77,
        producer_epoch=3,
        base_sequence=12,
        transactional=True,
        partition_leader_epoch=9,
    )
    (batch,) = java_oracle.records_decode(data)
    assert batch["producer_id"] == 77
    assert batch["producer_epoch"] == 3
    assert batch["base_sequence"] == 12
    assert batch["last_sequence"] == 13
    assert batch["transactional"] is True
    assert batch["control"] is False
    assert batch["partition_leader_epoch"] == 9
    assert [r["sequence"] for r in batch["records"]] == [12, 13]
    # v2 layout: base offset, batch length, leader epoch, magic, crc
    assert data[:8] == (1000).to_bytes(8, "big")
    assert int.from_bytes(data[8:12], "big") == len(data) - 12
    assert data[12:16] == (9).to_bytes(4, "big")
    assert data[16] == 2
    assert int.from_bytes(data[17:21], "big") == batch["crc"]


def test_records_log_append_time(java_oracle):
    data = java_oracle.records_encode(
        [{"timestamp": 10, "value": b"a"}], timestamp_type="log_append", log_append_time=123456
    )
    (batch,) = java_oracle.records_decode(data)
    assert batch["timestamp_type"] == "log_append"
    assert batch["max_timestamp"] == 123456


def test_records_corruption_and_partial_batch(java_oracle):
    good = java_oracle.records_encode([{"timestamp": 1, "key": b"k", "value": b"v"}])
    assert good[-2:] == b"v\x00"  # value, then a zero header count
    data = bytearray(good)
    data[-2] ^= 0xFF  # damage the value: the CRC no longer matches
    (batch,) = java_oracle.records_decode(bytes(data))
    assert batch["is_valid"] is False
    assert batch["crc"] == java_oracle.records_decode(good)[0]["crc"]
    assert batch["records"][0]["value_hex"] == "89"
    assert "records_error" not in batch

    data = bytearray(good)
    data[-1] = 0x7F  # header count 63 (zigzag): the record cannot be read
    (batch,) = java_oracle.records_decode(bytes(data))
    assert batch["is_valid"] is False
    assert "records_error" in batch

    # a batch header claiming a size below the minimum is reported, not fatal
    bad_size = bytearray(good)
    bad_size[8:12] = (4).to_bytes(4, "big")
    reply = java_oracle.records_decode_full(bytes(bad_size))
    assert reply["batches"] == []
    assert "batches_error" in reply

    two = java_oracle.records_encode(
        batches=[
            {"records": [{"timestamp": 1, "value": b"a"}], "base_offset": 0},
            {"records": [{"timestamp": 2, "value": b"b"}], "base_offset": 1, "codec": "gzip"},
        ]
    )
    batches = java_oracle.records_decode(two)
    assert [b["base_offset"] for b in batches] == [0, 1]
    assert [b["compression"] for b in batches] == ["none", "gzip"]
    # a cut-off final batch is not returned, and is counted as trailing
    cut = java_oracle.records_decode_full(two[:-3])
    assert len(cut["batches"]) == 1
    assert cut["trailing"] == len(two) - 3 - cut["batches"][0]["size_in_bytes"]


def test_records_headers_need_magic_2(java_oracle):
    with pytest.raises(OracleError, match="header"):
        java_oracle.records_encode([{"timestamp": 1, "value": b"v", "headers": [("h", b"1")]}], magic=1)


def test_produce_request_with_records_field(java_oracle):
    records = java_oracle.records_encode([{"timestamp": 5, "key": b"k", "value": b"v"}], codec="snappy")
    request = {
        "acks": -1,
        "timeoutMs": 30000,
        "transactionalId": None,
        "topicData": [
            {
                "name": "t",
                "partitionData": [{"index": 0, "records": base64.b64encode(records).decode()}],
            }
        ],
    }
    for version in (3, 9):
        body = java_oracle.encode(PRODUCE, "request", version, request)
        assert records in body
        decoded = java_oracle.decode(PRODUCE, "request", version, body)
        part = decoded["json"]["topicData"][0]["partitionData"][0]
        assert base64.b64decode(part["records"]) == records
        assert decoded["reencoded"] == body


# ------------------------------------------------------------- robustness


def test_bad_input_gets_error_replies_and_oracle_keeps_answering(java_oracle):
    bad = {"op": "decode", "api_key": 18, "kind": "request", "version": 3}
    reply = java_oracle.request(dict(bad, hex="zz"), check=False)
    assert "hex" in reply["error"]
    reply = java_oracle.request(dict(bad, hex="123"), check=False)
    assert "odd" in reply["error"]
    # truncated body: Kafka's reader fails, the oracle reports it
    reply = java_oracle.request(
        {"op": "decode", "api_key": 18, "kind": "request", "version": 3, "hex": "1261"}, check=False
    )
    assert "error" in reply
    assert "error" in java_oracle.request({"op": "records_decode", "hex": "xyz"}, check=False)
    assert "error" in java_oracle.request({"op": "no_such_op"}, check=False)
    assert "error" in java_oracle.request({"op": "encode", "api_key": 18}, check=False)
    assert "error" in java_oracle.request_raw(b"this is not json")
    assert "error" in java_oracle.request_raw(b"[1, 2, 3]")
    assert "error" in java_oracle.request_raw(b"")
    assert "error" in java_oracle.request_raw(b'{"op": "ping"} trailing')
    assert java_oracle.request({"op": "ping", "id": 42}) == {
        "pong": True,
        "kafka_version": java_oracle.kafka_version,
        "kafka_commit": java_oracle.ping()["kafka_commit"],
        "java_version": java_oracle.ping()["java_version"],
        "id": 42,
    }
    software = {"clientSoftwareName": "apache-kafka-java", "clientSoftwareVersion": "3.9.1"}
    assert java_oracle.encode(API_VERSIONS, "request", 3, software) == h(APIVERSIONS_V3_HEX)


def test_batch_requests(java_oracle):
    replies = java_oracle.request_many(
        [
            {"op": "encode", "api_key": METADATA, "kind": "request", "version": 0,
             "json": {"topics": [{"name": f"t{i}"}]}}
            for i in range(50)
        ]
        + [{"op": "decode", "api_key": 18, "kind": "request", "version": 3, "hex": "zz"}]
    )
    assert len(replies) == 51
    assert replies[7]["hex"] == "00000001" + "0002" + b"t7".hex()
    assert "error" in replies[50]
