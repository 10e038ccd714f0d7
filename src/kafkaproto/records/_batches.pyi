"""Types of kafkaproto.records._batches (_batches.pyx), the compiled record-batch
codec, and of its twin _batches_py (same names).

A v2 batch's ``records`` (and a compressed legacy message's) is a lazy
read-only sequence (``RecordList``, built as it is read) in both the
compiled module and the twin: a ``Sequence[Record]``.
kafkaproto.records wraps these two functions with keyword arguments.
"""

from collections.abc import Iterable, Iterator
from typing import Any

from _typeshed import ReadableBuffer

from kafkaproto.records._common import CallBudget, Codec, RecordBatch, TruncatedBatch
from kafkaproto.records._common import Record as Record

COMPILED: bool

def decode_record_batches(
    blob: ReadableBuffer,
    check_crc: bool = True,
    max_decompressed_size: int = 67108864,
    copy: bool = True,
    max_records_per_batch: int | None = 1000000,
    max_headers_per_record: int | None = 10000,
    max_headers_per_batch: int | None = 1000000,
    max_records_per_call: int | None = 1000000,
    max_headers_per_call: int | None = 1000000,
    max_decompressed_per_call: int | None = 67108864,
    budget: CallBudget | None = None,
) -> Iterator[RecordBatch | TruncatedBatch]:
    """Iterate the batches of a records blob; a partial batch at the end is a TruncatedBatch."""

def encode_record_batch(
    records: Iterable[Any],
    magic: int = 2,
    codec: Codec | int | str | None = 0,
    base_offset: int | None = None,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    timestamp_type: int = 0,
    max_timestamp: int | None = None,
    delete_horizon: bool = False,
    compression_level: int | None = None,
    now: int | None = None,
) -> bytes:
    """Build one batch (``magic=2``) or message set (``magic`` 0/1) → ``bytes``."""
