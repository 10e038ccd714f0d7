"""Pure-Python twin of the compiled record-batch code (``_records.pxi``).

Same names, same results, same errors (class, message, offset): the compiled
module is tested against this one.  As there, a v2 batch's records are all
checked when the batch is decoded and built one at a time as they are read.
"""

from __future__ import annotations

import re
import struct
import time

import crc32c as _crc32c

from .._codec_py import _check_int, uvarint_status
from .._limits import (
    DEFAULT_MAX_DECOMPRESSED_PER_CALL,
    DEFAULT_MAX_HEADERS_PER_CALL,
    DEFAULT_MAX_RECORDS_PER_CALL,
    call_caps,
    record_caps,
)
from ..errors import EncodeError
from . import _compression
from ._common import (
    ATTR_CODEC,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    DEFAULT_MAX_HEADERS_PER_BATCH,
    DEFAULT_MAX_HEADERS_PER_RECORD,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    INT64_MAX,
    INT64_MIN,
    LOG_OVERHEAD,
    MAGIC_AT,
    MIN_SIZE,
    V2_CRC_FROM,
    V2_HEADER,
    V2_HEADER_STRUCT,
    V2_MIN_SIZE,
    VARINT_PROBLEMS,
    CallBudget,
    LazyRecords,
    Record,
    RecordBatch,
    TruncatedBatch,
    as_blob,
    batch_error,
    batch_headers_error,
    batch_limit_error,
    codec_number,
    control_record,
    crc_error,
    header_limit_error,
    header_pair,
    past_int64,
    record_error,
    unpack_record,
    wrap64,
)
from ._legacy import decode_legacy, encode_legacy

COMPILED = False

_head = struct.Struct(">qi")
_i64 = struct.Struct(">q")
_crc_at = struct.Struct(">I")


# ---------------------------------------------------------------------------
# decode


def decode_record_batches(blob, check_crc=True, max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, copy=True,
                          max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                          max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                          max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH,
                          max_records_per_call=DEFAULT_MAX_RECORDS_PER_CALL,
                          max_headers_per_call=DEFAULT_MAX_HEADERS_PER_CALL,
                          max_decompressed_per_call=DEFAULT_MAX_DECOMPRESSED_PER_CALL, budget=None):
    """Iterate the batches of a records blob (a Produce/Fetch ``records`` field, a log segment).

    Yields :class:`RecordBatch` objects; a partial batch at the end is yielded
    as a :class:`TruncatedBatch` (Kafka allows it in Fetch responses).  Any
    other malformation raises a :class:`~kafkaproto.errors.KafkaProtocolError`
    subclass with its byte offset; a batch past ``max_records_per_batch`` or
    ``max_headers_per_batch``, a record past ``max_headers_per_record``, or
    the batches together past a ``max_*_per_call`` cap, raise
    RecordLimitError.  ``copy=False`` makes keys and values memoryviews over
    the blob (uncompressed) or over the decompressed buffer.  ``budget``: a
    CallBudget shared with other blobs (the per-call caps are then its own).
    """
    caps = record_caps(max_records_per_batch, max_headers_per_record, max_headers_per_batch)
    if budget is None:
        budget = CallBudget(*call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call))
    if copy and type(blob) is not bytes:
        # Batches are read as the caller iterates: snapshot a buffer it may reuse.
        blob = bytes(blob)
    mv = memoryview(blob)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return _batches(mv, check_crc, max_decompressed_size, copy, *caps, budget)


def _batches(mv, check_crc, max_decompressed_size, copy, max_records, max_headers, max_batch_headers, budget):
    n = len(mv)
    pos = 0
    while pos < n:
        left = n - pos
        if left < LOG_OVERHEAD:
            base = _i64.unpack_from(mv, pos)[0] if left >= 8 else None
            yield TruncatedBatch(pos, left, None, base)
            return
        base_offset, size = _head.unpack_from(mv, pos)
        if size < MIN_SIZE:
            raise batch_error(f"size {size} below the minimum of {MIN_SIZE}", pos + 8)
        if size > left - LOG_OVERHEAD:
            yield TruncatedBatch(pos, left, size + LOG_OVERHEAD, base_offset)
            return
        magic = mv[pos + MAGIC_AT]
        if magic == 2:
            yield _decode_v2(mv, pos, size, check_crc, max_decompressed_size, copy, max_records, max_headers,
                             max_batch_headers, budget)
        elif magic < 2:
            yield decode_legacy(mv, pos, size, magic, check_crc, max_decompressed_size, copy, Record, max_records,
                                budget)
        else:
            raise batch_error(f"unknown magic {magic if magic < 128 else magic - 256}", pos + MAGIC_AT)
        pos += size + LOG_OVERHEAD


