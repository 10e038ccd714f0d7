"""pytest fixtures for real Kafka peers; import them into a conftest.py.

In ``tests/conftest.py`` (``tests/`` has no ``__init__.py``, so pytest puts
``tests/`` on sys.path and this package is importable as ``peers``)::

    from peers.conftest_peers import mock_cluster, recording_proxy, tansu, tansu_behind_proxy  # noqa: F401

(``tests.peers.conftest_peers`` if ``tests/`` becomes a package).  The session
peers are shared: defining the fixtures in several places still starts one
tansu and one mock cluster per session.

A peer that is not installed makes its tests *skip* with a hint to run
``tools/peers/install_peers.sh``; set ``KAFKAPROTO_REQUIRE_PEERS=1`` (e.g. in
CI) to make that a failure instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from .brokers import MockCluster, PeerUnavailable, ProxiedBroker, RecordingProxy, Tansu


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
