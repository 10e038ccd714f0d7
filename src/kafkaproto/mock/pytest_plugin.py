"""pytest fixtures for kafkaproto's mock Kafka cluster (loaded through the
``pytest11`` entry point when kafkaproto is installed).

* ``kafka_mock``: a :class:`~kafkaproto.mock.MockCluster` for one test,
  stopped after it.  Configure it with the ``kafka_mock`` marker
  (``@pytest.mark.kafka_mock(brokers=1, topics={"orders": 3}, errors=[...],
  latency={...})``) or parametrize it indirectly
  (``@pytest.mark.parametrize("kafka_mock", [1, 3], indirect=True)``: a
  broker count, or a dict of the marker's arguments).
* ``kafka_mock_session``: one cluster for the whole session (3 brokers, or
  ``--kafka-mock-brokers``); tests that share it use topics and groups of
  their own.  Its faults are cleared after each test that uses it.
* ``kafka_mock_factory``: a function that starts more clusters
  (``kafka_mock_factory(brokers=2, ...)``), all stopped after the test.

The marker's ``errors`` is a list of :meth:`~kafkaproto.mock.MockCluster.inject_error`
argument dicts (or ``(api, error_code)`` pairs); ``latency`` maps an api
name (or None for every api) to milliseconds.
"""

from __future__ import annotations

import pytest

_FAULTS = ("errors", "latency")


def pytest_addoption(parser):
    group = parser.getgroup("kafka-mock", "kafkaproto's mock Kafka cluster")
    group.addoption("--kafka-mock-brokers", type=int, default=3,
                    help="brokers of the session's mock cluster (kafka_mock_session; default 3)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kafka_mock(brokers=3, topics=None, errors=None, latency=None, **options): "
                   "how the kafka_mock fixture's cluster is made (options: MockCluster's)")


def _apply_faults(cluster, errors=None, latency=None) -> None:
    for e in errors or ():
        if isinstance(e, dict):
            cluster.inject_error(**e)
        else:
            cluster.inject_error(*e)
    for api, ms in (latency or {}).items():
        cluster.add_latency(api=api, ms=ms)


def _start(options: dict):
    from . import MockCluster

    options = dict(options)
    faults = {k: options.pop(k) for k in _FAULTS if k in options}
    cluster = MockCluster(**options).start()
    try:
        _apply_faults(cluster, **faults)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture
def kafka_mock_factory():
    """Start mock clusters in a test: ``kafka_mock_factory(brokers=1, topics={...})``."""
    started = []

    def make(brokers: int = 3, **options):
        cluster = _start(dict(options, brokers=brokers))
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()


@pytest.fixture
def kafka_mock(request, kafka_mock_factory):
    """A mock Kafka cluster for this test (``kafka_mock`` marker, or an indirect parameter)."""
    options: dict = {}
    marker = request.node.get_closest_marker("kafka_mock")
    if marker is not None:
        if marker.args:
            options["brokers"] = marker.args[0]
        options.update(marker.kwargs)
    param = getattr(request, "param", None)
    if isinstance(param, int):
        options["brokers"] = param
    elif isinstance(param, dict):
        options.update(param)
    elif param is not None:
        raise TypeError(f"kafka_mock's parameter is a broker count or a dict of options, not {param!r}")
    return kafka_mock_factory(**options)


@pytest.fixture(scope="session")
def _kafka_mock_session_cluster(request):
    cluster = _start({"brokers": request.config.getoption("--kafka-mock-brokers", 3)})
    yield cluster
    cluster.stop()


@pytest.fixture
def kafka_mock_session(_kafka_mock_session_cluster):
    """The session's mock Kafka cluster (its faults cleared after the test)."""
    yield _kafka_mock_session_cluster
    _kafka_mock_session_cluster.clear_faults()
