"""pytest fixtures for real Kafka peers; import them into a conftest.py.

In ``tests/conftest.py`` (``tests/`` has no ``__init__.py``, so pytest puts
``tests/`` on sys.path and this package is importable as ``peers``)::

    from peers.conftest_peers import mock_cluster, recording_proxy, tansu, tansu_behind_proxy  # noqa: F401
    from peers.conftest_peers import kafka_broker, kafka_broker_factory, kafka_cluster  # noqa: F401

(``tests.peers.conftest_peers`` if ``tests/`` becomes a package).  The session
peers are shared: defining the fixtures in several places still starts one
tansu and one mock cluster per session.

A peer that is not installed makes its tests *skip* with a hint to run
``tools/peers/install_peers.sh``; set ``KAFKAPROTO_REQUIRE_PEERS=1`` (e.g. in
CI) to make that a failure instead.  Apache Kafka itself (``kafka_broker``,
``kafka_cluster``, ``kafka_broker_factory``) fetches its jars when needed and
its tests always fail, never skip, when it cannot start; its work folders
(configuration, server logs, data) are kept and named at the end of a session
that had a failure.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping

import pytest

from .brokers import MockCluster, PeerError, PeerUnavailable, ProxiedBroker, RecordingProxy, Tansu
from .kafka_broker import KafkaCluster


def _unavailable(exc: BaseException) -> None:
    if os.environ.get("KAFKAPROTO_REQUIRE_PEERS", "") not in ("", "0"):
        pytest.fail(f"required Kafka peer unavailable: {exc}", pytrace=False)
    pytest.skip(f"Kafka peer unavailable: {exc}")


class _Shared:
    """One running peer per session even if these fixtures are defined twice
    (imported into a conftest.py *and* into a test module): the first user
    starts it, the last one to finish stops it."""

    def __init__(self, factory: Callable[[], object]) -> None:
        self.factory = factory
        self.peer = None
        self.users = 0

    def acquire(self):
        if self.peer is None:
            peer = self.factory()
            try:
                peer.start()
            except PeerUnavailable as exc:
                _unavailable(exc)
            self.peer = peer
        self.users += 1
        return self.peer

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0 and self.peer is not None:
            self.peer.stop()
            self.peer = None


_TANSU = _Shared(Tansu)
_MOCK = _Shared(lambda: MockCluster(num_brokers=1))


@pytest.fixture(scope="session")
def tansu() -> Iterator[Tansu]:
    """One tansu broker (in-memory storage) for the whole session."""
    broker = _TANSU.acquire()
    try:
        yield broker
    finally:
        _TANSU.release()


@pytest.fixture(scope="session")
def mock_cluster() -> Iterator[MockCluster]:
    """librdkafka's mock cluster (1 broker) in a child process, for the session."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as exc:
        _unavailable(PeerUnavailable(f"confluent_kafka: {exc}"))
    cluster = _MOCK.acquire()
    try:
        yield cluster
    finally:
        _MOCK.release()


@pytest.fixture
def recording_proxy() -> Iterator[Callable[..., RecordingProxy]]:
    """Factory: ``recording_proxy(upstream_host, upstream_port)`` returns a
    started :class:`RecordingProxy`; all are stopped after the test.  Called
    with no upstream, the proxy listens at once and takes its upstream later
    via ``set_upstream`` (start a broker advertising ``proxy.port`` first)."""
    proxies: list[RecordingProxy] = []

    def make(upstream_host: str | None = None, upstream_port: int | None = None) -> RecordingProxy:
        proxy = RecordingProxy(upstream_host, upstream_port).start()
        proxies.append(proxy)
        return proxy

    try:
        yield make
    finally:
        for proxy in proxies:
            proxy.stop()


@pytest.fixture
def tansu_behind_proxy() -> Iterator[ProxiedBroker]:
    """A fresh tansu that advertises a RecordingProxy's port, so all client
    traffic (bootstrap and broker connections) is recorded.  Use
    ``.bootstrap`` (the proxy) and ``.connections``."""
    try:
        with Tansu.behind_proxy() as proxied:
            yield proxied
    except PeerUnavailable as exc:
        _unavailable(exc)


# --------------------------------------------------------------------------
# Apache Kafka 4.4.0
# --------------------------------------------------------------------------


