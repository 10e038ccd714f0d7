"""Kafka's own Java classes against kafkaproto, both ways, for every (message,
version) the schemas have: Kafka 4.4's against kafka-clients 4.4.0, and the
versions Kafka 4.0 removed (``SNAPSHOT_ONLY_VERSIONS``, flagged
``removed_in_kafka4``) against kafka-clients 3.9.1.

* ours -> Java: Kafka reads the bytes kafkaproto writes, leaves none, writes
  them back byte for byte, and holds the same value in every field;
* Java -> ours: Kafka writes a message from the JSON of the same value (its
  strict converter: every field of the version must be there, and none
  else), kafkaproto reads Kafka's bytes to an equal message, field by field,
  and writes them back byte for byte.

Messages are requests, responses, the two headers and the data schemas
(consumer protocol, control records, KRaft records...).  The hand-written
vectors of tests/test_messages_newer.py are a second check of the newest
versions.
"""

import random
import zlib

import pytest

from kafkaproto import request_header_version, response_header_version
from kafkaproto.messages import CLASSES, get
from kafkaproto.messages._runtime import versions_mask
from oracle.conftest_oracle import get_oracle
from oracle.java_oracle import KAFKA, LEGACY_KAFKA, JavaOracle
from support.message_values import RENAMED, compare_with_java, random_message, tagged_paths, to_kafka_json

pytestmark = pytest.mark.peers

SEEDS = 4
# which of our classes' version sets each oracle checks
LAYERS = {KAFKA: "NEWEST_VERSIONS", LEGACY_KAFKA: "SNAPSHOT_ONLY_VERSIONS"}


def _versions(spec: str) -> list[int]:
    mask = versions_mask(spec)
    return [v for v in range(64) if mask >> v & 1]


def pairs(kafka_version: str) -> list[tuple[type, int]]:
    """Every (message class, version) the given oracle checks."""
    out = []
    for cls in sorted({get(name) for name in CLASSES}, key=lambda c: c.NAME):  # old names alias new classes
        out += [(cls, v) for v in _versions(getattr(cls, LAYERS[kafka_version]))]
    return out


@pytest.fixture(scope="module", params=[KAFKA, LEGACY_KAFKA])
def oracle(request) -> JavaOracle:
    return get_oracle(request.param)


def _renamed_json(json, name):
    """Our JSON with 3.9.1's field names, for its strict converter."""
    back = {(n, ours): theirs for (n, theirs), ours in RENAMED.items()}
    if isinstance(json, dict):
        return {back.get((name, k), k): _renamed_json(v, name) for k, v in json.items()}
    if isinstance(json, list):
        return [_renamed_json(v, name) for v in json]
    return json


def _diff(ours, theirs, path=""):
    """The first fields where two decoded messages differ (a readable failure)."""
    a = ours.to_dict() if hasattr(ours, "to_dict") else ours
    b = theirs.to_dict() if hasattr(theirs, "to_dict") else theirs
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            if a.get(k) != b.get(k):
                out += _diff(a.get(k), b.get(k), f"{path}.{k}") or [f"{path}.{k}"]
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out += _diff(x, y, f"{path}[{i}]")
    elif a != b:
        out.append(f"{path}: {a!r} != {b!r}")
    return out[:5]


def test_the_oracles_know_exactly_our_versions(oracle):
    """kafka-clients 4.4.0 has exactly the versions of our newest schemas for
    every message; 3.9.1 has every version 4.0 removed."""
    checked = pairs(oracle.kafka_version)
    classes = {cls: [v for c, v in checked if c is cls] for cls, _ in checked}
    java = oracle.message_versions(JavaOracle.java_class(cls) for cls in classes)
    for cls, versions in classes.items():
        got = java[JavaOracle.java_class(cls)]
        assert got is not None, f"kafka-clients {oracle.kafka_version} has no {JavaOracle.java_class(cls)}"
        lo, hi = got
        if oracle.kafka_version == KAFKA:
            assert versions == list(range(lo, hi + 1)), (cls.NAME, versions, got)
        else:
            assert set(versions) <= set(range(lo, hi + 1)), (cls.NAME, versions, got)
    if oracle.kafka_version == KAFKA:  # and no api of 4.4 is missing here
        assert {a["api_key"] for a in oracle.versions() if a["versions"]} == {
            c.API_KEY for c in classes if c.API_KEY is not None}


def test_header_versions_agree(oracle):
    api = sorted({(cls.API_KEY, v) for cls, v in pairs(oracle.kafka_version) if cls.KIND == "request"})
    replies = oracle.request_many({"op": "header_versions", "api_key": k, "version": v} for k, v in api)
    for (key, v), rep in zip(api, replies):
        assert "error" not in rep, (key, v, rep)
        assert rep["request"] == request_header_version(key, v), (key, v)
        assert rep["response"] == response_header_version(key, v), (key, v)


def test_java_reads_and_rewrites_our_bytes(oracle):
    cases, reqs = [], []
    for cls, v in pairs(oracle.kafka_version):
        for seed in range(SEEDS):
            obj = random_message(cls, v, random.Random(seed * 7919 + zlib.crc32(cls.NAME.encode()) * 131 + v))
            data = obj.encode(v)
            cases.append((cls, v, obj, data))
            reqs.append({"op": "decode", "class": JavaOracle.java_class(cls), "version": v, "hex": data.hex()})
    failures = []
    for (cls, v, obj, data), rep in zip(cases, oracle.request_many(reqs)):
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
        compare_with_java(to_kafka_json(obj, v), rep["json"], "", cls.NAME, problems, tagged_paths(obj, v))
        if problems:
            failures.append(f"{where}: values differ from Java's reading: {problems[:3]}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:20])
    assert len({(c, v) for c, v, _, _ in cases}) == len(pairs(oracle.kafka_version))


def test_we_read_and_rewrite_javas_bytes(oracle):
    cases, reqs = [], []
    for cls, v in pairs(oracle.kafka_version):
        for seed in range(SEEDS):
            # JSON has no way to carry unknown tagged fields
            obj = random_message(cls, v, random.Random(seed * 104729 + zlib.crc32(cls.NAME.encode()) * 17 + v),
                                 unknown_tags=False)
            json = to_kafka_json(obj, v)
            if oracle.kafka_version != KAFKA:
                json = _renamed_json(json, cls.NAME)
            cases.append((cls, v, obj))
            reqs.append({"op": "encode", "class": JavaOracle.java_class(cls), "version": v, "json": json,
                         "fill_defaults": False})
    failures = []
    for (cls, v, obj), rep in zip(cases, oracle.request_many(reqs)):
        where = f"{cls.NAME} v{v}"
        if "error" in rep:
            failures.append(f"{where}: Java refused our fields: {rep['error'][:200]}")
            continue
        if rep["unknown_keys"]:
            failures.append(f"{where}: fields Java does not have in this version: {rep['unknown_keys'][:5]}")
        java_bytes = bytes.fromhex(rep["hex"])
        try:
            got = cls.decode(java_bytes, v)
        except Exception as exc:  # noqa: BLE001 - reported with the pair it failed on
            failures.append(f"{where}: we could not read Java's bytes {java_bytes.hex()}: {exc}")
            continue
        if got != obj:
            failures.append(f"{where}: Java's bytes read to another value: {_diff(got, obj)}")
        elif got.encode(v) != java_bytes:
            failures.append(f"{where}: we re-encoded different bytes\n java {java_bytes.hex()}\n ours "
                            f"{got.encode(v).hex()}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:20])


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
