import os

import pytest
from hypothesis import settings

import kafkaproto
from support.spark_session import shared_session, stop_shared_session
from support.twins import compiled_impl, pure_impl

# Properties, not timings: speed lives in bench/, and a per-example deadline
# only fails a property test when the machine is busy.
settings.register_profile("kafkaproto", deadline=None)
settings.load_profile("kafkaproto")

_compiled = compiled_impl()

# The fixtures (imported at the end) that start a real peer: their users are
# marked peers, and cluster too for the multi-node Kafka (pyproject.toml).
PEER_FIXTURES = frozenset({"java_oracle", "java_oracle_for", "java_oracle_legacy", "kafka_broker",
                           "kafka_broker_factory", "kafka_cluster", "kafka_conformance", "mock_cluster",
                           "recording_proxy", "tansu", "tansu_behind_proxy"})
CLUSTER_FIXTURES = frozenset({"kafka_cluster", "standalone_spark", "connect_remote"})


def pytest_configure(config):
    if os.environ.get("KAFKAPROTO_EXPECT_COMPILED") == "1" and not kafkaproto.COMPILED:
        raise pytest.UsageError("KAFKAPROTO_EXPECT_COMPILED=1 but the compiled core (kafkaproto._codec) did not load")


def pytest_report_header(config):
    impl = "compiled (kafkaproto._codec)" if kafkaproto.COMPILED else "pure-Python twin (kafkaproto._codec_py)"
    return f"kafkaproto implementation: {impl}"


# First, so that `-m` selects on the markers added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        # A test that uses the shared Spark session or a peer's fixture, even
        # through another fixture, is a spark or peers test whatever its module says.
        used = set(getattr(item, "fixturenames", ()))
        if "spark" in used:
            item.add_marker(pytest.mark.spark)
        if used & PEER_FIXTURES:
            item.add_marker(pytest.mark.peers)
        if used & CLUSTER_FIXTURES:
            item.add_marker(pytest.mark.cluster)
    # The modules with Spark tests together at the end, so that the shared
    # session lives only while they run; last of all those on a cluster or
    # Spark Connect, which need the process's one SparkContext and stop the
    # shared session (those that still use it first, so that it is not
    # started again).  Modules stay whole, their fixtures made once, except
    # that the run's tests on Spark Connect come after all of those on the
    # standalone cluster (which a Connect session stops): one cluster a run.
    kinds: dict = {}
    for item in items:
        spark = item.get_closest_marker("spark") is not None
        own = spark and item.get_closest_marker("cluster") is not None
        k = kinds.setdefault(getattr(item, "module", None), [False, False, False])
        k[0] |= spark
        k[1] |= own
        k[2] |= own and "spark" in item.fixturenames

    def order(item):
        spark, own, shared = kinds[getattr(item, "module", None)]
        return spark, own, own and not shared, own and "connect_remote" in item.fixturenames

    items.sort(key=order)
    if _compiled is None or os.environ.get("KAFKAPROTO_PURE"):
        skip = pytest.mark.skip(reason="compares compiled and pure: run in the compiled pass")
        for item in items:
            if "compiled_only" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def pure():
    return pure_impl()


@pytest.fixture(scope="session")
def compiled():
    if _compiled is None:
        pytest.skip("compiled core not built")
    return _compiled


@pytest.fixture(scope="session")
def _spark_run():
    yield
    stop_shared_session()


@pytest.fixture(scope="module")
def spark(_spark_run):
    """The run's one local[2] Spark session (tests/support/spark_session.py),
    started on first use; tests that use it are marked ``spark``."""
    return shared_session()


@pytest.fixture(scope="session")
def _standalone_run(tmp_path_factory):
    from support.spark_cluster import stop_standalone, wheel_archive

    folder = tmp_path_factory.mktemp("standalone")
    yield folder, wheel_archive(folder)
    stop_standalone()


@pytest.fixture
def standalone_spark(_standalone_run):
    """The run's one session on a standalone cluster (a master and two
    one-core workers on 127.0.0.1 whose Python lacks kafkaproto: its wheel
    reaches them through ``spark.archives``), started on first use
    (tests/support/spark_cluster.py)."""
    from support.spark_cluster import shared_standalone

    return shared_standalone(*_standalone_run)


@pytest.fixture(scope="session")
def connect_remote(tmp_path_factory):
    """One Spark Connect server (local[2]) for the run's Connect tests, started
    on first use (they run last: tests/support/spark_cluster.py); its
    ``sc://`` address."""
    from support.spark_cluster import Procs, connect_server

    procs = Procs(tmp_path_factory.mktemp("connect-server"))
    try:
        yield connect_server(procs)
    finally:
        procs.stop()


# Real peers, started by the tests themselves (see tools/peers/).
from oracle.conftest_oracle import java_oracle, java_oracle_for, java_oracle_legacy  # noqa: E402,F401
from peers.conftest_peers import (  # noqa: E402,F401
    kafka_broker,
    kafka_broker_factory,
    kafka_cluster,
    kafka_conformance,
    mock_cluster,
    recording_proxy,
    tansu,
    tansu_behind_proxy,
)
