"""Pure-Python twin of the compiled records loop (``_records.pyx``): blobs are
decoded with the record decoder, each record written into the same columns as
it is read."""

from __future__ import annotations

import struct
import sys

import numpy as np

from .. import _kinds as K
from .._limits import (
    DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL,
    DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
    DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
    DEFAULT_MAX_HEADERS_PER_BATCH,
    DEFAULT_MAX_HEADERS_PER_RECORD,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    call_caps,
    record_caps,
)
from ..errors import KafkaProtocolError
from ..records import DEFAULT_MAX_DECOMPRESSED_SIZE, RecordBatch
from ..records.walk import CallBudget, decode_record_batches
from ._columns_py import Col, rows

COMPILED = False

_US_LIMIT = 9223372036854775


def _records_cols(want):
    """key, value, offset, timestamp, timestampType, headers, row (None where not asked for)."""
    make = [
        lambda: Col("var", K.BYTES), lambda: Col("var", K.BYTES), lambda: Col("fixed", K.INT64),
        lambda: Col("fixed", K.INT64), lambda: Col("fixed", K.INT32),
        lambda: Col("list", kids=[Col("struct", kids=[Col("var", K.STRING), Col("var", K.BYTES)])]),
        lambda: Col("fixed", K.INT64),
    ]
    return [m() if w else None for m, w in zip(make, want)]


def _put_record(cols, rec, row):
    key, value, offset, ts, ts_type, headers, rows = cols
    for col, blob in ((key, rec.key), (value, rec.value)):
        if col is not None:
            col.null() if blob is None else col.put(bytes(blob))
    if offset is not None:
        offset.put(rec.offset)
    if ts is not None:
        ts.put(rec.timestamp * 1000) if -_US_LIMIT <= rec.timestamp <= _US_LIMIT else ts.null()
    if ts_type is not None:
        ts_type.put(rec.timestamp_type)
    if headers is not None:
        if not rec.headers:
            headers.null()
        else:
            pairs = headers.kids[0]
            for k, v in rec.headers:
                pairs.kids[0].put(k.encode("utf-8"))
                pairs.kids[1].null() if v is None else pairs.kids[1].put(bytes(v))
                pairs.valid.append(1)
            headers.valid.append(1)
            headers.offs.append(len(pairs.valid))
    rows.put(row)


BATCH_FIELDS = ("row", "position", "magic", "codec", "bytes", "records", "truncated", "base_offset", "last_offset",
                "count", "leader_epoch", "crc", "attributes", "base_timestamp", "max_timestamp", "producer_id",
                "producer_epoch", "base_sequence", "control_type", "coordinator_epoch")
_BATCH_TYPES = (np.int64, np.int64, np.int8, np.int8, np.int64, np.int64, np.bool_, np.int64, np.int64, np.int32,
                np.int32, np.int64, np.int16, np.int64, np.int64, np.int64, np.int16, np.int32, np.int16, np.int64)
_B_RECORDS = BATCH_FIELDS.index("records")
_i64 = struct.Struct(">q")
_i32 = struct.Struct(">i")


def _batch_row(i, b, kept):
    """A whole batch's row (BATCH_FIELDS)."""
    ctl_type = ctl_epoch = -1
    if b.magic >= 2 and b.is_control and b.records:
        marker = b.records[0].control
        ctl_type = int(marker.type)
        ctl_epoch = -1 if marker.coordinator_epoch is None else marker.coordinator_epoch
    return (i, b.offset, b.magic, b.attributes & 0x07, b.size, kept, False, b.base_offset, b.last_offset,
            b.record_count, b.partition_leader_epoch, b.crc, b.attributes, b.base_timestamp, b.max_timestamp,
            b.producer_id, b.producer_epoch, b.base_sequence, ctl_type, ctl_epoch)


def _failed_row(i, blob, pos, whole):
    """The row of the batch a partial walk stopped at: what its header says, as far as it was read."""
    mv = memoryview(blob)
    n = len(mv)
    row = [i, pos] + [-1] * (len(BATCH_FIELDS) - 2)
    row[_B_RECORDS] = 0
    row[6] = False
    if n - pos >= 8:
        row[7] = _i64.unpack_from(mv, pos)[0]
    if n - pos >= 12:
        size = _i32.unpack_from(mv, pos + 8)[0]
        if whole or 14 <= size <= n - pos - 12:
            row[4] = 12 + size
    if n - pos >= 17:
        row[2] = struct.unpack_from(">b", mv, pos + 16)[0]
    if whole is not None and whole.magic == 2:
        h = whole
        row[3] = h.attributes & 0x07
        # -1 (not known) past int64: the batch's error row says so, never a wrapped offset
        last = h.last_offset if -(1 << 63) <= h.last_offset < (1 << 63) else -1
        row[8:18] = [last, h.record_count, h.partition_leader_epoch, h.crc, h.attributes, h.base_timestamp,
                     h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence]
    return tuple(row)