class _Kafka:
    """Started Kafka clusters of the session, one per configuration, shared by
    every fixture definition (see :class:`_Shared`).  A cluster that failed to
    start is not tried again: its later users fail at once with the same
    message."""

    def __init__(self) -> None:
        self.clusters: dict[tuple, KafkaCluster] = {}
        self.failed: dict[tuple, str] = {}
        self.users = 0

    @staticmethod
    def key(nodes: int, kwargs: Mapping) -> tuple:
        def freeze(v):
            if isinstance(v, Mapping):
                return tuple(sorted((str(k), freeze(x)) for k, x in v.items()))
            if isinstance(v, (list, tuple)):
                return tuple(freeze(x) for x in v)
            return v
        return (nodes, freeze(kwargs))

    def get(self, nodes: int = 1, **kwargs) -> KafkaCluster:
        key = self.key(nodes, kwargs)
        if key in self.failed:
            pytest.fail(self.failed[key], pytrace=False)
        cluster = self.clusters.get(key)
        if cluster is None:
            cluster = KafkaCluster(nodes, **kwargs)
            try:
                cluster.start()
            except PeerError as exc:  # PeerUnavailable too: the jars are fetched on demand
                self.failed[key] = f"Apache Kafka ({nodes} node{'s' * (nodes > 1)}) did not start: {exc}"
                pytest.fail(self.failed[key], pytrace=False)
            self.clusters[key] = cluster
        return cluster

    def release(self, config: pytest.Config, session: pytest.Session) -> None:
        self.users -= 1
        if self.users > 0:
            return
        keep = session.testsfailed > 0
        clusters, self.clusters = list(self.clusters.values()), {}
        for cluster in clusters:
            cluster.stop(keep=keep)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if keep and clusters and reporter is not None:
            with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                for cluster in clusters:
                    reporter.write_line(f"Kafka work folder kept (configuration, server.log, data per node): "
                                        f"{cluster.work_dir}")


_KAFKA = _Kafka()


@pytest.fixture(scope="session")
def kafka_broker_factory(request) -> Iterator[Callable[..., KafkaCluster]]:
    """``make(nodes=1, extra_properties=None, node_properties=None, features=None,
    release_version=None, jvm_args=())`` returns a started
    :class:`~peers.kafka_broker.KafkaCluster`; a configuration asked for twice
    in the session is the same cluster.  E.g. a broker with ACLs::

        kafka_broker_factory(extra_properties={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS"})
    """
    _KAFKA.users += 1
    try:
        yield _KAFKA.get
    finally:
        _KAFKA.release(request.config, request.session)


@pytest.fixture(scope="session")
def kafka_broker(kafka_broker_factory) -> KafkaCluster:
    """One Apache Kafka 4.4.0 node (KRaft, broker + controller) for the session:
    ``.bootstrap``, ``.host``/``.port``, ``.log_dir``, ``.tool(...)``,
    ``.dump_log_segments(...)``, ``.segment_files(topic, partition)``."""
    return kafka_broker_factory(1)


@pytest.fixture(scope="session")
def kafka_conformance(kafka_broker_factory):
    """Every client scenario of :mod:`peers.kafka_scenarios` run once in the
    session against a broker of its own (an authorizer, client telemetry)
    behind a decoding recording proxy: a :class:`~peers.kafka_scenarios.KafkaRun`
    (its steps, and each proxied connection's bytes and events)."""
    from .kafka_scenarios import record_kafka

    try:
        return record_kafka(lambda **kw: kafka_broker_factory(1, **kw))
    except PeerUnavailable as exc:
        pytest.fail(f"the client scenarios could not run: {exc}", pytrace=False)


class _ProxiedCluster:
    """The session's three-node cluster, each node behind a decoding
    :class:`RecordingProxy` that it advertises; one per session even if the
    fixture is defined twice (see :class:`_Shared`)."""

    def __init__(self) -> None:
        self.cluster: KafkaCluster | None = None
        self.proxies: list[RecordingProxy] = []
        self.users = 0

    def acquire(self, make: Callable[..., KafkaCluster]) -> KafkaCluster:
        if self.cluster is None:
            proxies = [RecordingProxy(decode=True).start() for _ in range(3)]
            self.proxies = proxies  # stopped by release, even if the cluster does not start
            self.users += 1
            cluster = make(3, advertised={i + 1: (p.host, p.port) for i, p in enumerate(proxies)})
            for node, proxy in zip(cluster.nodes, proxies):
                proxy.set_upstream(node.host, node.port)
            cluster.proxies = proxies
            self.cluster = cluster
        else:
            self.users += 1
        return self.cluster

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0:
            for proxy in self.proxies:
                proxy.stop()
            self.cluster, self.proxies = None, []


_CLUSTER = _ProxiedCluster()


@pytest.fixture(scope="session")
def kafka_cluster(kafka_broker_factory) -> Iterator[KafkaCluster]:
    """Three Apache Kafka 4.4.0 nodes (each broker + controller) for the
    session; ``.stop_node(id)`` / ``.start_node(id)`` move leaders.  Each node
    advertises a decoding :class:`RecordingProxy` of its own
    (``.proxies[node_id - 1]``), so that clients that follow the Metadata
    reach it through the proxy, which records every connection (a test takes
    those accepted after it began); the nodes' own listeners
    (``.nodes[i].bootstrap``) answer directly.  One cluster serves the
    three-node tests of both kinds: a start is three JVMs."""
    try:
        yield _CLUSTER.acquire(kafka_broker_factory)
    finally:
        _CLUSTER.release()
