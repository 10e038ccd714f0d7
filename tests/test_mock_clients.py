"""Real clients against kafkaproto's mock cluster of three brokers:
partitions led by different brokers, consumer groups of both protocols
through rebalances, transactions, SASL, a broker taken down under a
producer, a leader moved under a consumer, faults injected, and the pytest
fixtures.  (The cross-client scenarios, against Kafka 4.4 as well, are
tests/test_mock_scenarios*.py; answer by answer against Kafka:
tests/test_mock_vs_kafka.py.)"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from kafkaproto import ErrorCode as E

pytestmark = [pytest.mark.peers]

ck = pytest.importorskip("confluent_kafka")


def _producer(cluster, **conf):
    return ck.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, **conf})


def _consume(consumer, n, timeout=30.0):
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is None or m.error():
            continue
        got.append(m)
    return got


def _produce(cluster, topic, n, partitions=None, **conf):
    p = _producer(cluster, **conf)
    errors = []
    for i in range(n):
        kw = {"partition": i % partitions} if partitions else {}
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=lambda e, m: e and errors.append(e), **kw)
    assert p.flush(30) == 0 and not errors, errors
    return p


@pytest.mark.kafka_mock(brokers=3, topics={"spread": 6})
def test_confluent_produces_to_every_leader_and_a_group_reads_it_all(kafka_mock):
    assert sorted({kafka_mock.leader("spread", i) for i in range(6)}) == [1, 2, 3]
    _produce(kafka_mock, "spread", 60, partitions=6, **{"enable.idempotence": True, "compression.type": "zstd"})
    produced = kafka_mock.requests("Produce")
    assert {x.broker for x in produced} == {1, 2, 3}
    assert all(x.response.responses[0].partition_responses[0].error_code == 0 for x in produced)
    c = ck.Consumer({"bootstrap.servers": kafka_mock.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    c.subscribe(["spread"])
    got = _consume(c, 60)
    c.commit(asynchronous=False)
    c.close()
    assert sorted(m.value() for m in got) == sorted(b"v%d" % i for i in range(60))
    assert sum(kafka_mock.committed("g").values()) == 60
    assert len(kafka_mock.records("spread")) == 60


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_members_rebalance(kafka_mock_factory, protocol):
    cluster = kafka_mock_factory(brokers=3, topics={"rb": 4}, heartbeat_interval_ms=500)
    _produce(cluster, "rb", 40, partitions=4)
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": f"rb-{protocol}", "auto.offset.reset": "earliest",
            "group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    a = ck.Consumer(conf)
    a.subscribe(["rb"])
    first = _consume(a, 40)
    assert len(first) == 40
    b = ck.Consumer(conf)
    b.subscribe(["rb"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        a.poll(0.1)
        b.poll(0.1)
        if a.assignment() and b.assignment() and len(a.assignment()) + len(b.assignment()) == 4:
            break
    assert len(a.assignment()) == 2 and len(b.assignment()) == 2, (a.assignment(), b.assignment())
    b.close()
    a.close()
    api = "ConsumerGroupHeartbeat" if protocol == "consumer" else "JoinGroup"
    assert kafka_mock_requests_ok(cluster, api)


def kafka_mock_requests_ok(cluster, api):
    xs = cluster.requests(api)
    return xs and all(x.response is not None for x in xs)


def test_transactions_and_read_committed(kafka_mock_factory):
    cluster = kafka_mock_factory(brokers=3, topics={"tx": 2})
    p = _producer(cluster, **{"transactional.id": "tx-1"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(4):
        p.produce("tx", value=b"kept%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce("tx", value=b"dropped%d" % i, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "txg", "auto.offset.reset": "earliest",
                     "isolation.level": "read_committed"})
    c.subscribe(["tx"])
    got = _consume(c, 4, timeout=20)
    time.sleep(0.5)
    got += _consume(c, 1, timeout=1)
    c.close()
    assert sorted(m.value() for m in got) == [b"kept%d" % i for i in range(4)]
    assert sorted(r.value for r in cluster.records("tx", committed=True)) == [b"kept%d" % i for i in range(4)]
    assert len(cluster.records("tx")) == 8


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_clients(kafka_mock_factory, mechanism):
    cluster = kafka_mock_factory(brokers=2, topics={"s": 1}, users={"alice": "alice-secret"})
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": "alice",
            "sasl.password": "alice-secret"}
    _produce(cluster, "s", 3, **conf)
    assert len(cluster.records("s")) == 3
    bad = _producer(cluster, **dict(conf, **{"sasl.password": "wrong"}))
    failed = []
    bad.produce("s", value=b"x", on_delivery=lambda e, m: failed.append(e))
    bad.flush(5)
    assert len(cluster.records("s")) == 3
    auth = cluster.requests("SaslAuthenticate")
    assert any(x.response.error_code == E.SASL_AUTHENTICATION_FAILED for x in auth if x.response is not None)


def test_a_broker_down_under_a_producer(kafka_mock_factory):
    cluster = kafka_mock_factory(brokers=3, topics={"down": 3})
    p = _produce(cluster, "down", 30, partitions=3)
    victim = cluster.leader("down", 0)
    cluster.stop_broker(victim)
    assert cluster.leader("down", 0) != victim
    errors = []
    for i in range(30):
        p.produce("down", value=b"after%d" % i, partition=i % 3, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(60) == 0 and not errors
    cluster.start_broker(victim)
    assert len(cluster.records("down")) == 60


def test_a_leader_moved_under_a_consumer(kafka_mock_factory):
    cluster = kafka_mock_factory(brokers=3, topics={"mv": 1})
    _produce(cluster, "mv", 10)
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "mv", "auto.offset.reset": "earliest"})
    c.subscribe(["mv"])
    assert len(_consume(c, 10)) == 10
    old = cluster.leader("mv", 0)
    cluster.move_leader("mv", 0, next(n for n in (1, 2, 3) if n != old))
    _produce(cluster, "mv", 10)
    assert len(_consume(c, 10)) == 10
    c.close()
    fetches = cluster.requests("Fetch", broker=old)  # the old leader, a follower now, fences the old epoch
    assert any(p.error_code == E.FENCED_LEADER_EPOCH for x in fetches if x.response is not None
               for t in x.response.responses for p in t.partitions)


def test_injected_errors_are_retried_by_the_client(kafka_mock_factory):
    cluster = kafka_mock_factory(brokers=1, topics={"retry": 1})
    cluster.inject_error("Produce", "NOT_ENOUGH_REPLICAS", count=3)
    cluster.add_latency("Produce", ms=50)
    _produce(cluster, "retry", 1, **{"retry.backoff.ms": 10})
    codes = [x.response.responses[0].partition_responses[0].error_code for x in cluster.requests("Produce")]
    assert codes == [E.NOT_ENOUGH_REPLICAS] * 3 + [0]
    assert len(cluster.records("retry")) == 1


def test_kafka_python_and_aiokafka_in_groups(kafka_mock_factory):
    kafka = pytest.importorskip("kafka")
    aiokafka = pytest.importorskip("aiokafka")
    cluster = kafka_mock_factory(brokers=3, topics={"py": 3})
    prod = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type="gzip")
    for i in range(9):
        prod.send("py", value=b"v%d" % i, partition=i % 3)
    prod.flush(30)
    prod.close()
    cons = kafka.KafkaConsumer("py", bootstrap_servers=cluster.bootstrap, group_id="kp", auto_offset_reset="earliest",
                               consumer_timeout_ms=10000)
    got = []
    for m in cons:
        got.append(m.value)
        if len(got) == 9:
            break
    cons.commit()
    cons.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(9))

    async def aio():
        c = aiokafka.AIOKafkaConsumer("py", bootstrap_servers=cluster.bootstrap, group_id="aio",
                                      auto_offset_reset="earliest")
        await c.start()
        try:
            out = []
            while len(out) < 9:
                batch = await c.getmany(timeout_ms=1000)
                out += [m.value for ms in batch.values() for m in ms]
            await c.commit()
            return out
        finally:
            await c.stop()

    assert sorted(asyncio.run(asyncio.wait_for(aio(), 60))) == sorted(b"v%d" % i for i in range(9))
    assert sum(cluster.committed("aio").values()) == 9


@pytest.mark.parametrize("kafka_mock", [1, {"brokers": 2, "topics": {"p": 2}}], indirect=True)
def test_the_fixture_takes_parameters(kafka_mock):
    assert len(kafka_mock.brokers) in (1, 2)
    md = ck.Producer({"bootstrap.servers": kafka_mock.bootstrap}).list_topics(timeout=10)
    assert len(md.brokers) == len(kafka_mock.brokers)


@pytest.mark.kafka_mock(brokers=1, topics={"f": 1}, errors=[
    {"api": "Metadata", "error_code": "UNKNOWN_SERVER_ERROR", "count": None, "topic": "f"}])
def test_the_marker_injects_faults(kafka_mock):
    md = ck.Producer({"bootstrap.servers": kafka_mock.bootstrap}).list_topics("f", timeout=10)
    assert md.topics["f"].error is not None


def test_the_session_cluster(kafka_mock_session):
    topic = f"s-{uuid.uuid4().hex[:8]}"
    kafka_mock_session.create_topic(topic, 2)
    _produce(kafka_mock_session, topic, 4, partitions=2)
    assert len(kafka_mock_session.records(topic)) == 4


def test_async_with():
    from kafkaproto.mock import MockCluster

    aiokafka = pytest.importorskip("aiokafka")

    async def main():
        async with MockCluster(brokers=1, topics={"a": 1}) as cluster:
            p = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
            await p.start()
            try:
                await p.send_and_wait("a", b"x")
            finally:
                await p.stop()
            return [r.value for r in cluster.records("a")]

    assert asyncio.run(asyncio.wait_for(main(), 60)) == [b"x"]
