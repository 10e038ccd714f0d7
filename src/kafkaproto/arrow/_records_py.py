"""Pure-Python twin of the compiled records loop (``_records.pyx``): blobs are
decoded with the record decoder, each record written into the same columns as
it is read."""

from __future__ import annotations

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
from ..records._common import CallBudget
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


_BATCH_FIELDS = ("row", "position", "magic", "codec", "bytes", "records", "truncated")
_BATCH_TYPES = (np.int64, np.int64, np.int8, np.int8, np.int64, np.int64, np.bool_)


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


def arrow_records(arr, kind, check_crc, max_decompressed_size, want, batches=False,
                  max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                  max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                  max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH,
                  max_records_per_call=DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
                  max_headers_per_call=DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
                  max_decompressed_per_call=DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL, budget=None):
    from ..records import _impl as records_impl

    max_records, max_headers, max_batch_headers = record_caps(max_records_per_batch, max_headers_per_record,
                                                              max_headers_per_batch)
    # the per-call caps count across every row; a row that fails gives its share back
    if budget is None:
        budget = CallBudget(*call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call))
    cols = _records_cols(want)
    present = [c for c in cols if c is not None]
    root = Col("struct", kids=present)
    blobs = rows(arr)
    status = np.zeros(len(blobs), dtype=np.uint8)
    errors = {}
    walked = []  # (row, position, magic, codec, bytes, records, truncated) per batch
    for i, blob in enumerate(blobs):
        first = len(walked)
        mark = len(root.valid)
        taken = budget.mark()
        if blob is None:
            errors[i] = "null records blob"
        else:
            # records go into the columns as they are read (one at a time); a
            # blob that fails is cut back out
            try:
                for b in records_impl.decode_record_batches(blob, check_crc, max_decompressed_size, True,
                                                            max_records, max_headers, max_batch_headers,
                                                            budget=budget):
                    if b.truncated:
                        walked.append((i, b.offset, -1, -1, b.available, 0, True))
                        continue
                    kept = 0
                    for rec in b.records:
                        if rec.control is None:
                            _put_record(cols, rec, i)
                            root.valid.append(1)
                            kept += 1
                    walked.append((i, b.offset, b.magic, b.attributes & 0x07, b.size, kept, False))
            except KafkaProtocolError as exc:
                errors[i] = str(exc)
                budget.reset(taken)
                _truncate(root, mark)
                # the blob's records are left out: its batches gave none
                walked[first:] = [w[:5] + (0,) + w[6:] for w in walked[first:]]
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
               for k, (name, typ) in enumerate(zip(_BATCH_FIELDS, _BATCH_TYPES))}
    return status, root.export(), errors, out
