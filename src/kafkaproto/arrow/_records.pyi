"""Types of kafkaproto.arrow._records (_records.pyx), the compiled records loop
behind kafkaproto.arrow.records, and of its twin _records_py."""

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kafkaproto.arrow._columns import _Column, _Errors
from kafkaproto.records.walk import CallBudget

COMPILED: bool
BATCH_FIELDS: tuple[str, ...]

def arrow_records(
    arr: pa.Array,
    kind: int,
    check_crc: bool,
    max_decompressed_size: int,
    want: Sequence[bool],
    batches: bool = False,
    max_records_per_batch: int | None = 1000000,
    max_headers_per_record: int | None = 10000,
    max_headers_per_batch: int | None = 1000000,
    partial: bool = False,
    control: bool = False,
    max_records_per_call: int | None = 4000000,
    max_headers_per_call: int | None = 4000000,
    max_decompressed_per_call: int | None = 268435456,
    budget: CallBudget | None = None,
) -> tuple[npt.NDArray[np.uint8], _Column, _Errors, dict[str, Any] | None]:
    """Decode every records blob of ``arr`` into the Spark-shaped columns.

    ``want``: 7 flags (key, value, offset, timestamp, timestampType, headers,
    row) telling which columns to fill; the tree's children are those columns.
    ``batches``: also return the batches walked, as columns (BATCH_FIELDS:
    row, position, magic, codec, bytes, records, truncated and the header
    fields) plus ``error`` (batch row -> text), else None.  ``partial``: a
    blob stops at its first bad batch, keeping the records before it, and
    that batch carries the error.  ``control``: control records are rows too.  A batch past
    ``max_records_per_batch`` or ``max_headers_per_batch``, or a record past
    ``max_headers_per_record``, is its blob's error; so is the blob whose
    batches bring the call's past a ``max_*_per_call`` cap (counted across
    rows: ``budget``, shared with other calls).
    """

def records_table(
    blobs: Any,
    topic: Any = None,
    partition: Any = None,
    columns: Iterable[str] | None = None,
    check_crc: bool = True,
    max_decompressed_size: int = 67108864,
    batches: bool = False,
    max_records_per_batch: int | None = 1000000,
    max_headers_per_record: int | None = 10000,
    max_headers_per_batch: int | None = 1000000,
    control: bool = False,
    partial: bool = False,
    max_records_per_call: int | None = 4000000,
    max_headers_per_call: int | None = 4000000,
    max_decompressed_per_call: int | None = 268435456,
) -> pa.Table | tuple[pa.Table, pa.Table]:
    """kafkaproto.arrow.records: the table (with ``batches``, the records and the
    batches tables) of a column of records blobs, one walk of every chunk (the
    compiled module hands the columns to pyarrow through the Arrow C data
    interface; the twin builds them with pa.Array.from_buffers)."""
