"""examples/mini_broker.py measured against Apache Kafka 4.4.

The same client scenarios (``tests/peers/kafka_scenarios.py``: Kafka's Java
clients, confluent-kafka, kafka-python, aiokafka, kafkajs, kafkaproto's own
requests) run against the example broker as they ran against Kafka in the
session's ``kafka_conformance`` run, and one fixed sequence of requests
(:func:`run_probes`: topics, produce, fetch, offsets, producer ids, a
consumer group's life, admin calls) goes to both at the same versions.
What differs is computed here and listed in ``docs/mini-broker-vs-kafka.md``
(``KAFKAPROTO_WRITE_DOCS=1`` writes it):

* the versions each advertises (ApiVersions);
* the answers to the probes, field by field, leaving out what differs between
  any two brokers (ids, addresses, times; :data:`VOLATILE`);
* the client steps one broker carried out and the other refused.

The test fails when the versions or the probes' differences no longer match
the page (the client steps there are from one run: information).
"""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkaproto import ErrorCode, KafkaProtocolError
from kafkaproto import messages as M
from kafkaproto import records as R
from kafkaproto.messages import api_name
from kafkaproto.protocol import api_versions_handshake, supported_versions
from peers.kafka_scenarios import build, exchange, run_all

# Measured against the session's conformance run, which the compiled pass makes: once.
pytestmark = [pytest.mark.peers, pytest.mark.engine_independent,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mini_broker.py"
DOC = ROOT / "docs" / "mini-broker-vs-kafka.md"
TOPIC, GROUP = "vs-probe", "vs-probe-group"
T0 = 1_700_000_000_000

#: fields whose values differ between any two brokers (or runs): compared as
#: "set or not" only
VOLATILE = {"throttle_time_ms", "cluster_id", "node_id", "host", "port", "leader_id", "controller_id", "topic_id",
            "member_id", "leader", "producer_id", "log_append_time_ms", "session_id", "rack", "replica_nodes",
            "isr_nodes", "offline_replicas", "error_message", "finalized_features_epoch", "coordinator_key",
            "group_instance_id", "client_host", "client_id", "endpoints", "node_endpoints"}


@pytest.fixture(scope="module")
def mini():
    """examples/mini_broker.py on a free port: (host, port)."""
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        host, _, port = line.split()[-1].rpartition(":")
        yield host, int(port)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        proc.stdout.close()


@pytest.fixture(scope="module")
def mini_steps(mini):
    t0 = time.monotonic()
    steps = run_all(f"{mini[0]}:{mini[1]}", "kp")  # the names of the Kafka run's topics and groups
    print(f"\nthe client scenarios against the example broker: {time.monotonic() - t0:.1f} s")
    return steps


def advertised(host, port) -> dict[int, tuple[int, int]]:
    _, resp = api_versions_handshake(host, port, timeout=10)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


@dataclass
class Answer:
    label: str
    api_key: int
    version: int | None
    response: dict | None
    note: str = ""


def _batch(n: int = 3) -> bytes:
    return R.encode([R.Record(key=b"k%d" % i, value=b"value %d" % i, headers=[("h", b"x")], timestamp=T0 + i)
                     for i in range(n)])


def _subscription(topic: str) -> bytes:
    """A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0): one topic, no user data."""
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", -1)


def _assignment(topic: str) -> bytes:
    """ConsumerProtocolAssignment v0: partition 0 of the topic, no user data."""
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">iii", 1, 0, -1)


