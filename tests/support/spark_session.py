"""The one local[2] Spark session of a test run, shared by every test that
needs a classic local session (the ``spark`` fixture in tests/conftest.py).

Starting a session costs a JVM and several seconds of CPU; a run used to
start one per module.  Its configuration is the union of what those modules
asked for: the report job's settings (:func:`kafkaproto.report.job.session`)
on two cores, 1 GB for the driver, two shuffle partitions, warnings and
worse in the log.

A test that needs a SparkContext of another kind (a standalone master, Spark
Connect: one context per process) calls :func:`stop_shared_session` first;
the next module that asks for the ``spark`` fixture gets a new one.  Tests
that change the session's state (its SQL conf, temporary views, cached
tables) put it back before they finish.
"""

from __future__ import annotations

import contextlib

MASTER = "local[2]"
CONF = {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2"}

_session = None


def _alive(session) -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is session.sparkContext


def shared_session():
    """The live shared session, started on first use (or after a stop)."""
    global _session
    if _session is None or not _alive(_session):
        from kafkaproto.report.job import session

        _session = session(MASTER, CONF)
        _session.sparkContext.setLogLevel("ERROR")
    return _session


@contextlib.contextmanager
def conf_kept(spark, *keys: str):
    """The session's SQL settings ``keys`` as they were before the block, after it."""
    saved = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield spark
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def stop_shared_session() -> None:
    """Stop the shared session (if started): for a test that needs the process's
    one SparkContext for a session of another kind."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None
