"""Apache Kafka 4.4 itself, driven by every client the suite has, through
``ProxyConnection(decode=True)``.

The session's ``kafka_conformance`` run (``tests/peers/kafka_scenarios.py``)
puts a decoding recording proxy in front of a broker (Kafka's authorizer,
client telemetry taken) and runs Kafka's Java admin client, producers
(idempotent, transactional) and consumers (classic, KIP-848, share),
confluent-kafka, kafka-python, aiokafka, kafkajs, and kafkaproto's own
requests for the APIs no client sends.  Then, for every frame in both
directions, in one pass each:

* the proxy forwarded every byte exactly as it came;
* it decoded, paired with its request, and re-encodes byte for byte;
* Kafka's 4.4 classes read its body to the same value in every field,
  leave the same bytes unread and write it back the same;
* the other engine (a child process with or without ``KAFKAPROTO_PURE``)
  reads every frame to the same value;
* every api key the broker advertises on its client listener went through
  at least once; ``docs/kafka-conformance.md`` lists them
  (``KAFKAPROTO_WRITE_DOCS=1`` writes it from the run).

The same checks hold for what went to the node's controller listener
(KIP-919: the cluster, the quorum, configs, ACLs as the controllers
describe them), through a decoding proxy of its own.

The run is shared by the session (one broker, one recording): the compiled
pass checks the twin in its child process and the other way round.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest

from kafkaproto.messages import api_name
from peers.kafka_scenarios import PROBES, client_family
from support.conformance import check_events, java_disagreements, other_engine_disagreements

pytestmark = [pytest.mark.peers, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "kafka-conformance.md"

#: advertised api keys that no scenario exchanges, with the reason (none today)
NOT_EXCHANGED: dict[int, str] = {}


@pytest.fixture(scope="module")
def checks(kafka_conformance):
    """Every frame on the client listener."""
    return [c for snap in kafka_conformance.connections for c in check_events(snap.index, snap.events)]


@pytest.fixture(scope="module")
def controller_checks(kafka_conformance):
    """Every frame on the controller listener."""
    return [c for snap in kafka_conformance.controller_connections for c in check_events(snap.index, snap.events)]


def _snapshots(run):
    return run.connections + run.controller_connections


def test_every_scenario_ran(kafka_conformance):
    steps = kafka_conformance.steps
    print(f"\n{len(steps)} steps in {kafka_conformance.seconds:.1f} s, "
          f"{len(kafka_conformance.connections)} connections; refused by the broker:")
    for s in steps:
        if not s.ok:
            print(f"  {s}")
    done = {(s.client, s.name) for s in steps if s.ok}
    for needed in [("Java", n) for n in ("createTopics", "idempotentProduce", "transactions", "classicConsumer",
                                         "consumer(java-consumer)", "shareConsumer", "abortTransaction",
                                         "createAcls", "describeAcls", "alterClientQuotas", "describeLogDirs",
                                         "describeMetadataQuorum")] + [
            ("kafkajs", "produce"), ("kafkajs", "consume"), ("confluent-kafka", "produce"),
            ("confluent-kafka", "consume"), ("kafka-python", "produce"), ("kafka-python", "consume"),
            ("aiokafka", "produce"), ("aiokafka", "consume(group)")]:
        assert needed in done, (needed, [str(s) for s in steps if s.client == needed[0]])
    assert {s.name for s in steps if s.client == "kafkaproto"} >= set(PROBES)
    controller = kafka_conformance.controller_steps
    print("on the controller listener: " + "; ".join(map(str, controller)))
    assert all(s.ok for s in controller if s.client == "Java (controller)"), controller
    assert {s.name for s in controller if s.ok} >= {"DescribeClusterRequest", "DescribeQuorumRequest"}


def test_the_proxy_forwards_every_byte_unchanged(kafka_conformance):
    for snap in _snapshots(kafka_conformance):
        assert snap.to_broker == snap.from_client, snap.index
        assert snap.to_client == snap.from_broker, snap.index
    assert sum(len(s.from_client) + len(s.from_broker) for s in kafka_conformance.connections) > 100_000


def test_every_frame_decodes_and_reencodes(checks, controller_checks):
    checks = checks + controller_checks
    bad = [f"{c.where}: {c.error}" for c in checks if not c.decoded]
    assert not bad, "\n".join(bad[:20])
    different = [c.where for c in checks if not c.reencoded]
    assert not different, "\n".join(different[:20])
    kinds = collections.Counter(c.kind for c in checks)
    trailing = collections.Counter((c.kind, api_name(c.api_key), c.client_id) for c in checks if c.trailing)
    print(f"\n{kinds['request']} requests, {kinds['response']} responses decoded and re-encoded; "
          f"bytes after a body: {dict(trailing) or 'none'}")
    assert kinds["request"] >= kinds["response"] > 300


def test_every_frame_agrees_with_kafkas_classes(checks, controller_checks, java_oracle):
    """Kafka 4.4's generated classes read every body (no byte left unread but
    those we also leave, the same value in every field) and, Kafka's writers
    being those classes, write it back the same; Kafka's MemoryRecords and
    kafkaproto.records read the same batches in every records field (Produce
    requests, Fetch and ShareFetch responses)."""
    checks = checks + controller_checks
    failures, rewritten, codecs = java_disagreements(checks, java_oracle)
    assert not failures, f"{len(failures)} of {len(checks)} frames:\n" + "\n".join(failures[:20])
    rewritten = {(kind, api_name(key), v, client_family(cid)): n for (kind, key, v, cid), n in rewritten.items()}
    print(f"\n{len(checks)} frames agree with kafka-clients {java_oracle.kafka_version}; "
          f"written back otherwise by Kafka's classes: {rewritten or 'none'}; record batches by codec {dict(codecs)}")
    assert not [k for k in rewritten if k[0] == "response"], rewritten  # the broker writes with those classes
    assert sum(codecs.values()) > 10 and {"none", "gzip", "snappy", "lz4", "zstd"} <= set(codecs)


def test_the_other_engine_reads_every_frame_the_same(kafka_conformance, checks, controller_checks, tmp_path):
    """The recorded byte streams through a ProxyConnection of the other engine,
    in a child process: the same frames, decoded to the same values."""
    streams = [(s.from_client, s.from_broker) for s in _snapshots(kafka_conformance)]
    differ = other_engine_disagreements(streams, checks + controller_checks, tmp_path)
    assert not differ, differ[:10]


def coverage(kafka_conformance, checks) -> list[dict]:
    """One row per api key the broker advertises: versions, what exchanged it."""
    advertised = kafka_conformance.advertised()
    exchanged = collections.defaultdict(lambda: {"versions": set(), "clients": set()})
    answered = {(c.conn, c.correlation_id) for c in checks if c.kind == "response" and c.decoded}
    for c in checks:
        if c.kind == "request" and c.decoded and (c.conn, c.correlation_id) in answered:
            exchanged[c.api_key]["versions"].add(c.version)
            exchanged[c.api_key]["clients"].add(client_family(c.client_id))
    rows = []
    for key, (lo, hi) in sorted(advertised.items()):
        got = exchanged.get(key)
        rows.append({"key": key, "name": api_name(key), "advertised": f"{lo}-{hi}" if lo != hi else str(lo),
                     "versions": ",".join(map(str, sorted(got["versions"]))) if got else "",
                     "clients": ", ".join(sorted(got["clients"])) if got else "",
                     "exchanged": got is not None})
    return rows


def controller_rows(controller_checks) -> list[tuple]:
    """(key, api, versions seen, by) of what went through the controller listener's proxy."""
    seen: dict = {}
    for c in controller_checks:
        if c.kind == "request" and c.decoded:
            versions, who = seen.setdefault(c.api_key, (set(), set()))
            versions.add(c.version)
            who.add("Java" if (c.client_id or "").startswith("java") else "kafkaproto")
    return [(k, api_name(k), ",".join(map(str, sorted(v))), ", ".join(sorted(w)))
            for k, (v, w) in sorted(seen.items())]


