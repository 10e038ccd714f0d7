"""pytest fixture for the Java (Apache Kafka) test oracle.

Import them into a conftest.py to make them available:

    from tests.oracle.conftest_oracle import java_oracle, java_oracle_for, java_oracle_legacy  # noqa: F401

``java_oracle`` runs on kafka-clients 4.4.0, ``java_oracle_legacy`` on 3.9.1
(for the (message, version)s Kafka 4.0 removed); ``java_oracle_for(api_key,
version)`` is whichever of the two knows that version.
Both are session-scoped; all users of one share its JVM.  When an oracle
cannot be built or started (no Java, no Maven Central on a fresh machine) the
tests that use it are skipped, unless the environment variable
KAFKAPROTO_REQUIRE_ORACLE is set to a non-empty value other than "0", in which
case they fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from .java_oracle import KAFKA, LEGACY_KAFKA, JavaOracle, OracleUnavailable, shared_oracle


def _oracle_required() -> bool:
    return os.environ.get("KAFKAPROTO_REQUIRE_ORACLE", "") not in ("", "0")


def get_oracle(kafka_version: str) -> JavaOracle:
    """The session's oracle on that kafka-clients release (for fixtures
    parametrized over releases); fails or skips as the fixtures do."""
    try:
        return shared_oracle(kafka_version)
    except OracleUnavailable as e:
        if _oracle_required():
            pytest.fail(f"Java oracle (kafka-clients {kafka_version}) unavailable: {e}", pytrace=False)
        pytest.skip(f"Java oracle (kafka-clients {kafka_version}) unavailable: {e}")


@pytest.fixture(scope="session")
def java_oracle() -> JavaOracle:
    """The oracle on kafka-clients 4.4.0."""
    return get_oracle(KAFKA)


@pytest.fixture(scope="session")
def java_oracle_legacy() -> JavaOracle:
    """The oracle on kafka-clients 3.9.1, for what Kafka 4.0 removed."""
    return get_oracle(LEGACY_KAFKA)


@pytest.fixture(scope="session")
def java_oracle_for() -> Callable[[int, int], JavaOracle]:
    """``java_oracle_for(api_key, version)``: the oracle on 3.9.1 for a version
    Kafka 4.0 removed (the registry's ``removed_in_kafka4``), on 4.4.0 otherwise;
    each started on first use."""
    from kafkaproto.capture.tools.dissect import removed_in_kafka4

    def pick(api_key: int, version: int) -> JavaOracle:
        return get_oracle(LEGACY_KAFKA if removed_in_kafka4(api_key, version) else KAFKA)

    return pick
