"""What a decoder built on the records' walker needs from the records layer.

The record-batch walker (``records/_walk.pxi``) is compiled into each module
that walks batches its own way (``records._batches`` for
:func:`kafkaproto.records.decode`, the Arrow decoder, the log's text walker);
this module holds, under public names, what such a module reads from the
records layer at run time: the per-call budget, the error texts (so every
walker fails with the same words) and decompression.  :func:`decode_record_batches`
is the active implementation's walk, as :func:`kafkaproto.records.decode`
runs it, for a twin that walks with the object decoder.
"""

from __future__ import annotations

from . import _impl
from ._common import (
    CallBudget,
    RecordBatch,
    batch_error,
    batch_limit_error,
    crc_error,
    legacy_failure,
    legacy_records_error,
    past_int64,
    record_failure,
)
from ._compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress

#: The active implementation's batch walk (compiled or twin), one batch at a time.
decode_record_batches = _impl.decode_record_batches

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "CallBudget",
    "RecordBatch",
    "batch_error",
    "batch_limit_error",
    "crc_error",
    "decode_record_batches",
    "decompress",
    "legacy_failure",
    "legacy_records_error",
    "past_int64",
    "record_failure",
]