def _decode_v2(mv, pos, size, check_crc, limit, copy, max_records, max_headers, max_batch_headers, budget):
    if size < V2_MIN_SIZE:
        raise batch_error(f"size {size} below the v2 minimum of {V2_MIN_SIZE}", pos + 8)
    end = pos + LOG_OVERHEAD + size
    (base_offset, length, ple, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
     count) = V2_HEADER_STRUCT.unpack_from(mv, pos)
    if check_crc:
        computed = _crc32c.crc32c(mv[pos + V2_CRC_FROM : end])
        if computed != crc:
            raise crc_error("CRC32C", crc, computed, pos + 17)
    codec = attrs & ATTR_CODEC
    if codec > 4:
        raise batch_error(f"unknown compression codec {codec}", pos + V2_CRC_FROM)
    if not INT64_MIN <= base_offset + lod <= INT64_MAX:
        raise batch_error(past_int64("last offset delta", lod, base_offset), pos + 23)
    if count < 0:
        raise batch_error(f"invalid record count {count}", pos + 57)
    if count > max_records:
        # before decompressing: the declared count bounds what the batch may become
        raise batch_limit_error(count, max_records, pos + 57)
    budget.take_records(count, pos + 57)
    if codec == 0:
        buf, rpos, rend, base = mv, pos + V2_HEADER, end, 0
    else:
        buf = budget.decompress(codec, mv[pos + V2_HEADER : end], 2, limit, pos + V2_HEADER)
        rpos, rend, base = 0, len(buf), None
    if count > rend - rpos:
        raise batch_error(f"record count {count} larger than the {rend - rpos} bytes of records", pos + 57)
    walk = (buf, rpos, rend, base_offset, base_ts, max_ts, attrs, base, pos, copy)
    # check every record now (building nothing), so that decode() raises every error
    caps = (max_headers, budget.headers_left(max_batch_headers), max_batch_headers, budget)
    for _ in _walk_v2(*walk, count, caps, False):
        pass
    return RecordBatch(pos, base_offset, length, ple, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
                       count, RecordList(walk, count))


