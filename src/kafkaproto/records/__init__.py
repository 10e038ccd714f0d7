"""Record batches: RecordBatch v2 and legacy message sets v0/v1, every codec.

One entry point each way::

    for batch in records.decode(fetch_partition.records):
        for r in batch.records:
            r.offset, r.timestamp, r.key, r.value, r.headers

    blob = records.encode([(b"k", b"v", [("h", b"1")], 1700000000000)], codec="zstd")

:func:`decode` yields :class:`RecordBatch` objects, and a final
:class:`TruncatedBatch` when the blob ends inside a batch (normal at the end
of a Fetch partition: ``batch.truncated`` tells, and its ``records`` is
empty).  Anything else malformed raises a
:class:`~kafkaproto.errors.KafkaProtocolError` subclass (mostly
:class:`~kafkaproto.errors.CorruptRecordError`) naming the byte offset.

Keys and values are ``bytes`` by default.  With ``copy=False`` they are
memoryviews over the input (uncompressed batches) or over the batch's
decompressed buffer: no copy, but each view keeps that whole buffer alive,
and for small values a memoryview costs more to create than a ``bytes``
copy, which is why copying is the default.

A batch's records (a compressed legacy message's too) are checked when it is
decoded and built as they are read (both implementations), so a loop that
drops each record holds one at a time.  What a batch may expand to is
capped: ``max_decompressed_size`` bytes, ``max_records_per_batch`` records,
``max_headers_per_record`` headers a record and ``max_headers_per_batch``
headers in all; and what one call may, across its batches:
``max_records_per_call``, ``max_headers_per_call`` and
``max_decompressed_per_call`` (:class:`~kafkaproto.errors.RecordLimitError`
beyond).

The compiled implementation (``kafkaproto.records._batches``) is used when it
is built; ``KAFKAPROTO_PURE=1`` selects the pure-Python twin (``_batches_py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .._impl import COMPILED, load
from .._limits import (
    DEFAULT_MAX_DECOMPRESSED_PER_CALL,
    DEFAULT_MAX_HEADERS_PER_BATCH,
    DEFAULT_MAX_HEADERS_PER_CALL,
    DEFAULT_MAX_HEADERS_PER_RECORD,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    DEFAULT_MAX_RECORDS_PER_CALL,
)
from ._common import (
    Codec,
    ControlRecord,
    ControlType,
    RecordBatch,
    TimestampType,
    TruncatedBatch,
    control_key_value,
)
from ._compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_SIZE
from ._log import AppendedBatch, assign_offsets

if TYPE_CHECKING:  # type checkers read the compiled module's stub (_batches.pyi), which the twin matches
    from . import _batches as _impl
else:
    _impl = load("records._batches")

#: One record (the implementation's class: compiled or pure).
Record = _impl.Record

__all__ = [
    "COMPILED",
    "CODEC_NAMES",
    "Codec",
    "ControlRecord",
    "ControlType",
    "DEFAULT_MAX_DECOMPRESSED_PER_CALL",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_HEADERS_PER_BATCH",
    "DEFAULT_MAX_HEADERS_PER_CALL",
    "DEFAULT_MAX_HEADERS_PER_RECORD",
    "DEFAULT_MAX_RECORDS_PER_BATCH",
    "DEFAULT_MAX_RECORDS_PER_CALL",
    "Record",
    "AppendedBatch",
    "assign_offsets",
    "RecordBatch",
    "TimestampType",
    "TruncatedBatch",
    "control_record",
    "decode",
    "encode",
]


def decode(blob, *, check_crc=True, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, copy=True,
           max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
           max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
           max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH,
           max_records_per_call=DEFAULT_MAX_RECORDS_PER_CALL,
           max_headers_per_call=DEFAULT_MAX_HEADERS_PER_CALL,
           max_decompressed_per_call=DEFAULT_MAX_DECOMPRESSED_PER_CALL) -> Iterator[RecordBatch | TruncatedBatch]:
    """Iterate the batches of a records blob (any bytes-like object).

    Args:
        blob: a Produce/Fetch ``records`` field, a log segment, any run of batches.
        check_crc: verify each batch's CRC32C (v2) or each message's CRC-32 (v0/v1).
        max_decompressed_size: a batch that would decompress to more bytes
            raises CorruptRecordError (a guard against decompression bombs).
        copy: ``False`` gives memoryviews instead of ``bytes`` (see the module doc).
        max_records_per_batch: a v2 batch declaring more records (checked
            before it is decompressed), or a compressed legacy message holding
            more inner messages, raises :class:`~kafkaproto.errors.RecordLimitError`.
        max_headers_per_record: a record declaring more headers raises
            RecordLimitError before any of them is built.
        max_headers_per_batch: a record bringing the headers of its batch's
            records (a running total) above it raises RecordLimitError before
            any of its headers is built.
        max_records_per_call, max_headers_per_call, max_decompressed_per_call:
            the same counted across every batch this call yields (records
            before a batch is decompressed, headers before a record's are
            built, decompressed bytes as they come): a blob of many batches,
            each within the caps above, raises RecordLimitError once they
            pass these.  ``None`` lifts a cap (to iterate a log segment of any
            size one batch at a time, say).

    Yields:
        RecordBatch for each batch (each legacy top-level message is one),
        then a TruncatedBatch if the blob ends inside one.
    """
    return _impl.decode_record_batches(blob, check_crc, max_decompressed_size, copy, max_records_per_batch,
                                       max_headers_per_record, max_headers_per_batch, max_records_per_call,
                                       max_headers_per_call, max_decompressed_per_call)


def encode(records, *, magic=2, codec="none", base_offset=None, partition_leader_epoch=-1, producer_id=-1,
           producer_epoch=-1, base_sequence=-1, transactional=False, control=False, timestamp_type=0,
           max_timestamp=None, delete_horizon=False, compression_level=None, now=None) -> bytes:
    """Build one batch (magic 2) or one message set (magic 0/1) → ``bytes``.

    Args:
        records: :class:`Record` objects (or anything with ``key``, ``value``,
            ``headers``, ``timestamp``, ``offset``) or tuples
            ``(key, value[, headers[, timestamp]])``.  Keys and values are
            bytes-like or ``None``; headers ``(str, bytes | None)`` pairs.
            A ``None`` timestamp means ``now``; a ``None`` offset means the
            previous record's plus one.
        codec: ``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"``, or a :class:`Codec`.
        base_offset: defaults to the first record's offset, else 0.
        producer_id, producer_epoch, base_sequence: v2 header fields.
        partition_leader_epoch, transactional, control, delete_horizon: v2 header fields.
        timestamp_type: 0 create time, 1 log-append time.
        max_timestamp: defaults to the largest record timestamp (give the
            log-append time here for ``timestamp_type=1``).
        now: milliseconds used for records without a timestamp (default: the clock).

    As Kafka's producer does, the base timestamp is the first record's
    timestamp, record attributes are 0, and a legacy compressed set is one
    wrapper message whose offset is the last inner offset.
    """
    return _impl.encode_record_batch(records, magic, codec, base_offset, partition_leader_epoch, producer_id,
                                     producer_epoch, base_sequence, transactional, control, timestamp_type,
                                     max_timestamp, delete_horizon, compression_level, now)


def control_record(type, coordinator_epoch=0, timestamp=None, version=0):
    """A record for a control batch: ``encode([control_record(ControlType.COMMIT, 3)], control=True, ...)``."""
    key, value = control_key_value(type, coordinator_epoch, version)
    return (key, value, None, timestamp)
