import os

import pytest

import kafkaproto
from support.twins import compiled_impl, pure_impl

_compiled = compiled_impl()


def pytest_configure(config):
    config.addinivalue_line("markers", "compiled_only: compares the compiled core with its twin")
    config.addinivalue_line("markers", "slow: builds wheels or starts external programs")
    if os.environ.get("KAFKAPROTO_EXPECT_COMPILED") == "1" and not kafkaproto.COMPILED:
        raise pytest.UsageError("KAFKAPROTO_EXPECT_COMPILED=1 but the compiled core (kafkaproto._codec) did not load")


def pytest_report_header(config):
    impl = "compiled (kafkaproto._codec)" if kafkaproto.COMPILED else "pure-Python twin (kafkaproto._codec_py)"
    return f"kafkaproto implementation: {impl}"


def pytest_collection_modifyitems(config, items):
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
