"""Kafka's log on disk, read without a broker: segments, batches, records as Arrow.

>>> from kafkaproto import log
>>> kl = log.open_log("/var/lib/kafka/data")                  # a log dir, a partition folder, or <log dir>/<topic>
>>> kl = log.open_log("s3://backups/kafka/orders-0")          # any pyarrow filesystem URI
>>> table = kl.read_table(offsets=(1000, 2000))               # seeks with the .index files
>>> reader = kl.read(["offset", "timestamp", "value"], timestamps=(t0, None), isolation="read_committed")
>>> for batch in reader: ...                                  # pyarrow RecordBatches, one per window read
>>> reader.problems                                           # damaged regions met (also rows with ``error``)

Records come in the shape of Spark's Kafka source (``key``, ``value``,
``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType``,
``headers``), then the fields of the batch each came in (``producerId``,
``producerEpoch``, ``sequence``, ``isTransactional``, ``isControl``,
``codec``, ``leaderEpoch``, ``magic``), where it is (``segment``: the
segment's base offset, ``position``: the batch's byte in the segment file)
and ``error`` (:data:`LOG_SCHEMA`).  The batches are walked by the records
walker that decodes Fetch responses (:func:`kafkaproto.arrow.records`).

A damaged segment (cut, a bad CRC, garbage after the last batch, an index
that disagrees with the log) is read as far as it is whole, and the damage
becomes one row per region: nulls, but ``topic``, ``partition``,
``segment``, ``position`` and ``error`` (the file, the byte, what is wrong).
``damage="raise"`` raises :class:`LogDamageError` at the first one instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_WINDOW",
    "LOG_SCHEMA",
    "AbortedTxn",
    "Bounds",
    "Log",
    "LogDamageError",
    "LogProblem",
    "LogReader",
    "OffsetIndex",
    "Partition",
    "ProducerEntry",
    "ReadOptions",
    "Scan",
    "Segment",
    "Snapshot",
    "Task",
    "TimeIndex",
    "Transactions",
    "Window",
    "open_log",
    "read_producer_snapshot",
    "read_txn_index",
]

# Each name, by the module that defines it: loaded on first use, so that ``kafkaproto dump-log``
# (``kafkaproto.log.dump``) starts without pyarrow and numpy.
_WHERE = {
    "DEFAULT_WINDOW": "_segwalk", "LogProblem": "_segwalk",
    "LOG_SCHEMA": "_read", "Bounds": "_read", "Task": "_read",
    "AbortedTxn": "_index", "OffsetIndex": "_index", "ProducerEntry": "_index", "TimeIndex": "_index",
    "read_producer_snapshot": "_index", "read_txn_index": "_index",
    "Partition": "_files", "Segment": "_files", "Snapshot": "_files",
    "Scan": "_scan", "Window": "_scan",
    "Transactions": "_txn",
    "Log": "_log", "LogDamageError": "_log", "LogReader": "_log", "ReadOptions": "_log", "open_log": "_log",
}

if TYPE_CHECKING:
    from ._files import Partition, Segment, Snapshot
    from ._index import AbortedTxn, OffsetIndex, ProducerEntry, TimeIndex, read_producer_snapshot, read_txn_index
    from ._log import Log, LogDamageError, LogReader, ReadOptions, open_log
    from ._read import LOG_SCHEMA, Bounds, Task
    from ._scan import Scan, Window
    from ._segwalk import DEFAULT_WINDOW, LogProblem
    from ._txn import Transactions


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