def render(rows: list[dict], kafka_conformance, controller: list[tuple] = ()) -> str:
    n = sum(r["exchanged"] for r in rows)
    lines = [
        "# Apache Kafka 4.4 against kafkaproto: api keys exchanged",
        "",
        "Written by `tests/test_kafka_conformance.py` (`KAFKAPROTO_WRITE_DOCS=1` rewrites it; the",
        "test fails when the api keys the broker advertises, or the set exchanged, no longer match",
        "this page).  A single-node Apache Kafka 4.4.0 broker (KRaft, `StandardAuthorizer`,",
        "a client-telemetry reporter) behind a `ProxyConnection(decode=True)`; the clients of",
        "`tests/peers/kafka_scenarios.py` talk to it through the proxy.  Every frame of both",
        "directions decoded in both engines, agreed field by field with kafka-clients 4.4.0's",
        "classes and re-encoded byte for byte; the proxy forwarded every byte unchanged.",
        "",
        f"**{n} of {len(rows)} api keys advertised on the client listener exchanged.**"
        + (" Not exchanged: " + "; ".join(f"{k} ({why})" for k, why in NOT_EXCHANGED.items()) if NOT_EXCHANGED
           else ""),
        "",
        "Versions and clients are those of one run (a client may pick another version",
        "or skip a call that depends on timing, such as a heartbeat, in another).",
        "`kafkaproto` is the library's own client (`PROBES`): the APIs no client sends to a",
        "broker (SASL on a plaintext listener, AlterConfigs, transactions' broker-side calls,",
        "the share coordinator's state APIs, the streams-group APIs); an error answer counts",
        "as an exchange.",
        "",
        "| key | api | advertised | exchanged | versions seen | by |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['key']} | {r['name']} | {r['advertised']} | {'yes' if r['exchanged'] else '**no**'} "
                     f"| {r['versions']} | {r['clients']} |")
    lines += [
        "",
        "## The controller listener",
        "",
        "The quorum and the cluster as the controllers describe them (KIP-919), through a",
        "decoding proxy of their own in front of the node's controller listener: Kafka's Java",
        "admin client with `bootstrap.controllers` (its bootstrap connection: it then dials the",
        "voters' own addresses) and kafkaproto.  The other keys the controller listener offers",
        "are the nodes' own (Vote, Fetch of the metadata log, BrokerHeartbeat...) or the admin",
        "calls made above through a broker.  4.4.0's controller lists DescribeUserScramCredentials",
        "but does not handle it: it answers UNKNOWN_SERVER_ERROR for named users, and asked for",
        "every user (users null, as the admin client asks) it answers nothing (building the error",
        "answer fails in `DescribeUserScramCredentialsRequest.getErrorResponse`).",
        "",
        "| key | api | versions seen | by |",
        "| ---: | --- | --- | --- |",
    ]
    lines += [f"| {k} | {n} | {v} | {w} |" for k, n, v, w in controller]
    return "\n".join(lines) + "\n"


def _table_keys(text: str) -> list[tuple[str, str, str]]:
    """(key, advertised, exchanged) of each row of a rendered table."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].isdigit():
            out.append((cells[0], cells[2], cells[3]))
    return out


def test_every_advertised_api_key_is_exchanged(kafka_conformance, checks, controller_checks):
    rows = coverage(kafka_conformance, checks)
    controller = controller_rows(controller_checks)
    text = render(rows, kafka_conformance, controller)
    if os.environ.get("KAFKAPROTO_WRITE_DOCS") == "1":
        DOC.write_text(text)
    missing = {r["key"]: r["name"] for r in rows if not r["exchanged"]}
    print(f"\n{len(rows) - len(missing)} of {len(rows)} advertised api keys exchanged")
    assert len(rows) > 70
    assert set(missing) == set(NOT_EXCHANGED), missing
    assert _table_keys(DOC.read_text()) == _table_keys(text), (
        f"{DOC.name} is out of date: run with KAFKAPROTO_WRITE_DOCS=1")
    assert {55, 60} <= {k for k, *_ in controller}  # DescribeQuorum, DescribeCluster on the controller listener
