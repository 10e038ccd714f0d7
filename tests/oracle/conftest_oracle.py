"""pytest fixture for the Java (Apache Kafka) test oracle.

Import it into a conftest.py to make it available:

    from tests.oracle.conftest_oracle import java_oracle  # noqa: F401

The fixture is session-scoped and all its users share one JVM.  When the
oracle cannot be built or started (no Java, no PyPI access on a fresh
machine) the tests that use it are skipped, unless the environment variable
KAFKAPROTO_REQUIRE_ORACLE is set to a non-empty value other than "0", in which
case they fail.
"""

from __future__ import annotations

import os

import pytest

from .java_oracle import JavaOracle, OracleUnavailable, shared_oracle


def _oracle_required() -> bool:
    return os.environ.get("KAFKAPROTO_REQUIRE_ORACLE", "") not in ("", "0")


@pytest.fixture(scope="session")
def java_oracle() -> JavaOracle:
    try:
        oracle = shared_oracle()
    except OracleUnavailable as e:
        if _oracle_required():
            pytest.fail(f"Java oracle unavailable: {e}", pytrace=False)
        pytest.skip(f"Java oracle unavailable: {e}")
    return oracle
