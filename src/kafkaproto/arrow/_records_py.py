"""Pure-Python twin of the compiled records loop (``_records.pyx``): blobs are
decoded with the twin's record decoder, then written into the same columns."""

from __future__ import annotations

import numpy as np

from .. import _kinds as K
from ..errors import KafkaProtocolError
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


def arrow_records(arr, kind, check_crc, max_decompressed_size, want, batches=False):
    from ..records import decode

    cols = _records_cols(want)
    present = [c for c in cols if c is not None]
    root = Col("struct", kids=present)
    blobs = rows(arr)
    status = np.zeros(len(blobs), dtype=np.uint8)
    errors = {}
    walked = []  # (row, position, magic, codec, bytes, records, truncated) per batch
    for i, blob in enumerate(blobs):
        recs = None
        first = len(walked)
        if blob is None:
            errors[i] = "null records blob"
        else:
            recs = []
            try:
                for b in decode(blob, check_crc=check_crc, max_decompressed_size=max_decompressed_size):
                    if b.truncated:
                        walked.append((i, b.offset, -1, -1, b.available, 0, True))
                        continue
                    kept = [r for r in b.records if r.control is None]
                    walked.append((i, b.offset, b.magic, b.attributes & 0x07, b.size, len(kept), False))
                    recs += kept
            except KafkaProtocolError as exc:
                errors[i] = str(exc)
                recs = None
                # the blob's records are left out: its batches gave none
                walked[first:] = [w[:5] + (0,) + w[6:] for w in walked[first:]]
        if recs is None:
            status[i] = 1
            for c in present:
                c.null()
            cols[6].values[-1] = i
            cols[6].valid[-1] = 1
            root.valid.append(1)
            continue
        for rec in recs:
            _put_record(cols, rec, i)
            root.valid.append(1)
    out = None
    if batches:
        out = {name: np.array([w[k] for w in walked], dtype=typ)
               for k, (name, typ) in enumerate(zip(_BATCH_FIELDS, _BATCH_TYPES))}
    return status, root.export(), errors, out
