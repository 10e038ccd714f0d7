"""kafkaproto's Spark data sources, registered in one call:

>>> from kafkaproto import sources
>>> sources.register(spark)            # once per session
>>> spark.read.format("kafkaproto.capture").option("table", "responses").load("traffic.pcap")
>>> spark.read.format("kafkaproto.log").load("/var/lib/kafka/data")

``kafkaproto.capture`` reads captured traffic (:mod:`kafkaproto.capture.spark`),
``kafkaproto.log`` Kafka's log on disk (:mod:`kafkaproto.log.spark`); each
lives beside its dataset and reads Spark's filters the same way
(:func:`kafkaproto.filters.spark_term`).
"""

from __future__ import annotations

from .capture import spark as _capture
from .capture.spark import KafkaCaptureDataSource, spark_schema
from .log import spark as _log

__all__ = ["KafkaCaptureDataSource", "register", "spark_schema"]


def register(spark, *, pushdown: bool = True) -> None:
    """Register ``kafkaproto.capture`` and ``kafkaproto.log`` with a session
    (classic or Spark Connect).

    Spark hands filters to a Python data source only with
    ``spark.sql.python.filterPushdown.enabled``; ``pushdown=True`` turns it
    on for the session (a reader that takes filters fails when it is off).
    ``pushdown=False`` registers readers that take none: Spark filters what
    they give."""
    _log.register(spark, pushdown=pushdown)
    _capture.register(spark, pushdown=pushdown)