def run_probes(host: str, port: int, versions: dict[int, int]) -> list[Answer]:
    """The fixed sequence, each request on a connection of its own (a broker
    may hang up on a request it does not take), at ``versions``; an answer
    can name what the next request needs (the member id a JoinGroup gave)."""
    out: list[Answer] = []

    def ask(label, cls, fields):
        key = cls.API_KEY
        if key not in versions:
            out.append(Answer(label, key, None, None, "not offered"))
            return None
        try:
            got = exchange(host, port, build(cls, fields), versions[key], client_id="kafkaproto-probe")
        except (OSError, KafkaProtocolError) as exc:
            out.append(Answer(label, key, versions[key], None, f"no answer ({type(exc).__name__})"))
            return None
        out.append(Answer(label, key, versions[key], got.to_dict()))
        return got

    def topic(name, n=1):
        return {"name": name, "num_partitions": n, "replication_factor": 1}

    def produce(name, part, records):
        return {"acks": -1, "timeout_ms": 10000, "topic_data": [
            {"name": name, "partition_data": [{"index": part, "records": records}]}]}

    def fetch(offset):
        return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
            {"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}

    bad = bytearray(_batch())
    bad[-1] ^= 0xFF  # the CRC no longer matches
    ask("ApiVersions", M.ApiVersionsRequest, {"client_software_name": "kafkaproto", "client_software_version": "0"})
    ask("Metadata, no topics", M.MetadataRequest, {"topics": []})
    ask("CreateTopics", M.CreateTopicsRequest, {"topics": [topic(TOPIC)], "timeout_ms": 10000})
    ask("CreateTopics, again", M.CreateTopicsRequest, {"topics": [topic(TOPIC)], "timeout_ms": 10000})
    ask("CreateTopics, 0 partitions", M.CreateTopicsRequest, {"topics": [topic("vs-zero", 0)], "timeout_ms": 10000})
    ask("CreateTopics, validate only", M.CreateTopicsRequest, {"topics": [topic("vs-check")], "timeout_ms": 10000,
                                                               "validate_only": True})
    ask("Metadata, a topic and a missing one", M.MetadataRequest, {"topics": [{"name": TOPIC}, {"name": "vs-missing"}],
                                                                   "allow_auto_topic_creation": False})
    ask("Produce", M.ProduceRequest, produce(TOPIC, 0, _batch()))
    ask("Produce, no such partition", M.ProduceRequest, produce(TOPIC, 7, _batch()))
    ask("Produce, no such topic", M.ProduceRequest, produce("vs-missing", 0, _batch()))
    ask("Produce, bad CRC", M.ProduceRequest, produce(TOPIC, 0, bytes(bad)))
    ask("Fetch from 0", M.FetchRequest, fetch(0))
    ask("Fetch past the end", M.FetchRequest, fetch(10))
    for label, ts in (("earliest", -2), ("latest", -1), ("by time", T0 + 1)):
        ask(f"ListOffsets, {label}", M.ListOffsetsRequest, {"replica_id": -1, "topics": [
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": ts}]}]})
    ask("InitProducerId, idempotent", M.InitProducerIdRequest, {"transactional_id": None,
                                                                "transaction_timeout_ms": -1})
    ask("InitProducerId, transactional", M.InitProducerIdRequest, {"transactional_id": "vs-probe-txn",
                                                                   "transaction_timeout_ms": 60000})
    ask("FindCoordinator", M.FindCoordinatorRequest, {"key": GROUP, "key_type": 0, "coordinator_keys": [GROUP]})
    join = {"group_id": GROUP, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": _subscription(TOPIC)}]}
    first = ask("JoinGroup, no member id", M.JoinGroupRequest, join)
    member = first.member_id if first is not None else ""
    joined = ask("JoinGroup, with it", M.JoinGroupRequest, dict(join, member_id=member)) if member else first
    generation = joined.generation_id if joined is not None else -1
    ask("SyncGroup", M.SyncGroupRequest, {"group_id": GROUP, "generation_id": generation, "member_id": member,
                                          "protocol_type": "consumer", "protocol_name": "range",
                                          "assignments": [{"member_id": member, "assignment": _assignment(TOPIC)}]})
    ask("Heartbeat", M.HeartbeatRequest, {"group_id": GROUP, "generation_id": generation, "member_id": member})
    ask("OffsetCommit", M.OffsetCommitRequest, {"group_id": GROUP, "generation_id_or_member_epoch": generation,
                                                "member_id": member, "topics": [{"name": TOPIC, "partitions": [
                                                    {"partition_index": 0, "committed_offset": 2}]}]})
    ask("OffsetFetch", M.OffsetFetchRequest, {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                                              "groups": [{"group_id": GROUP, "topics": [
                                                  {"name": TOPIC, "partition_indexes": [0]}]}]})
    ask("Heartbeat, unknown member", M.HeartbeatRequest, {"group_id": GROUP, "generation_id": generation,
                                                          "member_id": "nobody"})
    ask("LeaveGroup", M.LeaveGroupRequest, {"group_id": GROUP, "member_id": member, "members": [
        {"member_id": member}]})
    if ask("ListGroups", M.ListGroupsRequest, {}) is not None:  # this sequence's group (the others are the clients')
        out[-1].response["groups"] = [g for g in out[-1].response["groups"] if g["group_id"] == GROUP]
    ask("DescribeGroups", M.DescribeGroupsRequest, {"groups": [GROUP]})
    ask("DescribeConfigs", M.DescribeConfigsRequest, {"resources": [
        {"resource_type": 2, "resource_name": TOPIC, "configuration_keys": ["cleanup.policy"]}]})
    ask("DeleteTopics", M.DeleteTopicsRequest, {"topic_names": [TOPIC], "topics": [{"name": TOPIC}],
                                                "timeout_ms": 10000})
    return out


def normalized(value, name=""):
    """An answer with what differs between any two brokers reduced to "set or
    not", records to what they hold, error codes by name."""
    if isinstance(value, dict):
        return {k: normalized(v, k) for k, v in value.items() if k != "api_keys"}
    if isinstance(value, list):
        if name in VOLATILE:
            return f"<{len(value)} items>"
        return [normalized(v, name) for v in value]
    if name in VOLATILE:
        return "<set>" if value not in (None, "", -1, b"") else value
    if name == "records":
        return [(r.offset, bytes(r.key or b""), bytes(r.value or b"")) for b in R.decode(value or b"")
                if not b.truncated for r in b.records]
    if name.endswith("error_code") and isinstance(value, int):
        return ErrorCode(value).name if value in ErrorCode._value2member_map_ else value
    return value


def differences(a, b, path=""):
    """(path, Kafka's value, the example's) for each field that differs."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            out += differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def compare_answers(kafka: list[Answer], example: list[Answer]) -> list[tuple]:
    rows = []
    for k, m in zip(kafka, example):
        assert k.label == m.label
        version = k.version if k.version == m.version else f"{k.version}/{m.version}"
        if m.response is None or k.response is None:
            if (k.note, m.note) != ("", ""):
                rows.append((k.label, api_name(k.api_key), version, "(the request)", k.note or "answered",
                             m.note or "answered"))
            continue
        for path, a, b in differences(normalized(k.response), normalized(m.response)):
            rows.append((k.label, api_name(k.api_key), version, path, a, b))
    return rows


def _cell(v) -> str:
    text = repr(v) if not isinstance(v, str) else v
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 90 else text[:87] + "..."


def render(versions_rows, answer_rows, step_rows) -> str:
    lines = [
        "# examples/mini_broker.py measured against Apache Kafka 4.4",
        "",
        "Written by `tests/test_kafka_vs_mini.py` (`KAFKAPROTO_WRITE_DOCS=1` rewrites it; the test",
        "fails when the versions or the answers below no longer match).  The example broker is a",
        "single node in memory built on kafkaproto's server API; the reference is Apache Kafka",
        "4.4.0 (one KRaft node, the broker of `docs/kafka-conformance.md`).",
        "",
        "## Versions advertised (ApiVersions)",
        "",
        f"The example answers {sum(1 for r in versions_rows if r[3] != '-')} api keys; Kafka "
        f"{sum(1 for r in versions_rows if r[2] != '-')}.  Where both answer a key their ranges:",
        "",
        "| key | api | Kafka | example |",
        "| ---: | --- | --- | --- |",
    ]
    lines += [f"| {k} | {n} | {a} | {b} |" for k, n, a, b in versions_rows if a != "-" and b != "-"]
    only = [f"{n} ({k})" for k, n, a, b in versions_rows if b == "-"]
    lines += ["", f"Kafka only: {', '.join(only)}.", ""]
    lines += [
        "## Answers to the same requests",
        "",
        "kafkaproto sends one fixed sequence to each broker (`run_probes`: a topic made, written,",
        "read and listed; producer ids; one member's consumer group from JoinGroup to LeaveGroup;",
        "admin calls), each request at the highest version both brokers and kafkaproto have (a",
        "key only Kafka answers: Kafka's).  Fields that differ between any two brokers (ids,",
        "addresses, times, error messages: `VOLATILE`) are compared as set or not; records as",
        "their offsets, keys and values; error codes by name.",
        "",
        f"{len(answer_rows)} differences:",
        "",
        "| request | api | version | field | Kafka | example |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in answer_rows]
    lines += [
        "",
        "## Client scenarios",
        "",
        "The steps of `tests/peers/kafka_scenarios.py` that one broker carried out and the other",
        "refused (one run each; timing can move a step).  Every client produces and consumes",
        "against both.",
        "",
        "| client | step | Kafka | example |",
        "| --- | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in step_rows]
    return "\n".join(lines) + "\n"


def _doc_section(text: str, title: str) -> list[str]:
    """The table rows of one section of the page."""
    part = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [line for line in part.splitlines() if line.startswith("| ") and not line.startswith("| ---")]


@pytest.fixture(scope="module")
def measured(kafka_conformance, mini, mini_steps):
    kafka = kafka_conformance.cluster
    theirs = advertised(kafka.host, kafka.port)
    ours = advertised(*mini)
    library = supported_versions()
    common = {}
    for key in theirs.keys() & ours.keys() & library.keys():
        lo = max(theirs[key][0], ours[key][0], library[key][0])
        hi = min(theirs[key][1], ours[key][1], library[key][1])
        if lo <= hi:
            common[key] = hi
    kafka_versions = {k: common.get(k, min(hi, library[k][1])) for k, (_, hi) in theirs.items() if k in library}
    answers_kafka = run_probes(kafka.host, kafka.port, kafka_versions)
    answers_mini = run_probes(*mini, {k: v for k, v in common.items()})
    versions_rows = []
    for key in sorted(theirs.keys() | ours.keys()):
        def rng(d):
            return "-" if key not in d else f"{d[key][0]}-{d[key][1]}"
        versions_rows.append((key, api_name(key), rng(theirs), rng(ours)))
    answer_rows = compare_answers(answers_kafka, answers_mini)
    kafka_steps = {(s.client, s.name): s for s in kafka_conformance.steps}
    step_rows = []
    for s in mini_steps:
        k = kafka_steps.get((s.client, s.name))
        if k is not None and k.ok != s.ok:
            step_rows.append((s.client, s.name, "ok" if k.ok else f"refused: {k.detail}",
                              "ok" if s.ok else f"refused: {s.detail}"))
    return versions_rows, answer_rows, step_rows, mini_steps


def test_clients_produce_and_consume_against_both(measured, kafka_conformance):
    *_, mini_steps = measured
    for steps in (kafka_conformance.steps, mini_steps):
        done = {(s.client, s.name) for s in steps if s.ok}
        for needed in [("confluent-kafka", "produce"), ("confluent-kafka", "consume"), ("kafka-python", "produce"),
                       ("kafka-python", "consume"), ("aiokafka", "produce"), ("aiokafka", "consume(group)"),
                       ("kafkajs", "produce"), ("kafkajs", "consume"), ("Java", "idempotentProduce"),
                       ("Java", "classicConsumer")]:
            assert needed in done, (needed, [str(s) for s in steps if s.client == needed[0]])


def test_differences_from_kafka_are_the_documented_ones(measured):
    versions_rows, answer_rows, step_rows, _ = measured
    text = render(versions_rows, answer_rows, step_rows)
    if os.environ.get("KAFKAPROTO_WRITE_DOCS") == "1":
        DOC.write_text(text)
    print(f"\n{len(answer_rows)} differences in the answers, {len(step_rows)} client steps that differ")
    assert answer_rows, "the example answers exactly as Kafka: drop this page"
    committed = DOC.read_text()
    for title in ("Versions advertised", "Answers to the same requests"):
        assert _doc_section(committed, title) == _doc_section(text, title), (
            f"{DOC.name}: '{title}' is out of date: run with KAFKAPROTO_WRITE_DOCS=1")
