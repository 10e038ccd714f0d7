"""Legacy message sets (magic 0 and 1), shared by the compiled core and its twin.

They are what Kafka before 0.11 wrote; they turn up in old log segments and
from old clients, never in bulk from a current one, so one Python
implementation serves both (it takes the Record class to build).

Layout of one message: offset int64, size int32, crc uint32 (CRC-32 of the
rest), magic int8, attributes int8, timestamp int64 (magic 1 only), key and
value as int32-length bytes.  A compressed message's value is an inner
message set; magic 1 inner offsets are relative (the wrapper carries the
absolute offset of the last one), magic 0 inner offsets are absolute.
"""

from __future__ import annotations

import struct
import time
import zlib

from .._limits import DEFAULT_MAX_RECORDS_PER_BATCH
from ..errors import EncodeError
from . import _compression
from ._common import (
    ATTR_CODEC,
    ATTR_TIMESTAMP_TYPE,
    INT64_MAX,
    LEGACY_MIN_SIZE,
    LEGACY_STRUCT,
    LOG_OVERHEAD,
    CallBudget,
    LazyRecords,
    RecordBatch,
    as_blob,
    batch_error,
    crc_error,
    legacy_records_error,
    record_error,
    unpack_record,
    wrap64,
)

_i32 = struct.Struct(">i")
_i64 = struct.Struct(">q")
_head = struct.Struct(">qi")


def _message(buf, pos, end, base, batch_at, index, check_crc, copy):
    """Parse the message at ``pos`` (its size already checked to fit before ``end``).

    → (offset, size, crc, magic, attributes, timestamp, key, value).
    """

    def fail(field, detail, at):
        if index is None:
            raise batch_error(detail, at if base is None else base + at, "message")
        raise record_error(index, field, detail, at, base, batch_at)

    offset, size, crc, magic, attrs = LEGACY_STRUCT.unpack_from(buf, pos)
    mend = pos + LOG_OVERHEAD + size
    if magic not in (0, 1):
        fail("magic", f"unknown magic {magic}", pos + 16)
    minimum = LEGACY_MIN_SIZE[magic]
    if size < minimum:
        fail("size", f"size {size} below the v{magic} minimum of {minimum}", pos + 8)
    if check_crc:
        computed = zlib.crc32(buf[pos + 16 : mend])
        if computed != crc:
            if index is None:
                raise crc_error("CRC32", crc, computed, pos + 12 if base is None else base + pos + 12)
            fail("crc", f"CRC32 mismatch: stored 0x{crc:08x}, computed 0x{computed:08x}", pos + 12)
    p = pos + 18
    ts = -1
    if magic == 1:
        ts = _i64.unpack_from(buf, p)[0]
        p += 8
    fields = []
    for name in ("key", "value"):
        at = p
        if mend - p < 4:
            fail(name, f"{name} length needs 4 bytes, {mend - p} left", at)
        n = _i32.unpack_from(buf, p)[0]
        p += 4
        if n < -1 or n > mend - p:
            fail(name, f"{name} length {n} invalid with {mend - p} bytes left", at)
        if n < 0:
            fields.append(None)
        else:
            fields.append(bytes(buf[p : p + n]) if copy else buf[p : p + n])
            p += n
    if p != mend:
        fail("size", f"{mend - p} bytes left after the value", p)
    return offset, size, crc, magic, attrs, ts, fields[0], fields[1]


def decode_legacy(mv, pos, size, magic, check_crc, limit, copy, record_cls, max_records=DEFAULT_MAX_RECORDS_PER_BATCH,
                  budget=None):
    """One top-level legacy message → a RecordBatch (the blob offset is ``pos``); a
    compressed one holding more than ``max_records`` inner messages (or more than
    the call's ``budget`` has left) raises RecordLimitError before any record is
    built.  A compressed message's inner messages are all checked here and
    built when read (:class:`LegacyRecords`), as a v2 batch's records are."""
    offset, size, crc, magic, attrs, ts, key, value = _message(mv, pos, len(mv), 0, pos, None, check_crc, copy)
    codec = attrs & ATTR_CODEC
    ts_type = -1 if magic == 0 else (1 if attrs & ATTR_TIMESTAMP_TYPE else 0)
    if budget is None:
        budget = CallBudget(INT64_MAX, INT64_MAX, INT64_MAX)
    if codec == 0:
        budget.take_records(1, pos, "message")
        rec = record_cls(key, value, [], ts, offset, ts_type, attrs)
        return RecordBatch(pos, offset, size, -1, magic, crc, attrs, 0, ts, ts, -1, -1, -1, 1, [rec])
    if codec > 3:
        detail = "zstd is not allowed in magic 0/1" if codec == 4 else f"unknown compression codec {codec}"
        raise batch_error(detail, pos + 17, "message")
    if value is None:
        raise batch_error("compressed message with a null value", pos + 12 + size - 4, "message")
    value_at = pos + LOG_OVERHEAD + size - len(value)
    inner = budget.decompress(codec, value, magic, limit, value_at)
    cap = budget.records_left(max_records)
    n = len(inner)
    p = count = 0
    last = None
    while p < n:
        if count >= cap:
            raise legacy_records_error(cap, max_records, budget, pos)
        if n - p < LOG_OVERHEAD:
            raise record_error(count, "size", f"inner message cut short: {n - p} bytes", p, None, pos)
        isize = _head.unpack_from(inner, p)[1]
        if isize < LEGACY_MIN_SIZE[0] or isize > n - p - LOG_OVERHEAD:
            raise record_error(count, "size",
                               f"inner message size {isize} invalid with {n - p - LOG_OVERHEAD} bytes left", p + 8,
                               None, pos)
        # checked, nothing kept: the records are built when read
        ioff, _, _, imagic, iattrs = _message(inner, p, n, None, pos, count, check_crc, False)[:5]
        if imagic != magic:
            raise record_error(count, "magic", f"inner magic {imagic} differs from the wrapper's {magic}", p + 16,
                               None, pos)
        if iattrs & ATTR_CODEC:
            raise record_error(count, "attributes", "compressed message inside a compressed message", p + 17, None,
                               pos)
        last = ioff
        count += 1
        p += LOG_OVERHEAD + isize
    if not count:
        raise batch_error("compressed message with no inner messages", pos, "message")
    shift = 0
    if magic == 1 and offset != 0:  # 0: produce data from some librdkafka versions (relative as is)
        if offset < last:
            raise batch_error(f"wrapper offset {offset} below the last inner offset {last}", pos, "message")
        shift = offset - last
    budget.records += count
    records = LegacyRecords(inner, count, shift, ts if magic == 1 and ts_type == 1 else None, ts_type, copy,
                            record_cls, pos)
    base_offset = wrap64(_head.unpack_from(inner, 0)[0] + shift)  # (records[0] would index them all)
    return RecordBatch(pos, base_offset, size, -1, magic, crc, attrs, wrap64(offset - base_offset), ts, ts, -1, -1,
                       -1, count, records)