def _truncate(col, n):
    """Cut a column (and its children) back to its first ``n`` rows."""
    del col.valid[n:]
    if col.what in ("fixed", "var"):
        del col.values[n:]
    if col.what in ("var", "list"):
        m = col.offs[n]
        del col.offs[n + 1:]
        if col.what == "list":
            for kid in col.kids:
                _truncate(kid, m)
    elif col.what == "struct":
        for kid in col.kids:
            _truncate(kid, n)


def _v2_header(mv, pos):
    """The header of the v2 batch at ``pos`` (whole: its size is in range) as a RecordBatch without records,
    for the row of a batch that fails after its header was read; None if it is not one."""
    n = len(mv)
    if n - pos < 61 or mv[pos + 16] != 2:
        return None
    size = _i32.unpack_from(mv, pos + 8)[0]
    if size < 49 or size > n - pos - 12:
        return None
    (ple, _magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
     count) = struct.unpack_from(">ibIhiqqqhii", mv, pos + 12)
    return RecordBatch(pos, _i64.unpack_from(mv, pos)[0], size, ple, 2, crc, attrs, lod, base_ts, max_ts, pid, pepoch,
                       bseq, count, ())


def arrow_records(arr, kind, check_crc, max_decompressed_size, want, batches=False,
                  max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                  max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                  max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH, partial=False, control=False,
                  max_records_per_call=DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
                  max_headers_per_call=DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
                  max_decompressed_per_call=DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL, budget=None):
    max_records, max_headers, max_batch_headers = record_caps(max_records_per_batch, max_headers_per_record,
                                                              max_headers_per_batch)
    if partial and not batches:
        raise ValueError("a partial walk reports its failures among the batches: pass batches=True")
    # the per-call caps count across every row; a row that fails gives its share back
    if budget is None:
        budget = CallBudget(*call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call))
    cols = _records_cols(want)
    present = [c for c in cols if c is not None]
    root = Col("struct", kids=present)
    blobs = rows(arr)
    status = np.zeros(len(blobs), dtype=np.uint8)
    errors = {}
    walked = []  # one BATCH_FIELDS tuple per batch
    failed = {}  # partial walks: batch row -> error
    for i, blob in enumerate(blobs):
        first = len(walked)
        mark = blob_mark = len(root.valid)
        taken = blob_taken = budget.mark()
        if blob is None:
            if partial:
                walked.append((i, 0) + (-1,) * 3 + (0, False) + (-1,) * 13)
                failed[len(walked) - 1] = "null records blob"
            else:
                errors[i] = "null records blob"
        else:
            # records go into the columns as they are read (one at a time); a
            # blob that fails is cut back out (partial: back to the failing batch)
            pos = 0
            try:
                for b in decode_record_batches(blob, check_crc, max_decompressed_size, True,
                                                            max_records, max_headers, max_batch_headers,
                                                            budget=budget):
                    if b.truncated:
                        walked.append((i, b.offset, -1, -1, b.available, 0, True,
                                       -1 if b.base_offset is None else b.base_offset) + (-1,) * 12)
                        continue
                    kept = 0
                    for rec in b.records:
                        if rec.control is None or control:
                            _put_record(cols, rec, i)
                            root.valid.append(1)
                            kept += 1
                    walked.append(_batch_row(i, b, kept))
                    pos = b.offset + b.size
                    mark = len(root.valid)
                    taken = budget.mark()
            except KafkaProtocolError as exc:
                if not partial:
                    errors[i] = str(exc)
                    budget.reset(blob_taken)
                    _truncate(root, blob_mark)
                    # the blob's records are left out: its batches gave none
                    walked[first:] = [w[:5] + (0,) + w[6:] for w in walked[first:]]
                else:
                    budget.reset(taken)
                    _truncate(root, mark)
                    walked.append(_failed_row(i, blob, pos, _v2_header(memoryview(blob), pos)))
                    failed[len(walked) - 1] = str(exc)
        if i in errors:
            status[i] = 1
            for c in present:
                c.null()
            cols[6].values[-1] = i
            cols[6].valid[-1] = 1
            root.valid.append(1)
    out = None
    if batches:
        out = {name: np.array([w[k] for w in walked], dtype=typ)
               for k, (name, typ) in enumerate(zip(BATCH_FIELDS, _BATCH_TYPES))}
        out["error"] = failed
    return status, root.export(), errors, out


def records_table(blobs, topic=None, partition=None, columns=None, check_crc=True,
                  max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, batches=False,
                  max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                  max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                  max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH, control=False, partial=False,
                  max_records_per_call=DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
                  max_headers_per_call=DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
                  max_decompressed_per_call=DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL):
    """kafkaproto.arrow.records: the table (with ``batches``, the records and batches
    tables) of a column of records blobs, every chunk walked by arrow_records."""
    from . import _build

    return _build.records_tables(sys.modules[__name__], blobs, topic, partition, columns, check_crc,
                                 max_decompressed_size, batches, max_records_per_batch, max_headers_per_record,
                                 max_headers_per_batch, control, partial, max_records_per_call, max_headers_per_call,
                                 max_decompressed_per_call)
