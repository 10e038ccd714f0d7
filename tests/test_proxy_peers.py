"""examples/logging_proxy.py carries real client traffic: confluent-kafka,
kafka-python and aiokafka produce with every codec and read the records back
through it, in front of tansu and of librdkafka's mock cluster (3 brokers,
reached through the listeners the proxy opens when responses name them);
its log pairs every request with its response and decodes all of them."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from peers import clients
from peers.brokers import MockCluster, PeerUnavailable
from peers.conftest_peers import _unavailable

pytestmark = [pytest.mark.peers, pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "logging_proxy.py"
TIMEOUT = 20.0

#: one line per request/response pair, as the example writes it
PAIR = re.compile(r"^(?P<api>\S+)\((?P<key>-?\d+)\) v(?P<version>-?\d+) correlation_id=(?P<corr>-?\d+) "
                  r"client_id=(?P<client>.*) broker=(?P<broker>\S+) latency_ms=(?P<ms>[\d.]+) "
                  r"(?P<error>(errors|decode_error)=.*)$")
UNANSWERED = re.compile(r"^connection to \S+ closed, \d+ unanswered: ")  # a consumer closing mid-Fetch
LISTENING = re.compile(r"^listening on (?P<host>\S+):(?P<port>\d+) for (?P<up_host>\S+):(?P<up_port>\d+)$")


class ExampleProxy:
    """The example in a child process, its stdout (and stderr) in a file."""

    def __init__(self, upstream: tuple[str, int], log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--upstream", f"{upstream[0]}:{upstream[1]}"],
                                     stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while "\n" not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the proxy did not start:\n{self.text()}")
            time.sleep(0.05)
        first = LISTENING.match(self.lines()[0])
        assert first, self.text()
        self.bootstrap = f"{first['host']}:{first['port']}"

    def text(self) -> str:
        return self.log_path.read_text()

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def pairs(self) -> list[re.Match]:
        return [m for m in map(PAIR.match, self.lines()) if m]

    def listeners(self) -> dict[tuple[str, int], int]:
        """upstream broker -> the proxy's port for it"""
        return {(m["up_host"], int(m["up_port"])): int(m["port"]) for m in map(LISTENING.match, self.lines()) if m}

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def mock_cluster_3():
    cluster = MockCluster(num_brokers=3)
    try:
        cluster.start()
    except PeerUnavailable as exc:
        _unavailable(exc)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def proxied(request, tmp_path):
    """(broker name, broker, a fresh example proxy in front of it: its log is the test's alone)"""
    broker = request.getfixturevalue("tansu" if request.param == "tansu" else "mock_cluster_3")
    proxy = ExampleProxy((broker.host, broker.port), tmp_path / "proxy.log")
    try:
        yield request.param, broker, proxy
    finally:
        code = proxy.stop()
    assert code == 0 and proxy.lines()[-1] == "stopped", proxy.text()[-3000:]
    assert "Traceback" not in proxy.text() and "never retrieved" not in proxy.text(), proxy.text()[-3000:]


def make_records(n: int = 5) -> list[dict]:
    # compressible values, one null key, headers (no None values: kafka-python cannot send them)
    return [{"key": None if i == 0 else b"key-%d" % i, "value": (b"value %d " % i) * (40 * i + 1),
             "headers": [("h", b"x%d" % i), ("h", b"")]} for i in range(n)]


# every client and every codec against each broker, not every combination
CASES = [("tansu", "confluent", "none"), ("tansu", "kafka_python", "gzip"), ("tansu", "aiokafka", "snappy"),
         ("tansu", "confluent", "lz4"), ("tansu", "kafka_python", "zstd"),
         ("mock", "kafka_python", "none"), ("mock", "aiokafka", "gzip"), ("mock", "confluent", "snappy"),
         ("mock", "aiokafka", "lz4"), ("mock", "confluent", "zstd")]