class LegacyRecords(LazyRecords):
    """The inner messages of a compressed legacy message, checked, made when read
    (as a v2 batch's :class:`RecordList`)."""

    __slots__ = ("_inner", "_shift", "_ts", "_ts_type", "_copy", "_cls", "_at")

    def __init__(self, inner, count, shift, ts, ts_type, copy, record_cls, at):
        super().__init__(count)
        self._inner = inner
        self._shift = shift
        self._ts = ts  # the wrapper's, for log-append time (magic 1); None: each message's own
        self._ts_type = ts_type
        self._copy = copy
        self._cls = record_cls
        self._at = at

    def _build(self, p, i):
        ioff, size, _, _, iattrs, its, key, value = _message(self._inner, p, len(self._inner), None, self._at, i,
                                                              False, self._copy)
        rec = self._cls(key, value, [], its if self._ts is None else self._ts, wrap64(ioff + self._shift),
                        self._ts_type, iattrs)
        return rec, p + LOG_OVERHEAD + size

    def _starts(self):
        p, out = 0, []
        for _ in range(self._count):
            out.append(p)
            p += LOG_OVERHEAD + _head.unpack_from(self._inner, p)[1]
        return out

    def __iter__(self):
        p = 0
        for i in range(self._count):
            rec, p = self._build(p, i)
            yield rec

    def _one(self, i, start):
        return self._build(start, i)[0]


# ---------------------------------------------------------------------------
# encode


def _bytes_field(out, v, what):
    if v is None:
        out += b"\xff\xff\xff\xff"
        return
    mv = memoryview(as_blob(v, what))  # (any buffer: its bytes in C order, as in magic 2)
    out += _i32.pack(mv.nbytes)
    out += mv


def _int64(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise EncodeError(f"expected an int, got {type(v).__name__}", what)
    if not -(1 << 63) <= v < (1 << 63):
        raise EncodeError(f"value {v} out of range [{-(1 << 63)}, {(1 << 63) - 1}]", what)
    return v


def _message_bytes(offset, magic, attrs, ts, key, value, where):
    body = bytearray((magic, attrs))
    if magic == 1:
        body += _i64.pack(ts)
    _bytes_field(body, key, where + ".key")
    _bytes_field(body, value, where + ".value")
    return _head.pack(offset, len(body) + 4) + struct.pack(">I", zlib.crc32(body)) + body


def encode_legacy(records, magic, codec, base_offset, timestamp_type, max_timestamp, level, now, v2_only):
    """A magic 0/1 message set: one message per record, or one compressed wrapper."""
    if codec == 4:
        raise EncodeError("zstd needs magic 2", "codec")
    if v2_only != (-1, -1, -1, -1, False, False, False):
        raise EncodeError("leader epoch, producer fields, transactional, control and delete horizon need magic 2",
                          "record batch")
    if timestamp_type not in (0, 1) or (magic == 0 and timestamp_type):
        raise EncodeError(f"timestamp type {timestamp_type!r} not available in magic {magic}", "timestamp type")
    items = [unpack_record(item, i) for i, item in enumerate(records)]
    if not items:
        raise EncodeError("no records to encode", "records")
    if now is None:
        now = time.time_ns() // 1_000_000
    if base_offset is None:
        base_offset = items[0][0] if items[0][0] is not None else 0
    base_offset = _int64(base_offset, "offset")
    ts_bit = ATTR_TIMESTAMP_TYPE if timestamp_type else 0
    out = bytearray()
    rel = -1
    max_ts = -1
    for i, (offset, ts, key, value, headers) in enumerate(items):
        where = f"records[{i}]"
        if headers:
            raise EncodeError("record headers need magic 2", where + ".headers")
        rel = rel + 1 if offset is None else _int64(offset, "offset") - base_offset
        ts = (now if ts is None else _int64(ts, "timestamp")) if magic == 1 else -1
        max_ts = max(max_ts, ts)
        # magic 1 inner offsets are relative to the wrapper; everything else absolute
        moff = rel if codec and magic == 1 else _int64(base_offset + rel, "offset")
        out += _message_bytes(moff, magic, ts_bit, ts, key, value, where)
    if not codec:
        return bytes(out)
    if magic == 1 and max_timestamp is not None:
        max_ts = _int64(max_timestamp, "timestamp")
    wrapped = _compression.compress(codec, out, magic, level)
    return bytes(_message_bytes(_int64(base_offset + rel, "offset"), magic, codec | ts_bit, max_ts, None,
                                bytes(wrapped), "records"))
