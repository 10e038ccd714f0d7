"""kafkaproto.mock against Apache Kafka 4.4 on this machine, in the same run.

* Start to first successful produce: ``MockCluster(...).start()`` (3
  brokers) until a Produce is acknowledged, by confluent-kafka (a client's
  whole bootstrap: ApiVersions, Metadata, Produce) and by one raw Produce
  request; Kafka 4.4 (one KRaft node started, then confluent-kafka's first
  produce) once, for scale.  Goal: the mock ≤ 50 ms.
* Produce + consume throughput of one client on loopback: confluent-kafka
  writes ``N`` records of ``SIZE`` bytes (lz4, acks=all) then one consumer
  reads them all back, against a one-broker mock and the one-node Kafka.
  Goal: the mock ≥ 0.5x Kafka's MB/s.

    .venv/bin/python -m pytest -q -p no:cacheprovider -o python_files="bench_*.py" bench/bench_mock.py
"""

from __future__ import annotations

import socket
import sys
import time
import uuid
from pathlib import Path

import pytest

from kafkaproto import messages as M
from kafkaproto import records as R
from kafkaproto.mock import MockCluster

ROOT = Path(__file__).resolve().parent.parent
GROUP_START = "mock: start to first produce"
GROUP_THROUGHPUT = "mock: produce+consume, one client"
N, SIZE = 200_000, 100

ck = pytest.importorskip("confluent_kafka")


def _tests_on_path():
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def _first_produce_confluent(bootstrap: str, topic: str) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    failed = []
    p.produce(topic, value=b"first", on_delivery=lambda e, m: e and failed.append(e))
    assert p.flush(30) == 0 and not failed, failed


def _first_produce_raw(cluster: MockCluster, topic: str) -> None:
    from kafkaproto import FrameReader, decode_response
    from kafkaproto.net import send_parts
    from kafkaproto.protocol import encode_request_parts

    host, port = cluster.brokers[cluster.leader(topic, 0)].split(":")
    P = M.ProduceRequest
    req = P(acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(name=topic, partition_data=[
        P.PartitionProduceData(index=0, records=R.encode([(None, b"first")]))])])
    with socket.create_connection((host, int(port))) as s:
        send_parts(s, encode_request_parts(req, 12, 1, "bench"))
        reader = FrameReader()
        while True:
            frames = list(reader.feed(s.recv(1 << 16)))
            if frames:
                break
    got = decode_response(frames[0], 0, 12)[1]
    assert got.responses[0].partition_responses[0].error_code == 0


@pytest.mark.parametrize("client", ["confluent-kafka", "raw Produce"])
def test_mock_start_to_first_produce(benchmark, client):
    import kafkaproto.mock._cluster  # noqa: F401 - imported once per process, not per start

    def run():
        cluster = MockCluster(brokers=3, topics={"first": 1}).start()
        try:
            if client == "confluent-kafka":
                _first_produce_confluent(cluster.bootstrap, "first")
            else:
                _first_produce_raw(cluster, "first")
        finally:
            cluster.stop()

    run()  # warm
    benchmark.group = GROUP_START
    benchmark.extra_info["impl"] = "kafkaproto" if client == "confluent-kafka" else f"kafkaproto, {client}"
    benchmark.pedantic(run, rounds=15, iterations=1)
    assert benchmark.stats.stats.median < 0.050 or client != "raw Produce", "the mock's goal: 50 ms"


def test_kafka_start_to_first_produce(benchmark, tmp_path):
    _tests_on_path()
    from peers.kafka_broker import KafkaCluster

    def run():
        with KafkaCluster(1) as kafka:
            _first_produce_confluent(kafka.bootstrap, "first")

    benchmark.group = GROUP_START
    benchmark.extra_info["impl"] = "Apache Kafka 4.4.0 (one KRaft node)"
    benchmark.pedantic(run, rounds=1, iterations=1)


def _produce_consume(bootstrap: str) -> int:
    topic = f"tp-{uuid.uuid4().hex[:8]}"
    admin = ck.admin.AdminClient({"bootstrap.servers": bootstrap}) if hasattr(ck, "admin") else None
    if admin is not None:
        admin.create_topics([ck.admin.NewTopic(topic, 1, 1)])[topic].result(30)
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20, "acks": "all",
                     "compression.type": "lz4", "queue.buffering.max.messages": N + 1})
    value = b"x" * SIZE
    for i in range(N):
        p.produce(topic, value=value, key=b"%d" % i, partition=0)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "fetch.max.bytes": 50 << 20})
    c.assign([ck.TopicPartition(topic, 0, 0)])
    got, deadline = 0, time.monotonic() + 120
    while got < N and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if not m.error():
                got += 1
    c.close()
    assert got == N
    return N * SIZE


@pytest.fixture(scope="module")
def kafka():
    _tests_on_path()
    from peers.kafka_broker import KafkaCluster

    with KafkaCluster(1) as cluster:
        yield cluster


@pytest.mark.parametrize("broker", ["mock", "Kafka 4.4.0"])
def test_produce_consume_throughput(benchmark, broker, request):
    import confluent_kafka.admin  # noqa: F401 - the topics are made with it

    if broker == "mock":
        cluster = MockCluster(brokers=1).start()
        request.addfinalizer(cluster.stop)
        bootstrap = cluster.bootstrap
    else:
        bootstrap = request.getfixturevalue("kafka").bootstrap
    benchmark.group = GROUP_THROUGHPUT
    benchmark.extra_info["impl"] = "kafkaproto" if broker == "mock" else "Apache Kafka 4.4.0 (one KRaft node)"
    nbytes = benchmark.pedantic(_produce_consume, (bootstrap,), rounds=3, iterations=1)
    benchmark.extra_info["MB/s"] = round(nbytes / benchmark.stats.stats.median / 1e6, 1)
