"""The scenario suite: every client through every scenario against Apache
Kafka 4.4 and against kafkaproto's mock cluster, with the same outcomes.

The scenarios and the drivers of the clients are :mod:`peers.scenarios`
(codecs, a group through a rebalance, commit and resume, transactions,
admin calls, a leader move; confluent-kafka, kafka-python, aiokafka,
kafkajs, kcat, Kafka's Java clients 4.4).  Each run is reduced to the
outcome the client saw; on Kafka that outcome must be the one the scenario
expects (:func:`peers.scenarios.expected`), on the mock it must be Kafka's.

The targets: the session's one-node Kafka (``kafka_broker``; its leader
move is played by a proxy that answers NOT_LEADER_OR_FOLLOWER, see
:class:`peers.scenarios.NotLeaderProxy`) and one ``MockCluster`` of three
brokers for the module (its leader move is ``move_leader``).

``docs/mock-scenarios.md`` holds the table of what each client saw on both
(``KAFKAPROTO_WRITE_DOCS=1`` writes it; the last test fails when it is out
of date).  A scenario the mock gets wrong is listed in :data:`MOCK_DEFECTS`
(an ``xfail(strict=True)``) until the mock is fixed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from pathlib import Path

import pytest

from peers import scenarios as S

pytestmark = [pytest.mark.peers, pytest.mark.engine_independent,
              pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

DOC = Path(__file__).resolve().parent.parent / "docs" / "mock-scenarios.md"
TARGETS = ("kafka", "mock")
CASES = [(c, s) for s in S.SCENARIOS for c in S.CLIENTS if S.unsupported(c, s) is None]

#: (client, scenario) whose outcome on the mock is not Kafka's: the mock's
#: defect, until it is fixed (see the defects list of docs/mock-scenarios.md)
MOCK_DEFECTS: dict[tuple[str, str], str] = {}

#: outcomes of the module's runs: (client, scenario, target) -> outcome, or the error text
OUTCOMES: dict[tuple[str, str, str], object] = {}
SECONDS: dict[tuple[str, str, str], float] = {}


@contextlib.contextmanager
def mock_mover(cluster, topic: str, partition: int):
    """:class:`peers.scenarios.Target`'s mover for the mock: ``move_leader``
    to the next broker; the clients followed it if a Produce of theirs for
    the partition reached the new leader after the move."""
    moved: list = []

    def move() -> None:
        nodes = sorted(cluster.brokers)
        leader = cluster.leader(topic, partition)
        moved[:] = [nodes[(nodes.index(leader) + 1) % len(nodes)], len(cluster.requests())]
        cluster.move_leader(topic, partition, moved[0])

    def followed() -> bool:
        if not moved:
            return False
        node, since = moved
        for x in cluster.requests()[since:]:
            if x.api_key != 0 or x.broker != node or x.response is None:
                continue
            for t in x.response.responses:
                for p in t.partition_responses:
                    if p.index == partition and p.error_code == 0:
                        return True
        return False

    yield S.Mover(cluster.bootstrap, move, followed)


@pytest.fixture(scope="module")
def targets(kafka_broker):
    from kafkaproto.mock import MockCluster

    kafka = S.Target("kafka", kafka_broker.bootstrap, 1, functools.partial(S.kafka_mover, kafka_broker.host,
                                                                           kafka_broker.port))
    try:
        with MockCluster(brokers=3) as cluster:
            yield {"kafka": kafka, "mock": S.Target("mock", cluster.bootstrap, 3, functools.partial(mock_mover,
                                                                                                 cluster))}
    finally:
        S.close_java()


def outcome(targets, client: str, scenario: str, target: str):
    key = (client, scenario, target)
    if key not in OUTCOMES:
        t0 = time.monotonic()
        try:
            OUTCOMES[key] = S.run(client, scenario, targets[target])
        except Exception as exc:  # noqa: BLE001 - a failed run is the outcome; the test says so
            OUTCOMES[key] = f"failed: {type(exc).__name__}: {exc}"
        SECONDS[key] = time.monotonic() - t0
    return OUTCOMES[key]


def _show(value) -> str:
    return json.dumps(value, default=list, sort_keys=True)


def _params():
    for client, scenario in CASES:
        for target in TARGETS:
            marks = []
            if target == "mock" and (client, scenario) in MOCK_DEFECTS:
                marks.append(pytest.mark.xfail(reason=MOCK_DEFECTS[(client, scenario)], strict=True))
            yield pytest.param(client, scenario, target, marks=marks, id=f"{scenario}-{client}-{target}")


@pytest.mark.parametrize(("client", "scenario", "target"), list(_params()))
def test_scenario(targets, client, scenario, target):
    got = outcome(targets, client, scenario, target)
    if target == "kafka":
        assert _show(got) == _show(S.expected(client, scenario)), "Kafka did not give the outcome the scenario expects"
    else:
        assert _show(got) == _show(outcome(targets, client, scenario, "kafka")), "the mock's outcome is not Kafka's"


# --------------------------------------------------------------------------
# the page


def cannot_table() -> list[str]:
    rows = ["| client | scenario | what it cannot do |", "| --- | --- | --- |"]
    for (client, scenario), why in S.CANNOT.items():
        rows.append(f"| {S.CLIENT_NAMES[client]} | {scenario} | all of it: {why} |")
    for client, (codecs, why) in S.CODECS_LACK.items():
        rows.append(f"| {S.CLIENT_NAMES[client]} | codecs | {', '.join(sorted(codecs))}: {why} |")
    for client, calls in S.ADMIN_LACKS.items():
        for call, why in calls.items():
            rows.append(f"| {S.CLIENT_NAMES[client]} | admin | {call}: {why} |")
    return rows


def results_table(outcomes) -> list[str]:
    head = "| scenario | " + " | ".join(S.CLIENT_NAMES[c] for c in S.CLIENTS) + " |"
    rows = [head, "| --- " * (len(S.CLIENTS) + 1) + "|"]
    for scenario in S.SCENARIOS:
        cells = []
        for client in S.CLIENTS:
            if S.unsupported(client, scenario):
                cells.append("cannot")
                continue
            kafka, mock = (outcomes.get((client, scenario, t)) for t in TARGETS)
            want = S.expected(client, scenario)
            k = "as expected" if _show(kafka) == _show(want) else "**unexpected**"
            m = "same" if _show(mock) == _show(kafka) else "**differs**"
            cells.append(f"Kafka: {k}; mock: {m}")
        rows.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return rows


def differences(outcomes) -> list[str]:
    out = []
    for client, scenario in CASES:
        kafka, mock = (outcomes.get((client, scenario, t)) for t in TARGETS)
        if _show(mock) != _show(kafka):
            out.append(f"* {scenario}, {S.CLIENT_NAMES[client]}: Kafka `{_show(kafka)[:600]}`; "
                       f"mock `{_show(mock)[:600]}`")
    return out or ["None: every client saw the same outcome from both."]


def between(text: str, name: str) -> str:
    start, end = f"<!-- {name} -->\n", f"<!-- /{name} -->"
    return text[text.index(start) + len(start):text.index(end)]


def replace(text: str, name: str, lines: list[str]) -> str:
    start, end = f"<!-- {name} -->\n", f"<!-- /{name} -->"
    return text[:text.index(start) + len(start)] + "\n".join(lines) + "\n" + text[text.index(end):]


def test_the_page_is_current(targets):
    """The page's tables are those of this run (``KAFKAPROTO_WRITE_DOCS=1`` writes them)."""
    for client, scenario in CASES:
        for target in TARGETS:
            outcome(targets, client, scenario, target)
    text = DOC.read_text()
    tables = {"cannot": cannot_table(), "results": results_table(OUTCOMES), "differences": differences(OUTCOMES)}
    if os.environ.get("KAFKAPROTO_SCENARIO_OUTCOMES"):  # every outcome, for a closer look
        Path(os.environ["KAFKAPROTO_SCENARIO_OUTCOMES"]).write_text(json.dumps(
            {"/".join(k): v for k, v in OUTCOMES.items()}, default=list, indent=1))
    if os.environ.get("KAFKAPROTO_WRITE_DOCS") == "1":
        for name, lines in tables.items():
            text = replace(text, name, lines)
        DOC.write_text(text)
    total = sum(SECONDS.values())
    slowest = sorted(SECONDS.items(), key=lambda kv: -kv[1])[:5]
    print(f"\nscenario runs: {total:.0f} s in all; slowest: " + ", ".join(f"{'/'.join(k)} {v:.1f} s"
                                                                       for k, v in slowest))
    for name, lines in tables.items():
        assert between(text, name) == "\n".join(lines) + "\n", f"docs/mock-scenarios.md: the {name} table is stale"
