"""Appending produced batches to a log: what a broker does to a Produce
request's records before it stores them (Kafka's ``LogValidator``, in its
in-place cases).

Offsets and the log-append time live in batch headers (v2) or in the
message headers of a legacy set, so they are patched where they are, and
the checksums that cover them are recomputed: records are neither decoded
into objects nor re-encoded.  The one exception is a compressed magic-0
set, whose inner messages carry absolute offsets: it is rebuilt, as Kafka
rebuilds it.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import crc32c as _crc32c

from .._codec_py import _check_int
from ..errors import CorruptRecordError, EncodeError
from ._common import INT64_MAX, INT64_MIN

__all__ = ["AppendedBatch", "assign_offsets"]

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_u32 = struct.Struct(">I")

class AppendedBatch(NamedTuple):
    """One batch as it was stored: what a log's index keeps of it."""

    position: int         # byte offset in the returned blob
    size: int             # its bytes
    base_offset: int
    last_offset: int
    max_timestamp: int    # -1 for magic 0
    producer_id: int      # -1 without one (and for magic 0/1)
    producer_epoch: int
    base_sequence: int


V2_TIMESTAMP_TYPE = 0x08   # batch attributes bit: log-append time
V1_TIMESTAMP_TYPE = 0x08   # message attributes bit (magic 1)


def assign_offsets(blob, base_offset: int, *, log_append_time: int | None = None, check_crc: bool = True,
                   batches: bool = False):
    """Give the batches of a records blob (as a Produce request carries them)
    their log offsets from ``base_offset`` on → ``(new blob, next offset)``.

    ``log_append_time`` (milliseconds): also mark the batches log-append time
    with that timestamp (v2: the batch's max timestamp; magic 1: the
    top-level messages' timestamps), as a topic with
    ``message.timestamp.type=LogAppendTime`` does.  The batches are checked
    first (CRCs, structure: :func:`kafkaproto.records.decode`); a blob that
    ends inside a batch is refused, since a producer sends whole batches.
    A null records field (None) stores nothing: ``(None, base_offset)``.

    ``batches=True`` adds a third item, the :class:`AppendedBatch` list (for
    a log's index: offsets, max timestamps, producer ids and sequences).
    """
    from . import decode, encode

    nxt = _check_int("base offset", base_offset, INT64_MIN, INT64_MAX)
    if log_append_time is not None:
        log_append_time = _check_int("log append time", log_append_time, INT64_MIN, INT64_MAX)
    if blob is None:
        return (None, nxt, []) if batches else (None, nxt)

    out = bytearray(blob)
    mv = memoryview(out)
    pieces = []  # (start, end, replacement) for rebuilt magic-0 wrappers
    for batch in decode(out, check_crc=check_crc):
        if batch.truncated:
            raise CorruptRecordError(f"the blob ends inside a batch ({batch.available} of its bytes are there)",
                                     "record batch", batch.offset)
        at = batch.offset
        _fits(nxt, (_i32.unpack_from(out, at + 23)[0] + 1 if batch.magic == 2 else len(batch.records)), at)
        if batch.magic == 2:
            _i64.pack_into(out, at, nxt)
            nxt += _i32.unpack_from(out, at + 23)[0] + 1  # lastOffsetDelta
            if log_append_time is not None:
                attrs = _i16.unpack_from(out, at + 21)[0] | V2_TIMESTAMP_TYPE
                _i16.pack_into(out, at + 21, attrs)
                _i64.pack_into(out, at + 35, log_append_time)
                _u32.pack_into(out, at + 17, _crc32c.crc32c(mv[at + 21:at + batch.size]))
            continue
        count = len(batch.records)
        if batch.codec and batch.magic == 0:
            # inner offsets are absolute: rebuild the set with its records' new offsets
            recs = [(r.key, r.value) for r in batch.records]
            pieces.append((at, at + batch.size, encode(recs, magic=0, codec=batch.codec, base_offset=nxt)))
            nxt += count
            continue
        # one top-level message: a plain one, or a magic-1 wrapper (inner offsets relative)
        _i64.pack_into(out, at, nxt + count - 1 if batch.codec else nxt)
        nxt += count if batch.codec else 1
        if log_append_time is not None and batch.magic == 1:
            out[at + 17] |= V1_TIMESTAMP_TYPE
            _i64.pack_into(out, at + 18, log_append_time)
            _u32.pack_into(out, at + 12, zlib.crc32(mv[at + 16:at + batch.size]))
    del mv
    if pieces:
        rebuilt, last = bytearray(), 0
        for start, end, data in pieces:
            rebuilt += out[last:start]
            rebuilt += data
            last = end
        rebuilt += out[last:]
        out = rebuilt
    result = bytes(out)
    if not batches:
        return result, nxt
    infos = [AppendedBatch(b.offset, b.size, b.base_offset, b.last_offset,
                           b.max_timestamp if b.magic == 2 else _legacy_max_ts(b), b.producer_id, b.producer_epoch,
                           b.base_sequence)
             for b in decode(result, check_crc=False)]
    return result, nxt, infos


def _fits(first: int, count: int, at: int) -> None:
    """The offsets from ``first`` a batch of ``count`` records (v2: its last offset
    delta + 1) would take must be int64s, as Kafka's are."""
    last = first + max(count, 1) - 1
    if last > INT64_MAX:
        raise EncodeError(f"its records would take offsets {first} to {last}, past the int64 range", "record batch",
                          at)


def _legacy_max_ts(batch) -> int:
    return max((r.timestamp for r in batch.records), default=-1) if batch.magic == 1 else -1