def topic_led_away_from_bootstrap(mock: MockCluster, bootstrap: str, prefix: str) -> tuple[str, int, str]:
    """A new topic (created through the proxy) and a partition whose leader is
    not the mock's first broker → (topic, partition, leader "host:port"): its
    traffic goes through a listener the proxy opened for a Metadata response.
    The mock picks leaders at random, so a topic may have none; try another."""
    from confluent_kafka import Producer

    first = f"{mock.host}:{mock.port}"
    for _ in range(10):
        topic = clients.unique_topic(prefix)
        clients.create_topic(bootstrap, topic)
        md = Producer({"bootstrap.servers": mock.bootstrap}).list_topics(topic, timeout=10)  # not through the proxy
        address = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        for partition, pm in sorted(md.topics[topic].partitions.items()):
            if address[pm.leader] != first:
                return topic, partition, address[pm.leader]
    raise AssertionError(f"every partition of 10 topics is led by {first}")


@pytest.mark.parametrize("proxied,client,codec", CASES, indirect=["proxied"])
def test_records_go_through_the_logging_proxy_and_come_back(proxied, client, codec):
    name, broker, proxy = proxied
    producer_id, consumer_id = f"produce-{client}-{codec}", f"consume-{client}-{codec}"
    extra = clients.KAFKA_PYTHON_MOCK_CONFIG if client == "kafka_python" and name == "mock" else {}
    id_key = "client.id" if client == "confluent" else "client_id"
    if name == "mock":
        topic, partition, leader = topic_led_away_from_bootstrap(broker, proxy.bootstrap, f"proxy-{client}-{codec}")
    else:
        topic, partition, leader = clients.unique_topic(f"proxy-{client}-{codec}"), 0, broker.bootstrap
        clients.create_topic(proxy.bootstrap, topic)
    sent = clients.produce(client, proxy.bootstrap, topic, make_records(), codec, partition=partition,
                           timeout=TIMEOUT, config={id_key: producer_id, **extra})
    if client == "kafka_python":
        got = clients.consume_kafka_python(proxy.bootstrap, topic, len(sent), timeout=TIMEOUT, partitions=[partition],
                                           config={"client_id": consumer_id, **extra})
    else:
        got = clients.consume_confluent(proxy.bootstrap, topic, len(sent), timeout=TIMEOUT, partitions=[partition],
                                        config={"client.id": consumer_id})
    clients.assert_same_records(sent, got)

    pairs = proxy.pairs()
    produced = {m["broker"] for m in pairs if m["key"] == "0" and m["client"] == repr(producer_id)}
    fetched = {m["broker"] for m in pairs if m["key"] == "1" and m["client"] == repr(consumer_id)}
    # on the mock, through the listener the rewritten Metadata sent the clients to
    assert produced == fetched == {leader}, proxy.text()[-3000:]
    assert not [m.string for m in pairs if m["error"].startswith("decode_error")]
    unusual = [line for line in proxy.lines() if not (PAIR.match(line) or LISTENING.match(line)
                                                      or UNANSWERED.match(line))]
    assert not unusual, unusual  # nothing unpaired, undecodable, unframed or failed
    if name == "mock":  # Metadata named every broker: each got a listener
        assert set(broker.brokers) <= set(proxy.listeners()), proxy.listeners()


def test_stops_on_sigint_and_sigterm(tansu, tmp_path):
    for sig in (signal.SIGINT, signal.SIGTERM):
        proxy = ExampleProxy((tansu.host, tansu.port), tmp_path / f"{sig.name}.log")
        clients.create_topic(proxy.bootstrap, clients.unique_topic("proxy-stop"))
        assert proxy.stop(sig) == 0, proxy.text()
        assert proxy.lines()[-1] == "stopped" and "Traceback" not in proxy.text(), proxy.text()


def test_bytes_that_do_not_frame_pass_raw(tmp_path):
    # a TLS ClientHello's first 4 bytes read as a size of 369 MB: no Kafka frame
    hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)) * 4
    with socket.create_server(("127.0.0.1", 0)) as echo_server:
        def echo() -> None:
            conn, _ = echo_server.accept()
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

        thread = threading.Thread(target=echo, daemon=True)
        thread.start()
        proxy = ExampleProxy(echo_server.getsockname(), tmp_path / "proxy.log")
        try:
            host, port = proxy.bootstrap.rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(hello[:7])  # split: the size prefix alone already stops framing
                sock.sendall(hello[7:])
                got = b""
                while len(got) < len(hello):
                    got += sock.recv(65536)
            assert got == hello
        finally:
            assert proxy.stop() == 0, proxy.text()
        thread.join(5)
    text = proxy.text()
    assert "client bytes stopped framing" in text and "broker bytes stopped framing" in text, text
    assert "Traceback" not in text, text