def _walk_v2(buf, pos, end, base_offset, base_ts, max_ts, attrs, base, batch_at, copy, count, caps, build,
             first=0):
    """The twin's one walker of v2 records (the checks of records/_walk.pxi, in its
    order): records ``first`` .. ``first + count - 1`` from ``pos``, under ``caps``
    (max headers per record; per batch: the lesser of max_headers_per_batch
    and what the call has left; max_headers_per_batch; the call's CallBudget,
    which the batch's headers are added to once they are all checked, or None).
    Yields each Record (``build``), or None once the record is checked
    (nothing is built but a control record's marker, to check it)."""
    max_headers, max_batch_headers, batch_cap, budget = caps
    batch_headers = 0  # of the records walked so far
    ts_type = 1 if attrs & ATTR_TIMESTAMP_TYPE else 0
    control = attrs & ATTR_CONTROL
    make = build or control

    def fail(i, field, detail, at):
        raise record_error(i, field, detail, at, base, batch_at)

    def varint(i, field, p, e, wide=False):
        st, u, q = uvarint_status(buf, p, e, 10 if wide else 5, 64 if wide else 32)
        if st:
            fail(i, field, VARINT_PROBLEMS[st], p)
        return (u >> 1) ^ -(u & 1), q

    def blob(i, field, name, p, rend, keep):
        # a varint length (-1: null) and that many bytes
        n, q = varint(i, field + " length", p, rend)
        if n < -1 or n > rend - q:
            fail(i, field + " length", f"{name} length {n} invalid with {rend - q} bytes left", p)
        if n < 0:
            return None, q
        if not keep:
            return True, q + n
        return (bytes(buf[q : q + n]) if copy else buf[q : q + n]), q + n

    for i in range(first, first + count):
        start = pos
        length, pos = varint(i, "length", pos, end)
        if length < 0 or length > end - pos:
            fail(i, "length", f"length {length} outside the {end - pos} bytes left", start)
        rend = pos + length
        if pos >= rend:
            fail(i, "attributes", VARINT_PROBLEMS[1], pos)
        rattrs = buf[pos]
        pos += 1
        at = pos
        delta, pos = varint(i, "timestamp delta", pos, rend, True)
        at = pos
        odelta, pos = varint(i, "offset delta", pos, rend)
        if not INT64_MIN <= base_offset + odelta <= INT64_MAX:
            # an offset no writer can give: a problem, never an offset wrapped around
            fail(i, "offset delta", past_int64("offset delta", odelta, base_offset), at)
        key, pos = blob(i, "key", "key", pos, rend, make)
        value, pos = blob(i, "value", "value", pos, rend, make)
        at = pos
        hcount, pos = varint(i, "header count", pos, rend)
        if hcount < 0 or hcount > rend - pos:
            fail(i, "header count", f"header count {hcount} invalid with {rend - pos} bytes left", at)
        if hcount > max_headers:
            raise header_limit_error(i, hcount, max_headers, at, base, batch_at)
        if hcount > max_batch_headers - batch_headers:
            # the per-record cap times the records of a batch is still ~30 M headers
            raise batch_headers_error(i, batch_headers + hcount, at, base, batch_at, batch_cap, budget)
        batch_headers += hcount
        headers = [] if build else None
        # A batch may hold up to max_headers_per_batch of them: this loop reads a
        # one-byte length inline and names a field only when it fails, and the
        # check walk takes a run of 2-byte headers (empty key, null or empty
        # value: a headers bomb's shape) in one match.
        j = 0
        while j < hcount:
            if not build:
                run = _EMPTY_HEADERS.match(buf, pos, min(rend, pos + 2 * (hcount - j)))
                if run is not None:
                    j += (run.end() - pos) >> 1
                    pos = run.end()
                    if j == hcount:
                        break
            at = pos
            if pos < rend and buf[pos] < 0x80:
                hk = buf[pos]
                hk = (hk >> 1) ^ -(hk & 1)
                pos += 1
            else:
                hk, pos = varint(i, f"headers[{j}].key length", pos, rend)
            if hk < 0 or hk > rend - pos:
                fail(i, f"headers[{j}].key length", f"header key length {hk} invalid with {rend - pos} bytes left", at)
            if hk or build:
                try:
                    hkey = str(buf[pos : pos + hk], "utf-8")
                except UnicodeDecodeError:
                    fail(i, f"headers[{j}].key", "invalid UTF-8", pos)
                pos += hk
            at = pos
            if pos < rend and buf[pos] < 0x80:
                hv = buf[pos]
                hv = (hv >> 1) ^ -(hv & 1)
                pos += 1
            else:
                hv, pos = varint(i, f"headers[{j}].value length", pos, rend)
            if hv < -1 or hv > rend - pos:
                fail(i, f"headers[{j}].value length", f"header value length {hv} invalid with {rend - pos} bytes left",
                     at)
            if hv < 0:
                hval = None
            else:
                if build:
                    hval = bytes(buf[pos : pos + hv]) if copy else buf[pos : pos + hv]
                pos += hv
            if build:
                headers.append((hkey, hval))
            j += 1
        if pos != rend:
            fail(i, "length", f"{rend - pos} bytes left after the record's fields", pos)
        marker = control_record(key, value, batch_at if base is None else base + start) if control else None
        if not build:
            yield None
            continue
        rec = Record(key, value, headers, max_ts if ts_type else wrap64(base_ts + delta),
                     wrap64(base_offset + odelta), ts_type, rattrs if rattrs < 128 else rattrs - 256)
        rec.control = marker
        yield rec
    if pos != end:
        raise record_error(None, None, f"{end - pos} bytes after the last of {count} records", pos, base, batch_at)
    if budget is not None:
        budget.headers += batch_headers


class RecordList(LazyRecords):
    """The records of a v2 batch, made when read (as the compiled core's RecordList).

    Decoding checks every record but builds none: iterating (or indexing)
    builds each :class:`Record` then, so a consumer that drops each record
    before taking the next one holds one at a time.
    """

    __slots__ = ("_walk",)

    def __init__(self, walk, count):
        super().__init__(count)
        self._walk = walk  # _walk_v2's arguments before the count

    def __iter__(self):
        return _walk_v2(*self._walk, self._count, _UNCAPPED, True)

    def _starts(self):
        buf, pos, end = self._walk[:3]
        starts = []
        for _ in range(self._count):
            starts.append(pos)
            _, u, pos = uvarint_status(buf, pos, end, 5, 32)
            pos += (u >> 1) ^ -(u & 1)
        return starts

    def _one(self, i, start):
        walk = (self._walk[0], start, *self._walk[2:])
        return next(_walk_v2(*walk, 1, _UNCAPPED, True, i))


# A run of 2-byte headers (empty key; empty or null value), taken in steps of at
# most 1024: a bounded repeat keeps the regex engine's backtracking state small
# (~25 bytes a step: an unbounded one held 78 MB for 1 M headers) and runs on
# Python 3.10, which has no possessive quantifiers.
_EMPTY_HEADERS = re.compile(rb"(?:\x00[\x00\x01]){1,1024}")
_UNCAPPED = (0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, None)  # records already checked against the caps


# ---------------------------------------------------------------------------
# encode

_I16 = (-(1 << 15), (1 << 15) - 1)
_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (INT64_MIN, INT64_MAX)


def _int(v, what, lo, hi):
    return _check_int(what, v, lo, hi)


