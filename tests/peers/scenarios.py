"""The scenario suite: every real client through the same scenarios against
any broker, each run reduced to the *outcome* the client saw, so that two
brokers (Apache Kafka 4.4 and kafkaproto's mock cluster) can be compared.

Scenarios (:data:`SCENARIOS`):

* ``codecs`` - three records with every codec (none, gzip, snappy, lz4, zstd)
  to one partition, read back: keys, values, headers, timestamps, offsets;
* ``group`` - a member of a group reads everything and commits, a second
  member joins, the partitions split between them, more records come: each
  is read once, by the member that holds its partition;
* ``commit`` - a member commits chosen offsets and leaves; a new member of
  the group resumes from them, commits, and reads its commits back (kcat
  commits only what it read: its new member resumes after all of it, and
  the harness reads the commits);
* ``transactions`` - a transaction committed (with offsets for a group), one
  aborted (with offsets too), one committed; read back ``read_committed``
  and ``read_uncommitted``, and the group's offset;
* ``admin`` - the admin calls of :data:`ADMIN_CALLS`;
* ``leader`` - a producer and a consumer stay up while the partition's leader
  moves (see :class:`Target`): both go on, nothing lost or doubled.

Clients (:data:`CLIENTS`): confluent-kafka, kafka-python and aiokafka (the
drivers of :mod:`peers.clients`), kafkajs (``kafkajs_scenarios.js``), kcat
(:mod:`peers.clients`' kcat drivers) and Kafka's Java clients 4.4
(``java/Scenarios.java``).  What a client cannot do is in :data:`CANNOT`,
:data:`ADMIN_LACKS` and :data:`CODECS_LACK`, with the reason.

:func:`run` runs one scenario with one client against a :class:`Target` and
returns the outcome (plain data: lists, dicts, strings, numbers);
:func:`expected` says what it must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import clients
from .brokers import BUILD_DIR, PeerError, PeerUnavailable, RecordingProxy
from .kafka_broker import LOG4J_CONFIG, TOOL_JVM_ARGS, _java, kafka_classpath
from .kafka_scenarios import KAFKAJS_SCRIPT, NODE_MODULES, java_clients_dir

CLIENTS = ("confluent", "kafka_python", "aiokafka", "kafkajs", "kcat", "java")
SCENARIOS = ("codecs", "group", "commit", "transactions", "admin", "leader")

#: how the docs name the clients
CLIENT_NAMES = {"confluent": "confluent-kafka", "kafka_python": "kafka-python", "aiokafka": "aiokafka",
                "kafkajs": "kafkajs", "kcat": "kcat", "java": "Java 4.4"}

#: (client, scenario) that the client cannot do at all, and why
CANNOT: dict[tuple[str, str], str] = {
    ("kcat", "transactions"): "kcat has no transactional producer",
    ("kcat", "admin"): "kcat has no admin client (`-L` lists metadata, nothing more)",
}

ADMIN_CALLS = ("create_topics", "create_partitions", "describe_configs", "alter_configs", "delete_topics",
               "list_groups", "describe_groups", "delete_groups", "delete_records", "describe_producers",
               "list_transactions", "describe_cluster")

#: admin calls of the scenario a client's admin API does not have
ADMIN_LACKS: dict[str, dict[str, str]] = {
    "confluent": {"describe_producers": "no DescribeProducers in confluent-kafka's AdminClient",
                  "list_transactions": "no ListTransactions in confluent-kafka's AdminClient"},
    "aiokafka": {"delete_groups": "no DeleteGroups in aiokafka's admin client",
                 "describe_producers": "no DescribeProducers in aiokafka's admin client",
                 "list_transactions": "no ListTransactions in aiokafka's admin client"},
    "kafkajs": {"describe_producers": "no DescribeProducers in kafkajs' admin client",
                "list_transactions": "no ListTransactions in kafkajs' admin client"},
}

#: codecs a client cannot write, and why
CODECS_LACK: dict[str, tuple[set[str], str]] = {
    "kafkajs": ({"snappy", "lz4", "zstd"}, "kafkajs writes only gzip by itself; snappy, lz4 and zstd need codec "
                                          "packages of its own that the suite does not install"),
}

#: the timestamps the records of the codecs scenario carry
T0 = 1_700_000_000_000
#: per partition, the records the harness writes for the group scenario, twice
GROUP_PARTITIONS, GROUP_EACH = 4, 10
#: the commit scenario: per partition records, the offsets committed, the records added
COMMIT_EACH, COMMIT_AT, COMMIT_MORE = 5, {0: 3, 1: 5}, 2
#: the admin scenario: records of its topic, the cut of delete_records
ADMIN_RECORDS, ADMIN_CUT = 5, 2
TIMEOUT = 30.0


def unsupported(client: str, scenario: str) -> str | None:
    """Why ``client`` cannot do ``scenario``, or None."""
    return CANNOT.get((client, scenario))


# --------------------------------------------------------------------------
# the targets


@dataclass
class Mover:
    """A partition's leader about to move, as a scenario sees it: the
    bootstrap the clients use, :meth:`move` (the harness calls it between the
    two phases of the ``leader`` scenario) and :meth:`followed` (whether the
    clients' traffic shows that they went on after the move as the target
    wants: on the mock, their writes reach the new leader; on one Kafka node,
    they met NOT_LEADER_OR_FOLLOWER and went on)."""

    bootstrap: str
    move: Callable[[], None]
    followed: Callable[[], bool]


@dataclass
class Target:
    """A broker (or cluster) the scenarios run against.

    ``nodes``: its broker count; ``mover(topic, partition)``: a context
    manager giving a :class:`Mover`."""

    name: str
    bootstrap: str
    nodes: int
    mover: Callable[[str, int], contextlib.AbstractContextManager[Mover]]


class NotLeaderProxy:
    """A decoding proxy in front of a one-node Kafka that plays a leader move.

    Every broker address in Metadata, FindCoordinator and DescribeCluster
    answers becomes the proxy's, so all of a client's connections pass it.
    After :meth:`arm`, the next Produce of the partition is refused with
    NOT_LEADER_OR_FOLLOWER, as the old leader refuses it after a move: the
    proxy sends it on to the broker for a partition that does not exist (so
    nothing is written and the answers keep their order) and turns the
    broker's UNKNOWN_TOPIC_OR_PARTITION back into the partition with
    NOT_LEADER_OR_FOLLOWER; the next Fetch answer that carries the partition
    gets NOT_LEADER_OR_FOLLOWER and no records.  The client then asks for
    metadata again and goes on with the same broker (the only one)."""

    NOWHERE = 0x7FFFFFFE
    NOT_LEADER = 6

    def __init__(self, host: str, port: int) -> None:
        self.proxy = RecordingProxy(host, port, decode=True, rewrite=self._rewrite)
        self.armed: dict[str, bool] = {}
        self.refused = 0
        self.topic: str | None = None
        self.partition = 0
        self.topic_names: dict = {}  # topic id -> name, from the Metadata answers
        self._held: dict[tuple[int, int], int] = {}  # (connection, correlation id) -> partition
        self._lock = threading.Lock()

    def start(self) -> NotLeaderProxy:
        self.proxy.start()
        return self

    def stop(self) -> None:
        self.proxy.stop()

    @property
    def bootstrap(self) -> str:
        return self.proxy.bootstrap

    def arm(self, topic: str, partition: int) -> None:
        with self._lock:
            self.topic, self.partition = topic, partition
            self.armed = {"produce": True, "fetch": True}

    def _ours(self, t) -> bool:
        name = getattr(t, "name", None) or getattr(t, "topic", None)  # newer versions: the topic id only
        return (name or self.topic_names.get(getattr(t, "topic_id", None))) == self.topic

    def _rewrite(self, conn, to_server: bool, ev) -> list | None:
        from kafkaproto.proxy import rewrite_addresses

        msg = getattr(ev, "message", None)
        key = getattr(ev, "api_key", None)
        if msg is None:
            return None
        with self._lock:
            if to_server:
                if key == 0 and self.armed.get("produce"):
                    for t in msg.topic_data or ():
                        if self._ours(t):
                            for p in t.partition_data:
                                if p.index == self.partition:
                                    p.index = self.NOWHERE
                                    self.armed["produce"] = False
                                    self._held[(conn.index, ev.correlation_id)] = self.partition
                                    return ev.encode()
                return None
            if key == 3:
                for t in msg.topics or ():
                    if t.name and t.topic_id is not None:
                        self.topic_names[t.topic_id] = t.name
            if key in (3, 10, 60):
                host, port = self.proxy.host, self.proxy.port
                return ev.encode() if rewrite_addresses(msg, key, lambda h, p: (host, port)) else None
            if key == 0 and (conn.index, ev.correlation_id) in self._held:
                index = self._held.pop((conn.index, ev.correlation_id))
                for t in msg.responses or ():
                    for p in t.partition_responses:
                        if p.index == self.NOWHERE:
                            p.index, p.error_code, p.base_offset = index, self.NOT_LEADER, -1
                            self.refused += 1
                return ev.encode()
            if key == 1 and self.armed.get("fetch"):
                for t in msg.responses or ():
                    if self._ours(t):
                        for p in t.partitions:
                            if p.partition_index == self.partition:
                                p.error_code = self.NOT_LEADER
                                p.high_watermark = p.last_stable_offset = p.log_start_offset = -1
                                p.aborted_transactions, p.records = None, b""
                                self.armed["fetch"] = False
                                self.refused += 1
                                return ev.encode()
        return None


@contextlib.contextmanager
def kafka_mover(host: str, port: int, topic: str, partition: int) -> Iterator[Mover]:
    """:class:`Target.mover` for a one-node Kafka: a :class:`NotLeaderProxy`."""
    proxy = NotLeaderProxy(host, port).start()
    try:
        yield Mover(proxy.bootstrap, lambda: proxy.arm(topic, partition), lambda: proxy.refused > 0)
    finally:
        proxy.stop()


# --------------------------------------------------------------------------
# what the scenarios write


def codec_records(codec: str, stamped: bool = True) -> list[dict]:
    """Three records for one codec: a null key, repeated header keys, values
    long enough to compress; timestamps set (``stamped``) or left to the client."""
    ci = clients.CODECS.index(codec)
    return [{"key": None if i == 1 else f"k{i}-{codec}".encode(),
             "value": (f"v{i}-{codec} " * (8 * (i + 1))).encode(),
             "headers": [("h", b"a"), ("h", b"b")],
             "timestamp_ms": T0 + 10 * ci + i if stamped else None} for i in range(3)]


def codecs_for(client: str) -> list[str]:
    lacks = CODECS_LACK.get(client, (set(), ""))[0]
    return [c for c in clients.CODECS if c not in lacks]


def txn_records(tag: str, n: int) -> list[dict]:
    return [{"key": f"{tag}{i}".encode(), "value": f"{tag}{i}".encode(), "headers": []} for i in range(n)]


def _seed(bootstrap: str, topic: str, partitions: int, each: int, tag: str) -> None:
    """``each`` records into every partition, by the harness (confluent-kafka)."""
    for p in range(partitions):
        clients.produce_confluent(bootstrap, topic, [{"key": f"{tag}-{p}-{i}".encode(), "value": b"x"}
                                                     for i in range(each)], partition=p, timeout=TIMEOUT)


def _jsonable(rec: dict) -> dict:
    def text(b):
        return None if b is None else bytes(b).decode()
    return {"key": text(rec.get("key")), "value": text(rec.get("value")),
            "headers": [[k, text(v)] for k, v in rec.get("headers") or []], "timestamp": rec.get("timestamp_ms")}


# --------------------------------------------------------------------------
# the Python clients: one adapter each, one body per scenario


class _Confluent:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def member(self, topic, group):
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100, "heartbeat.interval.ms": 200,
                      "session.timeout.ms": 6000})
        c.subscribe([topic])
        return c

    def reader(self, topic):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return c

    def poll(self, c, timeout: float) -> list[tuple[int, int, bytes | None]]:
        out = []
        for msg in c.consume(100, timeout):
            if msg.error():
                raise clients.ClientError(f"confluent-kafka consume error: {msg.error()}")
            out.append((msg.partition(), msg.offset(), msg.value()))
        return out

    def assignment(self, c) -> set[int]:
        return {tp.partition for tp in c.assignment()}

    def commit(self, c, topic, offsets=None) -> None:
        from confluent_kafka import TopicPartition

        if offsets is None:
            c.commit(asynchronous=False)
        else:
            c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)

    def committed(self, c, topic, partitions) -> dict[int, int]:
        from confluent_kafka import TopicPartition

        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in partitions],
                                                              timeout=TIMEOUT)}

    def close(self, c) -> None:
        c.close()

    def producer(self):
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5,
                         "message.timeout.ms": int(TIMEOUT * 1000)})

    def send(self, p, topic, rec) -> int:
        got = []
        p.produce(topic, key=rec["key"], value=rec["value"], partition=0,
                  on_delivery=lambda err, msg: got.append((err, msg)))
        p.flush(TIMEOUT)
        (err, msg), = got
        if err is not None:
            raise clients.ClientError(f"confluent-kafka: {err}")
        return msg.offset()

    def close_producer(self, p) -> None:
        p.flush(TIMEOUT)

    def finish(self) -> None:
        pass


class _KafkaPython(_Confluent):
    def member(self, topic, group):
        from kafka import KafkaConsumer

        # metadata_max_age_ms: a member that joined before the topic's partitions were in its
        # metadata is given none by its assignor ("No partition metadata"); it only asks
        # again when its metadata ages out (five minutes by default), so the scenario stalled.
        # And it subscribes once it knows the partitions: a member that joined with none rejoins,
        # and kafka-python (3.0) may lose track of a rejoin that a short poll left in flight (it
        # then sends no heartbeat and fetches nothing until its session expires)
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, fetch_max_wait_ms=100, heartbeat_interval_ms=200,
                          session_timeout_ms=6000, metadata_max_age_ms=1000)
        deadline = time.monotonic() + 30
        while not c.partitions_for_topic(topic) and time.monotonic() < deadline:
            time.sleep(0.05)
        c.subscribe([topic])
        return c

    def reader(self, topic):
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                          auto_offset_reset="earliest")
        c.assign([TopicPartition(topic, 0)])
        c.seek_to_beginning()
        return c

    def poll(self, c, timeout):
        return [(m.partition, m.offset, m.value) for msgs in c.poll(timeout_ms=int(timeout * 1000)).values()
                for m in msgs]

    def commit(self, c, topic, offsets=None):
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        if offsets is None:
            c.commit()
        else:
            c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})

    def committed(self, c, topic, partitions):
        from kafka import TopicPartition

        return {p: c.committed(TopicPartition(topic, p)) for p in partitions}

    def producer(self):
        from kafka import KafkaProducer

        return KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                             request_timeout_ms=10000, max_block_ms=int(TIMEOUT * 1000))

    def send(self, p, topic, rec):
        return p.send(topic, key=rec["key"], value=rec["value"], partition=0).get(TIMEOUT).offset

    def close_producer(self, p):
        p.close(timeout=5)


class _AIOKafka(_Confluent):
    """aiokafka's clients on one event loop of their own, driven a step at a time."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.loop = asyncio.new_event_loop()

    def run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def member(self, topic, group):
        from aiokafka import AIOKafkaConsumer

        return self.run(self._started(AIOKafkaConsumer, topic, bootstrap_servers=self.bootstrap, group_id=group,
                                      auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100,
                                      heartbeat_interval_ms=200, session_timeout_ms=6000))

    @staticmethod
    async def _started(cls, *args, **kwargs):
        client = cls(*args, **kwargs)  # made inside the loop: aiokafka's rule
        await client.start()
        return client

    def reader(self, topic):
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        async def make():
            c = await self._started(AIOKafkaConsumer, bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                    fetch_max_wait_ms=100, auto_offset_reset="earliest")
            c.assign([TopicPartition(topic, 0)])
            await c.seek_to_beginning()
            return c

        return self.run(make())

    def poll(self, c, timeout):
        got = self.run(c.getmany(timeout_ms=int(timeout * 1000)))
        return [(m.partition, m.offset, m.value) for msgs in got.values() for m in msgs]

    def assignment(self, c):
        return {tp.partition for tp in c.assignment()}

    def commit(self, c, topic, offsets=None):
        from aiokafka.structs import TopicPartition

        self.run(c.commit() if offsets is None else c.commit({TopicPartition(topic, p): o
                                                              for p, o in offsets.items()}))

    def committed(self, c, topic, partitions):
        from aiokafka.structs import TopicPartition

        return {p: self.run(c.committed(TopicPartition(topic, p))) for p in partitions}

    def close(self, c):
        self.run(c.stop())

    def producer(self):
        from aiokafka import AIOKafkaProducer

        return self.run(self._started(AIOKafkaProducer, bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                                      request_timeout_ms=10000))

    def send(self, p, topic, rec):
        return self.run(p.send_and_wait(topic, key=rec["key"], value=rec["value"], partition=0)).offset

    def close_producer(self, p):
        self.run(p.stop())

    def finish(self):
        self.loop.close()


