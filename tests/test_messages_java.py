"""Kafka's own Java classes (kafka-clients 3.9.1) read kafkaproto's bytes and
write them back byte for byte, for every API and version both know."""

import random

import pytest

from kafkaproto import request_header_version, response_header_version
from kafkaproto.messages import APIS, request_class, response_class
from support.message_values import random_message, to_kafka_json

pytestmark = pytest.mark.peers

# Fields Kafka renamed after 3.9.1 without changing the bytes: (class, Java 3.9.1's name) -> ours.
RENAMED = {
    ("VoteRequest", "candidateEpoch"): "replicaEpoch", ("VoteRequest", "candidateId"): "replicaId",
    ("VoteRequest", "candidateDirectoryId"): "replicaDirectoryId",
    ("ListConfigResourcesResponse", "clientMetricsResources"): "configResources",
    ("ListConfigResourcesResponse", "name"): "resourceName",
    ("TxnOffsetCommitRequest", "generationId"): "generationIdOrMemberEpoch",
}
SEEDS = 4


@pytest.fixture(scope="module")
def java_versions(java_oracle):
    out = []
    for api in java_oracle.versions():
        for ver in api["versions"]:
            v = ver["version"]
            if api["latest_version_is_unstable"] and v == api["latest_version"]:
                continue  # pre-release layouts that Kafka redefined later
            out.append((api["api_key"], v, ver))
    return out


def _compare(ours, java, path, name, problems):
    if isinstance(java, dict):
        for k, jv in java.items():
            mine = k if k in ours else RENAMED.get((name, k))
            if mine not in ours:
                problems.append(f"{path}.{k} missing")
                continue
            _compare(ours[mine], jv, f"{path}.{k}", name, problems)
    elif isinstance(java, list):
        if not isinstance(ours, list) or len(ours) != len(java):
            problems.append(f"{path}: {ours!r} != {java!r}")
            return
        for i, (a, b) in enumerate(zip(ours, java)):
            _compare(a, b, f"{path}[{i}]", name, problems)
    elif isinstance(java, float) or isinstance(ours, float):
        if float(ours) != float(java):
            problems.append(f"{path}: {ours!r} != {java!r}")
    elif ours != java:
        problems.append(f"{path}: {ours!r} != {java!r}")


def test_every_java_api_has_a_schema_here(java_versions):
    for key, v, _ in java_versions:
        assert key in APIS
        assert request_class(key).supports(v) and response_class(key).supports(v), (key, v)


def test_header_versions_agree(java_oracle, java_versions):
    replies = java_oracle.request_many({"op": "header_versions", "api_key": k, "version": v}
                                       for k, v, _ in java_versions)
    for (key, v, _), rep in zip(java_versions, replies):
        assert rep["request"] == request_header_version(key, v), (key, v)
        assert rep["response"] == response_header_version(key, v), (key, v)


@pytest.mark.parametrize("kind", ["request", "response"])
def test_java_reads_and_rewrites_our_bytes(java_oracle, java_versions, kind):
    cases, reqs = [], []
    for key, v, _ in java_versions:
        cls = request_class(key) if kind == "request" else response_class(key)
        for seed in range(SEEDS):
            obj = random_message(cls, v, random.Random(seed * 7919 + key * 131 + v))
            data = obj.encode(v)
            cases.append((cls, v, obj, data))
            reqs.append({"op": "decode", "api_key": key, "kind": kind, "version": v, "hex": data.hex()})
    failures = []
    for (cls, v, obj, data), rep in zip(cases, java_oracle.request_many(reqs)):
        where = f"{cls.NAME} v{v}"
        if "error" in rep:
            failures.append(f"{where}: Java could not read our bytes: {rep['error'][:200]}")
            continue
        if rep["trailing"]:
            failures.append(f"{where}: Java left {rep['trailing']} bytes unread")
        java_bytes = bytes.fromhex(rep["hex"])
        if java_bytes != data:
            failures.append(f"{where}: Java re-encoded different bytes\n ours {data.hex()}\n java {java_bytes.hex()}")
            continue
        if cls.decode(java_bytes, v) != obj:
            failures.append(f"{where}: decoding Java's bytes gave another value")
        problems = []
        _compare(to_kafka_json(obj, v), rep["json"], "", cls.NAME, problems)
        if problems:
            failures.append(f"{where}: values differ from Java's reading: {problems[:3]}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:20])
    assert len(cases) > 800


def test_java_encodes_what_we_decode(java_oracle):
    # Java writes from its own JSON; we read it to the same values.
    from kafkaproto.messages import MetadataResponse

    cls = MetadataResponse
    for v in range(0, 13):
        obj = random_message(cls, v, random.Random(v), unknown_tags=False)  # JSON has no unknown tags
        js = java_oracle.decode(3, "response", v, obj.encode(v))["json"]
        java_bytes = java_oracle.encode(3, "response", v, js)
        assert cls.decode(java_bytes, v) == obj


def test_worked_example_matches_kafkas_bytes(java_oracle):
    # DESIGN.md's ApiVersions v3 request: header v2 (int16 client id) + body, from Java's classes
    from kafkaproto import encode_request
    from kafkaproto.messages import ApiVersionsRequest

    header = java_oracle.encode_header("request", 2, {"requestApiKey": 18, "requestApiVersion": 3,
                                                      "correlationId": 7, "clientId": "c1"})
    body = java_oracle.encode(18, "request", 3, {"clientSoftwareName": "apache-kafka-java",
                                                 "clientSoftwareVersion": "3.9.1"})
    ours = encode_request(ApiVersionsRequest(client_software_name="apache-kafka-java",
                                             client_software_version="3.9.1"), 3, 7, "c1")
    assert ours == (len(header) + len(body)).to_bytes(4, "big") + header + body
    assert ours[:4] == b"\x00\x00\x00\x26"