def _offset_past_int64(base_offset, delta, where):
    # a record without an offset takes the one after the previous record's
    if delta > _I32[1]:
        return EncodeError(f"value {delta} out of range [{_I32[0]}, {_I32[1]}]", f"{where}.offset delta")
    return EncodeError(f"offset {base_offset + delta} (base offset {base_offset} + {delta}) past the int64 maximum "
                       f"{_I64[1]}", f"{where}.offset")


def _put_varint(out, v):
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def _put_blob(out, v):
    if v is None:
        out.append(1)
    else:
        _put_varint(out, len(v))
        out += v


def encode_record_batch(records, magic=2, codec=0, base_offset=None, partition_leader_epoch=-1, producer_id=-1,
                        producer_epoch=-1, base_sequence=-1, transactional=False, control=False, timestamp_type=0,
                        max_timestamp=None, delete_horizon=False, compression_level=None, now=None):
    """Build one batch (``magic=2``) or message set (``magic`` 0/1) → ``bytes``.

    See :func:`kafkaproto.records.encode` for the parameters.
    """
    codec = codec_number(codec)
    if magic in (0, 1):
        return encode_legacy(records, magic, codec, base_offset, timestamp_type, max_timestamp, compression_level,
                             now, (partition_leader_epoch, producer_id, producer_epoch, base_sequence,
                                   transactional, control, delete_horizon))
    if magic != 2:
        raise EncodeError(f"unknown magic {magic!r} (0, 1 or 2)", "magic")
    if timestamp_type not in (0, 1):
        raise EncodeError(f"timestamp type {timestamp_type!r} is neither 0 (create) nor 1 (log append)",
                          "timestamp type")
    ple = _int(partition_leader_epoch, "partition leader epoch", *_I32)
    pid = _int(producer_id, "producer id", *_I64)
    pepoch = _int(producer_epoch, "producer epoch", *_I16)
    bseq = _int(base_sequence, "base sequence", *_I32)
    if max_timestamp is not None:
        max_timestamp = _int(max_timestamp, "max timestamp", *_I64)
    items = tuple(records)  # one snapshot: the count written is of the records written
    if not items:
        raise EncodeError("no records to encode", "records")
    now = time.time_ns() // 1_000_000 if now is None else _int(now, "now", *_I64)
    if base_offset is None:
        base_offset = unpack_record(items[0], 0)[0]
        if base_offset is None:
            base_offset = 0
    base_offset = _int(base_offset, "base offset", *_I64)
    body = bytearray()
    base_ts = max_ts = None
    delta = -1
    for i, item in enumerate(items):
        offset, ts, key, value, headers = unpack_record(item, i)
        where = f"records[{i}]"
        ts = now if ts is None else _int(ts, "timestamp", *_I64)
        if base_ts is None:
            base_ts = max_ts = ts
        elif ts > max_ts:
            max_ts = ts
        if offset is None:
            delta += 1
            # the record's offset and the batch's last one (base + last offset delta) must be int64s
            if delta > _I32[1] or base_offset + delta > _I64[1]:
                raise _offset_past_int64(base_offset, delta, where)
        else:
            delta = _int(_int(offset, "offset", *_I64) - base_offset, "offset delta", *_I32)
        rec = bytearray(b"\x00")
        _put_varint(rec, _int(ts - base_ts, "timestamp delta", *_I64))
        _put_varint(rec, delta)
        _put_blob(rec, as_blob(key, where + ".key"))
        _put_blob(rec, as_blob(value, where + ".value"))
        headers = () if headers is None else tuple(headers)
        _put_varint(rec, len(headers))
        for j, pair in enumerate(headers):
            hk, hv = header_pair(pair, f"{where}.headers[{j}]")
            _put_blob(rec, hk)
            _put_blob(rec, hv)
        if len(rec) > _I32[1]:
            raise EncodeError(f"record of {len(rec)} bytes: its length does not fit in an int32", where)
        _put_varint(body, len(rec))
        body += rec
    if max_timestamp is not None:
        max_ts = max_timestamp
    attrs = (codec | (ATTR_TIMESTAMP_TYPE if timestamp_type else 0) | (ATTR_TRANSACTIONAL if transactional else 0)
             | (ATTR_CONTROL if control else 0) | (ATTR_DELETE_HORIZON if delete_horizon else 0))
    if codec:
        body = _compression.compress(codec, body, 2, compression_level)
    size = V2_HEADER + len(body) - LOG_OVERHEAD
    if size > _I32[1]:
        raise EncodeError(f"batch of {size + LOG_OVERHEAD} bytes: its size does not fit in an int32", "record batch")
    out = bytearray(V2_HEADER_STRUCT.pack(base_offset, size, ple, 2, 0, attrs, delta, base_ts, max_ts, pid, pepoch,
                                          bseq, len(items)))
    out += body
    _crc_at.pack_into(out, 17, _crc32c.crc32c(memoryview(out)[V2_CRC_FROM:]))
    return bytes(out)