ADAPTERS = {"confluent": _Confluent, "kafka_python": _KafkaPython, "aiokafka": _AIOKafka}


def _poll_until(client, consumers, want: int, reads: list[list], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while sum(map(len, reads)) < want:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: read {sum(map(len, reads))} of {want} records within {TIMEOUT:.0f} s")
        for c, read in zip(consumers, reads):
            read += [(p, o) for p, o, _ in client.poll(c, 0.05)]


def _next_offsets(read) -> dict[int, int]:
    out: dict[int, int] = {}
    for p, o in read:
        out[p] = max(out.get(p, 0), o + 1)
    return out


def _py_group(client, a: dict, pause: Callable[[str], None]) -> dict:
    one = client.member(a["topic"], a["group"])
    two = None
    try:
        first: list = []
        _poll_until(client, [one], a["first"], [first], "the first member")
        client.commit(one, a["topic"], _next_offsets(first))
        two = client.member(a["topic"], a["group"])
        reads: list[list] = [[], []]
        deadline = time.monotonic() + TIMEOUT
        while True:
            for c, read in zip((one, two), reads):
                read += [(p, o) for p, o, _ in client.poll(c, 0.05)]
            x, y = client.assignment(one), client.assignment(two)
            if x and y and len(x) + len(y) == a["partitions"] and len(x | y) == a["partitions"]:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the members did not split the partitions: {x} / {y}")
        assignments = [sorted(x), sorted(y)]
        pause("rebalanced")
        _poll_until(client, (one, two), a["second"], reads, "two members")
        for c, read in zip((one, two), reads):
            if read:
                client.commit(c, a["topic"], _next_offsets(read))
        return {"first": first, "assignments": assignments, "second": reads}
    finally:
        for c in (one, two):
            if c is not None:
                client.close(c)


def _py_commit(client, a: dict, pause: Callable[[str], None]) -> dict:
    one = client.member(a["topic"], a["group"])
    try:
        first: list = []
        _poll_until(client, [one], a["first"], [first], "the first member")
        client.commit(one, a["topic"], {int(p): o for p, o in a["offsets"].items()})
    finally:
        client.close(one)
    pause("committed")
    two = client.member(a["topic"], a["group"])
    try:
        resumed: list = []
        _poll_until(client, [two], a["second"], [resumed], "the second member")
        client.commit(two, a["topic"], _next_offsets(resumed))
        committed = client.committed(two, a["topic"], sorted(int(p) for p in a["offsets"]))
    finally:
        client.close(two)
    return {"first": first, "resumed": resumed, "committed": {str(p): o for p, o in committed.items()}}


def _py_leader(client, a: dict, pause: Callable[[str], None]) -> dict:
    producer = client.producer()
    reader = client.reader(a["topic"])
    try:
        produced = [client.send(producer, a["topic"], r) for r in a["before"]]
        read: list = []

        def take(n):
            deadline = time.monotonic() + TIMEOUT
            while len(read) < n:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"read {len(read)} of {n} records within {TIMEOUT:.0f} s")
                read.extend([o, v.decode()] for _, o, v in client.poll(reader, 0.1))

        take(len(a["before"]))
        pause("move")
        produced += [client.send(producer, a["topic"], r) for r in a["after"]]
        take(len(a["before"]) + len(a["after"]))
        return {"produced": produced, "read": read}
    finally:
        client.close(reader)
        client.close_producer(producer)


def _python(client_name: str, scenario: str, bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    if scenario == "codecs":
        for codec, recs in a["batches"]:
            clients.produce(client_name, bootstrap, a["topic"], recs, codec, partition=0, timeout=TIMEOUT)
        got = clients.consume(client_name, bootstrap, a["topic"], a["count"], TIMEOUT, partitions=[0])
        return {"records": [_got(r) for r in got]}
    if scenario == "transactions":
        clients.TRANSACTIONAL[client_name](bootstrap, a["topic"], a["group"], a["python_transactions"],
                                           transactional_id=a["txn"], timeout=TIMEOUT)
        out = {}
        for level, n, config in (("read_committed", a["committed"], clients.READ_COMMITTED[client_name]),
                                 ("read_uncommitted", a["uncommitted"], clients.READ_UNCOMMITTED[client_name])):
            out[level] = [_got(r) for r in clients.consume(client_name, bootstrap, a["topic"], n, TIMEOUT,
                                                           partitions=[0], config=config)]
        return out
    if scenario == "admin":
        return PY_ADMIN[client_name](bootstrap, a)
    client = ADAPTERS[client_name](bootstrap)
    try:
        return {"group": _py_group, "commit": _py_commit, "leader": _py_leader}[scenario](client, a, pause)
    finally:
        client.finish()


def _got(r: dict) -> dict:
    """A record from :mod:`peers.clients` as the subprocess drivers print them."""
    out = _jsonable(r)
    out.update(partition=r["partition"], offset=r["offset"], timestamp_type=r.get("timestamp_type"))
    return out


# -- admin ------------------------------------------------------------------


def _calls(calls: dict[str, Callable[[], Any]]) -> dict:
    out = {}
    for name, call in calls.items():
        try:
            out[name] = call()
        except Exception as exc:  # noqa: BLE001 - a refusal is an outcome
            out[name] = f"error: {type(exc).__name__}: {exc}"
    return out


def _wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """What ``check`` answers once it is true (or its last answer after
    ``timeout``): Kafka applies a topic's new partitions, configs and
    deletion on each broker a moment after the admin call returns."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def _altered(configs: Callable[[], dict]) -> str:
    """``retention.ms`` once it shows the value the scenario set."""
    _wait_for(lambda: configs()["retention.ms"] == "86400000")
    return configs()["retention.ms"]


def _admin_confluent(bootstrap: str, a: dict) -> dict:
    from confluent_kafka import ConsumerGroupState, TopicPartition  # noqa: F401
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fresh, group, topic = a["new_topic"], a["group"], a["topic"]
    res = ConfigResource("topic", fresh)

    def partitions(want):
        def count():
            t = admin.list_topics(fresh, timeout=TIMEOUT).topics.get(fresh)
            return len(t.partitions) if t is not None and t.error is None else 0
        _wait_for(lambda: count() == want)
        return count()

    def configs():
        got = admin.describe_configs([res])[res].result(TIMEOUT)
        return {k: got[k].value for k in ("cleanup.policy", "retention.ms")}

    def listed():
        return any(g.group_id == group for g in admin.list_consumer_groups().result(TIMEOUT).valid)

    def describe():
        d = admin.describe_consumer_groups([group])[group].result(TIMEOUT)
        return [d.state.name.capitalize(), len(d.members)]

    def delete_records():
        tp = TopicPartition(topic, 0, ADMIN_CUT)
        admin.delete_records([tp])[tp].result(TIMEOUT)
        tp = TopicPartition(topic, 0)
        return admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(TIMEOUT).offset

    def cluster():
        d = admin.describe_cluster().result(TIMEOUT)
        return {"brokers": len(d.nodes), "controller": d.controller is not None, "cluster_id": bool(d.cluster_id)}

    return _calls({
        "create_topics": lambda: (admin.create_topics([NewTopic(fresh, 1, 1)])[fresh].result(TIMEOUT),
                                  partitions(1))[1],
        "create_partitions": lambda: (admin.create_partitions([NewPartitions(fresh, 3)])[fresh].result(TIMEOUT),
                                      partitions(3))[1],
        "describe_configs": configs,
        "alter_configs": lambda: (admin.incremental_alter_configs([ConfigResource("topic", fresh, incremental_configs=[
            ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])])[res].result(
                TIMEOUT), _altered(configs))[1],
        "delete_topics": lambda: (admin.delete_topics([fresh])[fresh].result(TIMEOUT),
                                  bool(_wait_for(lambda: fresh not in admin.list_topics(timeout=TIMEOUT).topics)))[1],
        "list_groups": listed,
        "describe_groups": describe,
        "delete_groups": lambda: (admin.delete_consumer_groups([group])[group].result(TIMEOUT), not listed())[1],
        "delete_records": delete_records,
        "describe_cluster": cluster,
    })


def _admin_kafka_python(bootstrap: str, a: dict) -> dict:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic, OffsetSpec

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    fresh, group, topic = a["new_topic"], a["group"], a["topic"]
    tp = TopicPartition(topic, 0)

    def partitions(want):
        def count():
            got = admin.describe_topics([fresh])
            return len(got[0]["partitions"]) if got and got[0]["error_code"] == 0 else 0
        _wait_for(lambda: count() == want)
        return count()

    def configs():
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, fresh)], config_filter="all")
        entries = {k: v["value"] for kind in got.values() for res in kind.values() for k, v in res.items()}
        return {k: entries[k] for k in ("cleanup.policy", "retention.ms")}

    def listed():
        return any(g["group_id"] == group for g in admin.list_groups())

    def describe():
        d = admin.describe_groups([group])[group]
        return [d["group_state"].capitalize(), len(d["members"])]

    def delete_records():
        admin.delete_records({tp: ADMIN_CUT})
        return admin.list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp].offset

    def transactions():  # per broker
        return next((t.state.value for listed in admin.list_transactions().values() for t in listed
                     if t.transactional_id == a["txn"]), None)

    def cluster():
        d = admin.describe_cluster()
        return {"brokers": len(d["brokers"]), "controller": d.get("controller_id", -1) not in (None, -1),
                "cluster_id": bool(d.get("cluster_id"))}

    try:
        return _calls({
            "create_topics": lambda: (admin.create_topics([NewTopic(fresh, 1, 1)]), partitions(1))[1],
            "create_partitions": lambda: (admin.create_partitions({fresh: NewPartitions(3)}), partitions(3))[1],
            "describe_configs": configs,
            "alter_configs": lambda: (admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, fresh, configs={
                "retention.ms": "86400000"})], incremental=True), _altered(configs))[1],
            "delete_topics": lambda: (admin.delete_topics([fresh]), bool(_wait_for(
                lambda: fresh not in admin.list_topics())))[1],
            "list_groups": listed,
            "describe_groups": describe,
            "delete_groups": lambda: (admin.delete_groups([group]), not listed())[1],
            "delete_records": delete_records,
            "describe_producers": lambda: len(admin.describe_producers([tp])[tp].active_producers),
            "list_transactions": transactions,
            "describe_cluster": cluster,
        })
    finally:
        admin.close()


def _admin_aiokafka(bootstrap: str, a: dict) -> dict:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.structs import TopicPartition

    fresh, group, topic = a["new_topic"], a["group"], a["topic"]
    loop = asyncio.new_event_loop()

    def run(coro):
        return loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    admin = run(_AIOKafka._started(AIOKafkaAdminClient, bootstrap_servers=bootstrap,
                                   request_timeout_ms=int(TIMEOUT * 1000)))

    def partitions(want):
        def count():
            got = run(admin.describe_topics([fresh]))
            return len(got[0]["partitions"]) if got and got[0]["error_code"] == 0 else 0
        _wait_for(lambda: count() == want)
        return count()

    def configs():
        entries = {}
        for r in run(admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, fresh)])):
            for res in r.to_object()["resources"]:
                entries.update({c["config_names"]: c["config_value"] for c in res["config_entries"]})
        return {k: entries[k] for k in ("cleanup.policy", "retention.ms")}

    def listed():
        return any(g[0] == group for g in run(admin.list_consumer_groups()))

    def describe():
        (resp,) = run(admin.describe_consumer_groups([group]))
        (g,) = resp.to_object()["groups"]
        return [g["state"].capitalize(), len(g["members"])]

    def delete_records():
        got = run(admin.delete_records({TopicPartition(topic, 0): RecordsToDelete(ADMIN_CUT)}))
        return got[TopicPartition(topic, 0)]

    def cluster():
        d = run(admin.describe_cluster())
        return {"brokers": len(d["brokers"]), "controller": d.get("controller_id", -1) not in (None, -1),
                "cluster_id": bool(d.get("cluster_id"))}

    def alter():
        # AlterConfigs (aiokafka has no incremental form): the configs not named go back to their defaults
        run(admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, fresh,
                                                configs={"retention.ms": "86400000"})]))
        return _altered(configs)

    try:
        return _calls({
            "create_topics": lambda: (run(admin.create_topics([NewTopic(fresh, 1, 1)])), partitions(1))[1],
            "create_partitions": lambda: (run(admin.create_partitions({fresh: NewPartitions(3)})), partitions(3))[1],
            "describe_configs": configs,
            "alter_configs": alter,
            "delete_topics": lambda: (run(admin.delete_topics([fresh])), bool(_wait_for(
                lambda: fresh not in run(admin.list_topics()))))[1],
            "list_groups": listed,
            "describe_groups": describe,
            "delete_records": delete_records,
            "describe_cluster": cluster,
        })
    finally:
        run(admin.close())
        loop.close()


PY_ADMIN = {"confluent": _admin_confluent, "kafka_python": _admin_kafka_python, "aiokafka": _admin_aiokafka}


# --------------------------------------------------------------------------
# kafkajs and Java: a child process per scenario, paused between phases


class _Child:
    """A driver in a child process that prints JSON lines: ``{"wait": what}``
    (answered with a line on its stdin once ``pause(what)`` returned), then
    ``{"result": ...}`` or ``{"error": ...}``; with ``serve``, the next
    scenario goes in on its stdin."""

    def __init__(self, argv: list[str], who: str, *, env=None, cwd=None) -> None:
        self.who = who
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=cwd)
        self.lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout] + [self.lines.put(None)],
                         daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def result(self, pause: Callable[[str], None], timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise TimeoutError(f"{self.who}: no result within {timeout:.0f} s") from None
            if line is None:
                self.proc.wait(10)
                raise PeerError(f"{self.who} ended with no result (exit {self.proc.returncode}):\n"
                                f"{''.join(self.err)[-3000:]}")
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if "wait" in msg:
                pause(msg["wait"])
                self.send("go")
            elif "result" in msg:
                return msg["result"]
            elif "error" in msg:
                raise clients.ClientError(f"{self.who}: {msg['error']}")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _kafkajs(scenario: str, bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "kafkajs").is_dir():
        raise PeerUnavailable("node or kafkajs missing: run tools/peers/install_peers.sh")
    child = _Child([node, str(KAFKAJS_SCRIPT), "scenario", scenario, bootstrap, json.dumps(a)], "kafkajs",
                   env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    try:
        return child.result(pause)
    finally:
        child.close()


_JAVA: list[_Child] = []  # the run's one JVM serving the Java scenarios


def _java_scenario(scenario: str, bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    """Kafka's Java clients through a scenario, in one JVM for the whole run
    (``Scenarios serve``: a JVM's start-up each time would cost seconds)."""
    if not (_JAVA and _JAVA[0].alive):
        classes = java_clients_dir()
        _JAVA[:] = [_Child([_java(), *TOOL_JVM_ARGS, f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                            "-Dkafkaproto.log.level=ERROR", "-Dkafkaproto.log.target=SYSTEM_ERR",
                            "-cp", os.pathsep.join([str(classes), kafka_classpath()]), "Scenarios", "serve"],
                           "Java clients", cwd=str(BUILD_DIR))]
    child = _JAVA[0]
    child.send(json.dumps({"scenario": scenario, "bootstrap": bootstrap, "args": a}))
    return child.result(pause)


def close_java() -> None:
    """Ends the JVM of the Java scenarios (it also ends when this process does: its stdin closes)."""
    while _JAVA:
        _JAVA.pop().close()


# --------------------------------------------------------------------------
# kcat


class _KcatMember:
    """A ``kcat -G`` member (librdkafka's balanced consumer, auto-commit on,
    committing what it read as it leaves): what it read, and its partitions
    as kcat prints them on stderr when the group rebalances."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        import re

        argv = [clients.kcat_path(), "-G", group, "-b", bootstrap, "-J", "-u", "-X", "auto.offset.reset=earliest",
                "-X", "auto.commit.interval.ms=100", "-X", "heartbeat.interval.ms=200",
                "-X", "session.timeout.ms=6000", "-X", "fetch.wait.max.ms=100", topic]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.read: list[tuple[int, int]] = []
        self.assigned: list[int] | None = None

        def out():
            for line in self.proc.stdout:
                if line.startswith("{"):
                    d = json.loads(line)
                    self.read.append((d["partition"], d["offset"]))

        def err():
            for line in self.proc.stderr:
                m = re.search(r"rebalanced .*: (assigned|revoked): (.*)", line)
                if m:
                    self.assigned = (sorted(int(p) for p in re.findall(r"\[(\d+)\]", m.group(2)))
                                     if m.group(1) == "assigned" else [])

        for f in (out, err):
            threading.Thread(target=f, daemon=True).start()

    def stop(self) -> None:
        """Leave the group (kcat commits what it read on the way out)."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _until(check: Callable[[], bool], what: Callable[[], str]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"kcat: {what()}")
        time.sleep(0.02)


def _kcat_group(bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    """Two ``kcat -G`` members; the first hands its offsets over through
    librdkafka's commit on revoke."""
    members: list[_KcatMember] = []
    try:
        one = _KcatMember(bootstrap, a["group"], a["topic"])
        members.append(one)
        _until(lambda: len(one.read) >= a["first"], lambda: f"the first member read {len(one.read)} records")
        first = list(one.read)
        one.read.clear()
        two = _KcatMember(bootstrap, a["group"], a["topic"])
        members.append(two)

        def split():
            x, y = one.assigned, two.assigned
            return bool(x and y and len(x) + len(y) == a["partitions"] and len(set(x) | set(y)) == a["partitions"])

        _until(split, lambda: f"the members did not split the partitions: {one.assigned} / {two.assigned}")
        assignments = [one.assigned, two.assigned]
        pause("rebalanced")
        _until(lambda: len(one.read) + len(two.read) >= a["second"], lambda: "two members read too little")
        time.sleep(0.3)  # nothing more may come
        return {"first": first, "assignments": assignments, "second": [list(one.read), list(two.read)]}
    finally:
        for m in members:
            m.stop()


def _kcat_commit(bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    """kcat commits only what it read (auto-commit, and as it leaves): a
    member reads everything and leaves, a new one resumes after it; the
    commits are read back by the harness."""
    one = _KcatMember(bootstrap, a["group"], a["topic"])
    try:
        _until(lambda: len(one.read) >= a["first"], lambda: f"the first member read {len(one.read)} records")
    finally:
        one.stop()
    pause("committed")
    two = _KcatMember(bootstrap, a["group"], a["topic"])
    try:
        _until(lambda: len(two.read) >= a["kcat_second"], lambda: f"the second member read {len(two.read)} records")
        time.sleep(0.3)  # nothing more may come
    finally:
        two.stop()
    return {"first": one.read, "resumed": two.read,
            "committed": {p: committed_offset(bootstrap, a["group"], a["topic"], int(p)) for p in a["offsets"]}}


def _kcat_leader(bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    """One ``kcat -C`` printing as it reads, up while the leader moves; the
    records are written by a ``kcat -P`` before the move and another after it
    (kcat's producer sends what it read from its input only once the input
    ends, so one cannot stay up across the move).  kcat reports no offsets
    of what it produced: the offsets are those read back."""
    consumer = subprocess.Popen([clients.kcat_path(), "-C", "-q", "-J", "-u", "-b", bootstrap, "-t", a["topic"],
                                 "-p", "0", "-o", "beginning", "-X", "fetch.wait.max.ms=100"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    read: list = []
    threading.Thread(target=lambda: [read.append([d["offset"], d["payload"]]) for d in
                                     (json.loads(x) for x in consumer.stdout if x.startswith("{"))],
                     daemon=True).start()

    def take(n):
        deadline = time.monotonic() + TIMEOUT
        while len(read) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"kcat: read {len(read)} of {n} records")
            time.sleep(0.02)

    def write(recs):
        clients.produce_kcat(bootstrap, a["topic"], [dict(r, key=r["key"].encode(), value=r["value"].encode())
                                                     for r in recs], partition=0, timeout=TIMEOUT,
                             extra_args=("-X", "enable.idempotence=true"))  # a retry keeps the order

    try:
        write(a["before"])
        take(len(a["before"]))
        pause("move")
        write(a["after"])
        take(len(a["before"]) + len(a["after"]))
        return {"produced": [o for o, _ in read], "read": read}
    finally:
        consumer.kill()
        consumer.wait(10)


def _kcat(scenario: str, bootstrap: str, a: dict, pause: Callable[[str], None]) -> dict:
    if scenario == "codecs":
        for codec, recs in a["batches"]:
            clients.produce_kcat(bootstrap, a["topic"], recs, codec, partition=0, timeout=TIMEOUT)
        return {"records": [_got(r) for r in clients.consume_kcat(bootstrap, a["topic"], a["count"], TIMEOUT,
                                                                  partitions=[0])]}
    if scenario == "group":
        return _kcat_group(bootstrap, a, pause)
    if scenario == "commit":
        return _kcat_commit(bootstrap, a, pause)
    if scenario == "leader":
        return _kcat_leader(bootstrap, a, pause)
    raise clients.UnsupportedByClient(unsupported("kcat", scenario) or f"kcat: no {scenario} scenario")


# --------------------------------------------------------------------------
# one run


def _names(client: str, scenario: str, target: Target) -> dict[str, str]:
    tag = f"{scenario}-{client.replace('_', '-')}-{target.name}-{uuid.uuid4().hex[:6]}"
    return {"topic": f"sc-{tag}", "group": f"g-{tag}", "txn": f"tx-{tag}", "new_topic": f"sc-{tag}-new",
            "offsets_topic": f"sc-{tag}-in"}


def run(client: str, scenario: str, target: Target) -> dict:
    """``client`` through ``scenario`` against ``target`` → the outcome the
    client saw (see :func:`expected`)."""
    reason = unsupported(client, scenario)
    if reason:
        raise clients.UnsupportedByClient(reason)
    n = _names(client, scenario, target)
    boot = target.bootstrap
    drive = {"kafkajs": _kafkajs, "java": _java_scenario, "kcat": _kcat}.get(client)
    if drive is None:
        def drive(scenario, bootstrap, a, pause):
            return _python(client, scenario, bootstrap, a, pause)
    a: dict[str, Any] = dict(n)
    pause: Callable[[str], None] = lambda what: None  # noqa: E731
    if scenario == "codecs":
        clients.create_topic(boot, n["topic"], 1, timeout=TIMEOUT)
        stamped = client != "kcat"
        batches = [(c, codec_records(c, stamped)) for c in codecs_for(client)]
        a.update(batches=batches if client in ADAPTERS or client == "kcat" else
                 [(c, [_jsonable(r) for r in recs]) for c, recs in batches], count=3 * len(batches))
        t0 = int(time.time() * 1000)
        got = drive("codecs", boot, a, pause)
        return _codecs_outcome(got["records"], t0, int(time.time() * 1000))
    if scenario == "group":
        def group(topic: str, **more) -> dict:
            clients.create_topic(boot, topic, GROUP_PARTITIONS, timeout=TIMEOUT)
            _seed(boot, topic, GROUP_PARTITIONS, GROUP_EACH, "first")
            args = dict(a, topic=topic, partitions=GROUP_PARTITIONS, first=GROUP_PARTITIONS * GROUP_EACH,
                        second=GROUP_PARTITIONS * GROUP_EACH, **more)
            return _group_outcome(drive("group", boot, args, lambda what: _seed(
                boot, topic, GROUP_PARTITIONS, GROUP_EACH, "second")))

        if client == "java":  # the classic protocol and KIP-848's, a topic and a group each
            return {p: group(f"{n['topic']}-{p}", protocol=p, group=f"{n['group']}-{p}")
                    for p in ("classic", "consumer")}
        return group(n["topic"])
    if scenario == "commit":
        parts = len(COMMIT_AT)
        clients.create_topic(boot, n["topic"], parts, timeout=TIMEOUT)
        _seed(boot, n["topic"], parts, COMMIT_EACH, "first")
        a.update(offsets={str(p): o for p, o in COMMIT_AT.items()}, first=parts * COMMIT_EACH,
                 second=sum(COMMIT_EACH + COMMIT_MORE - o for o in COMMIT_AT.values()),
                 kcat_second=parts * COMMIT_MORE)
        pause = lambda what: _seed(boot, n["topic"], parts, COMMIT_MORE, "more")  # noqa: E731
        got = drive("commit", boot, a, pause)
        return {"first": sorted(map(tuple, got["first"])), "resumed": sorted(map(tuple, got["resumed"])),
                "committed": {str(k): v for k, v in sorted(got["committed"].items())}}
    if scenario == "transactions":
        clients.create_topic(boot, n["topic"], 1, timeout=TIMEOUT)
        clients.create_topic(boot, n["offsets_topic"], 1, timeout=TIMEOUT)
        plan = [(txn_records("c", 3), {(n["offsets_topic"], 0): 5}, True),
                (txn_records("a", 2), {(n["offsets_topic"], 0): 9}, False),
                (txn_records("d", 2), {}, True)]
        a.update(python_transactions=plan, committed=5, uncommitted=7, settle_ms=0,
                 transactions=[[[_jsonable(r) for r in recs], [[t, p, o] for (t, p), o in offsets.items()], commit]
                               for recs, offsets, commit in plan])
        if client not in ADAPTERS:
            del a["python_transactions"]  # records as bytes: for the Python drivers only
        got = drive("transactions", boot, a, pause)
        return {level: [[r["offset"], r["value"]] for r in got[level]] for level in ("read_committed",
                                                                                       "read_uncommitted")} | {
            "group_offset": committed_offset(boot, n["group"], n["offsets_topic"], 0)}
    if scenario == "admin":
        _admin_world(boot, n)
        got = drive("admin", boot, a, pause)
        return _admin_outcome(client, got, target)
    if scenario == "leader":
        clients.create_topic(boot, n["topic"], 1, timeout=TIMEOUT)
        a.update(before=[_jsonable(r) for r in txn_records("before-", 5)],
                 after=[_jsonable(r) for r in txn_records("after-", 5)])
        if client in ADAPTERS:
            a["before"], a["after"] = txn_records("before-", 5), txn_records("after-", 5)
        with target.mover(n["topic"], 0) as mover:
            got = drive("leader", mover.bootstrap, a, lambda what: mover.move())
            followed = mover.followed()
        read = [list(x) for x in got["read"]]
        unique = sorted({tuple(x) for x in read})
        return {"produced": got["produced"], "read": [list(x) for x in unique], "read_twice": len(read) - len(unique),
                "followed_the_move": followed}
    raise ValueError(f"no scenario {scenario!r}")


def committed_offset(bootstrap: str, group: str, topic: str, partition: int) -> int | None:
    """The group's committed offset, as the harness (confluent-kafka) reads it."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (tp,) = c.committed([TopicPartition(topic, partition)], timeout=TIMEOUT)
        return None if tp.offset < 0 else tp.offset
    finally:
        c.close()


def _admin_world(bootstrap: str, n: dict) -> None:
    """What the admin calls look at: a topic with records written by an
    idempotent producer and a transactional one (two active producers), a
    group with a commit and no member, a committed transaction."""
    clients.create_topic(bootstrap, n["topic"], 1, timeout=TIMEOUT)
    clients.produce_confluent(bootstrap, n["topic"], txn_records("r", ADMIN_RECORDS), partition=0, timeout=TIMEOUT,
                              config={"enable.idempotence": True})
    clients.consume_group_confluent(bootstrap, n["topic"], n["group"], ADMIN_RECORDS, TIMEOUT)
    clients.transact_confluent(bootstrap, n["topic"], n["group"], [(txn_records("t", 1), {}, True)],
                               transactional_id=n["txn"], timeout=TIMEOUT)


# --------------------------------------------------------------------------
# outcomes and what they must be


def _codecs_outcome(records: list[dict], t0: int, t1: int) -> dict:
    out = []
    for r in sorted(records, key=lambda r: r["offset"]):
        ts = r["timestamp"]
        if ts is not None and T0 <= ts < T0 + 1000:
            stamp = ts
        else:
            stamp = "client" if ts is not None and t0 - 1000 <= ts <= t1 + 1000 else ts
        out.append([r["offset"], r["key"], r["value"], [list(h) for h in r["headers"]], stamp, r["timestamp_type"]])
    return {"records": out}


def _group_outcome(got: dict) -> dict:
    first = [tuple(x) for x in got["first"]]
    second = [[tuple(x) for x in member] for member in got["second"]]
    every = [x for member in second for x in member]
    return {"first": len(set(first)), "first_twice": len(first) - len(set(first)),
            "assignment_sizes": sorted(len(x) for x in got["assignments"]),
            "second": len(set(every)), "second_twice": len(every) - len(set(every)),
            "second_by_member": sorted(len(set(m)) for m in second),
            "second_old": sum(1 for p, o in set(every) if o < GROUP_EACH)}


def _admin_outcome(client: str, got: dict, target: Target) -> dict:
    out = {}
    lacks = ADMIN_LACKS.get(client, {})
    for call in ADMIN_CALLS:
        if call in lacks:
            out[call] = "cannot"
            continue
        value = got.get(call, "missing")
        if call == "describe_cluster" and isinstance(value, dict):
            value = dict(value, brokers="all" if value.get("brokers") == target.nodes else value.get("brokers"))
        out[call] = value
    return out


def expected(client: str, scenario: str) -> dict:
    """The outcome ``client`` must see from a broker that behaves as Kafka."""
    if scenario == "codecs":
        out = []
        for codec in codecs_for(client):
            for r in codec_records(codec, client != "kcat"):
                out.append([len(out), None if r["key"] is None else r["key"].decode(), r["value"].decode(),
                            [[k, v.decode()] for k, v in r["headers"]],
                            "client" if r["timestamp_ms"] is None else r["timestamp_ms"],
                            None if client == "kafkajs" else 0])
        return {"records": out}
    if scenario == "group":
        half = GROUP_PARTITIONS // 2
        one = {"first": GROUP_PARTITIONS * GROUP_EACH, "first_twice": 0, "assignment_sizes": [half, half],
               "second": GROUP_PARTITIONS * GROUP_EACH, "second_twice": 0,
               "second_by_member": [half * GROUP_EACH] * 2, "second_old": 0}
        return {"classic": one, "consumer": one} if client == "java" else one
    if scenario == "commit":
        every = [(p, o) for p in COMMIT_AT for o in range(COMMIT_EACH)]
        resumed = [(p, o) for p, at in COMMIT_AT.items()  # kcat commits what it read: it resumes after all of it
                   for o in range(COMMIT_EACH if client == "kcat" else at, COMMIT_EACH + COMMIT_MORE)]
        return {"first": every, "resumed": resumed,
                "committed": {str(p): COMMIT_EACH + COMMIT_MORE for p in COMMIT_AT}}
    if scenario == "transactions":
        committed = [[0, "c0"], [1, "c1"], [2, "c2"], [7, "d0"], [8, "d1"]]
        return {"read_committed": committed,
                "read_uncommitted": committed[:3] + [[4, "a0"], [5, "a1"]] + committed[3:],
                "group_offset": 5}
    if scenario == "admin":
        values = {"create_topics": 1, "create_partitions": 3,
                  "describe_configs": {"cleanup.policy": "delete", "retention.ms": "604800000"},
                  "alter_configs": "86400000", "delete_topics": True, "list_groups": True,
                  "describe_groups": ["Empty", 0], "delete_groups": True, "delete_records": ADMIN_CUT,
                  "describe_producers": 2, "list_transactions": "CompleteCommit",
                  "describe_cluster": {"brokers": "all", "controller": True, "cluster_id": True}}
        lacks = ADMIN_LACKS.get(client, {})
        return {call: "cannot" if call in lacks else values[call] for call in ADMIN_CALLS}
    if scenario == "leader":
        return {"produced": list(range(10)),
                "read": [[i, f"before-{i}" if i < 5 else f"after-{i - 5}"] for i in range(10)], "read_twice": 0,
                "followed_the_move": True}
    raise ValueError(f"no scenario {scenario!r}")
