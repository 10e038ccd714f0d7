"""Record-batch pieces shared by the compiled decoder and its pure twin.

The per-record hot path lives in ``_records.pxi`` (compiled) and
``_records_py.py`` (pure); what is built once per batch lives here: the batch
objects, the enums, control-record parsing, the layout constants and the
error messages (so both implementations raise the very same errors).
"""

from __future__ import annotations

import enum
import struct
from operator import index as _index
from typing import NamedTuple

from .._limits import DEFAULT_MAX_HEADERS_PER_BATCH, DEFAULT_MAX_HEADERS_PER_RECORD, DEFAULT_MAX_RECORDS_PER_BATCH
from ..errors import CorruptRecordError, EncodeError, RecordLimitError
from ._compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_SIZE
from ._compression import decompress as _decompress

__all__ = [
    "Codec",
    "TimestampType",
    "ControlType",
    "ControlRecord",
    "RecordBatch",
    "TruncatedBatch",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_HEADERS_PER_BATCH",
    "DEFAULT_MAX_HEADERS_PER_RECORD",
    "DEFAULT_MAX_RECORDS_PER_BATCH",
]

# -- layout -----------------------------------------------------------------
#: Bytes before a batch's (or legacy message's) own size field counts: offset + size.
LOG_OVERHEAD = 12
#: v2 header size, base offset included.
V2_HEADER = 61
#: Smallest legal size field: a legacy v0 message with null key and value.
MIN_SIZE = 14
V2_MIN_SIZE = V2_HEADER - LOG_OVERHEAD
LEGACY_MIN_SIZE = (14, 22)
#: Offset of the magic byte, the same for every format.
MAGIC_AT = 16
#: v2: the CRC32C covers everything from the attributes on.
V2_CRC_FROM = 21

ATTR_CODEC = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_TIMESTAMP = -1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

V2_HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
LEGACY_STRUCT = struct.Struct(">qiIbb")


class Codec(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


_CODECS = tuple(Codec)


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class ControlRecord(NamedTuple):
    """The decoded key (and, for transaction markers, value) of a control record."""

    type: int  # a ControlType when known, else the raw int16
    version: int
    coordinator_epoch: int | None = None  # ABORT / COMMIT markers only


def codec_number(codec) -> int:
    """``"lz4"``, ``Codec.LZ4``, ``3`` or ``None`` → 3."""
    if codec is None:
        return 0
    if isinstance(codec, str):
        try:
            return CODEC_NAMES.index(codec.lower())
        except ValueError:
            raise EncodeError(f"unknown codec {codec!r} (one of {', '.join(CODEC_NAMES)})", "codec") from None
    if isinstance(codec, int) and not isinstance(codec, bool) and 0 <= codec < len(CODEC_NAMES):
        return int(codec)
    raise EncodeError(f"unknown codec {codec!r}", "codec")


# -- batches ----------------------------------------------------------------


class _BatchBase:
    __slots__ = ()

    @property
    def codec(self) -> Codec:
        """The compression codec, a :class:`Codec` (an int: ``batch.codec == 1`` holds for gzip)."""
        x = self.attributes & ATTR_CODEC
        return _CODECS[x] if x < len(_CODECS) else x

    @property
    def compression(self) -> str:
        return CODEC_NAMES[self.codec] if self.codec < len(CODEC_NAMES) else str(self.codec)

    @property
    def timestamp_type(self) -> int:
        """0 create time, 1 log-append time; -1 for magic 0, which has no timestamps."""
        if self.magic == 0:
            return -1
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL) and self.magic >= 2

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL) and self.magic >= 2

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON) and self.magic >= 2

    @property
    def delete_horizon_ms(self) -> int:
        """The base timestamp doubles as the delete horizon when the flag is set (KIP-534)."""
        return self.base_timestamp if self.has_delete_horizon else NO_TIMESTAMP

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Bytes the batch takes in the blob (its size field + 12)."""
        return self.batch_length + LOG_OVERHEAD


class RecordBatch(_BatchBase):
    """One batch: a v2 RecordBatch, or one legacy (v0/v1) top-level message.

    A legacy message is a batch of one record, or, when compressed, of its
    inner messages (as Kafka's own classes present it); its ``crc``,
    ``attributes`` and ``batch_length`` are the wrapper message's, and its
    producer fields are -1.
    """

    __slots__ = (
        "offset",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
        "records",
    )

    truncated = False

    def __init__(self, offset, base_offset, batch_length, partition_leader_epoch, magic, crc, attributes,
                 last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                 record_count, records):
        self.offset = offset
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.record_count = record_count
        self.records = records

    def header(self) -> dict:
        """Every header field, by name (records left out)."""
        return {name: getattr(self, name) for name in self.__slots__ if name != "records"}

    def __iter__(self):
        return iter(self.records)

    def __len__(self):
        return len(self.records)

    def __eq__(self, other):
        if not isinstance(other, RecordBatch):
            return NotImplemented
        return self.header() == other.header() and list(self.records) == list(other.records)

    __hash__ = None

    def __repr__(self):
        return (f"RecordBatch(magic={self.magic}, base_offset={self.base_offset}, records={self.record_count}, "
                f"codec={self.compression}, offset={self.offset}, size={self.size})")


class TruncatedBatch:
    """The partial batch at the end of a blob (normal at the end of a Fetch partition).

    ``available`` bytes of it are present; ``size`` (the whole batch, when its
    size field is present) and ``base_offset`` (when its first 8 bytes are)
    are ``None`` otherwise.
    """

    __slots__ = ("offset", "available", "size", "base_offset")

    truncated = True
    records = ()

    def __init__(self, offset, available, size, base_offset):
        self.offset = offset
        self.available = available
        self.size = size
        self.base_offset = base_offset

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __eq__(self, other):
        if not isinstance(other, TruncatedBatch):
            return NotImplemented
        return (self.offset, self.available, self.size, self.base_offset) == (
            other.offset, other.available, other.size, other.base_offset)

    __hash__ = None

    def __repr__(self):
        return (f"TruncatedBatch(offset={self.offset}, available={self.available}, size={self.size}, "
                f"base_offset={self.base_offset})")


class LazyRecords:
    """A batch's records, checked when it was decoded and built when read: a
    read-only sequence (``len``, indexing, slicing, iteration, equality with a
    list; ``list(batch.records)`` gives a plain list).  The twin's v2
    RecordList and legacy LegacyRecords share it: each gives ``__iter__``,
    ``_starts()`` (every record's position, made on first indexing) and
    ``_one(i, start)``."""

    __slots__ = ("_count", "_positions")

    def __init__(self, count):
        self._count = count
        self._positions = None

    def __len__(self):
        return self._count

    def __length_hint__(self):
        return self._count

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self[k] for k in range(*item.indices(self._count))]
        i = _index(item)
        if i < 0:
            i += self._count
        if i < 0 or i >= self._count:
            raise IndexError("record index out of range")
        if self._positions is None:
            self._positions = self._starts()
        return self._one(i, self._positions[i])

    def __eq__(self, other):
        if isinstance(other, (LazyRecords, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return f"<RecordList of {self._count} records>"

    def __reduce__(self):
        return (list, (list(self),))


# -- control records ----------------------------------------------------------

_i16x2 = struct.Struct(">hh")
_i16i32 = struct.Struct(">hi")


def control_record(key, value, at) -> ControlRecord:
    """Parse a control record's key (version, type) and, for markers, its value."""
    if key is None or len(key) < 4:
        raise CorruptRecordError(f"control record key of {0 if key is None else len(key)} bytes (need 4)",
                                 "control record", at)
    version, ctype = _i16x2.unpack_from(key)
    try:
        ctype = ControlType(ctype)
    except ValueError:
        return ControlRecord(ctype, version)
    if ctype > ControlType.COMMIT:
        return ControlRecord(ctype, version)
    if value is None or len(value) < 6:
        raise CorruptRecordError(f"transaction marker value of {0 if value is None else len(value)} bytes (need 6)",
                                 "control record", at)
    _, epoch = _i16i32.unpack_from(value)
    return ControlRecord(ctype, version, epoch)


def control_key_value(type, coordinator_epoch=0, version=0):
    """Key and value bytes of a control record (for ``encode(..., control=True)``)."""
    key = _i16x2.pack(version, int(type))
    value = _i16i32.pack(version, coordinator_epoch) if int(type) in (0, 1) else b""
    return key, value


# -- errors -------------------------------------------------------------------
# Record-level errors name the record and field (`.records[3].key length`);
# inside compressed data the offset is the batch's, and the detail says where
# in the decompressed records.

VARINT_PROBLEMS = {1: "runs past the end of the record", 2: "varint too long", 3: "varint out of range"}


def record_error(index, field, detail, pos, base, batch_at):
    """pos: position in the records buffer; base: its blob offset (None when decompressed)."""
    path = [f"records[{index}]", field] if index is not None else []
    if base is None:
        return CorruptRecordError(f"{detail} (byte {pos} of the decompressed records)", "records", batch_at, path)
    return CorruptRecordError(detail, "records", base + pos, path)


#: the record fields a failure record names (RW_* in records/_walk.pxi, same order)
RECORD_FIELDS = ("length", "attributes", "timestamp delta", "offset delta", "key length", "value length",
                 "header count", "headers[{j}].key length", "headers[{j}].key", "headers[{j}].value length",
                 "control record", None)
_INVALID = {4: "key length", 5: "value length", 6: "header count", 7: "header key length", 9: "header value length"}
#: RF_* in records/_walk.pxi
RF_VARINT, RF_OUTSIDE, RF_INVALID, RF_UTF8, RF_LEFT_AFTER, RF_AFTER_LAST, RF_CONTROL_KEY, RF_CONTROL_VALUE, \
    RF_LIMIT = range(1, 10)
RF_BATCH_LIMIT = 12
RF_OFFSET = 13
RW_CONTROL = 10


def record_failure(code, field, at, x, y, path, base, batch_at, call=None, batch_cap=None):
    """The error for a failure the compiled record walker recorded.

    ``path``: the record's number and, for a header field, the header's (innermost
    last); ``at``: position in the records buffer (``base``: its blob offset, None
    when decompressed).  ``call``, ``batch_cap``: the call's CallBudget and
    ``max_headers_per_batch``, when the walker was given the lesser of it and
    what the call had left.
    """
    if code == RF_AFTER_LAST:
        return record_error(None, None, f"{x} bytes after the last of {y} records", at, base, batch_at)
    if code == RF_LIMIT:
        return header_limit_error(path[0], x, y, at, base, batch_at)
    if code == RF_BATCH_LIMIT:
        if call is None:
            return header_limit_error(path[0], x, y, at, base, batch_at, "max_headers_per_batch")
        return batch_headers_error(path[0], x, at, base, batch_at, batch_cap, call)
    if field == RW_CONTROL:
        what = "control record key of {x} bytes (need 4)" if code == RF_CONTROL_KEY else \
            "transaction marker value of {x} bytes (need 6)"
        return CorruptRecordError(what.format(x=x), "control record", batch_at if base is None else base + at)
    if code == RF_VARINT:
        detail = VARINT_PROBLEMS[x]
    elif code == RF_OUTSIDE:
        detail = f"length {x} outside the {y} bytes left"
    elif code == RF_INVALID:
        detail = f"{_INVALID[field]} {x} invalid with {y} bytes left"
    elif code == RF_UTF8:
        detail = "invalid UTF-8"
    elif code == RF_OFFSET:
        detail = past_int64("offset delta", x, y)
    else:  # RF_LEFT_AFTER
        detail = f"{x} bytes left after the record's fields"
    index = path[0]
    name = RECORD_FIELDS[field].format(j=path[1] if len(path) > 1 else None)
    return record_error(index, name, detail, at, base, batch_at)


_LEGACY_FIELDS = ("magic", "size", "crc", "key", "value", "attributes", None)


def legacy_failure(code, field, at, x, y, index, batch_at):
    """The error for a failure the compiled legacy walker recorded: of the top-level
    message (``index`` None; ``at`` in the blob) or of inner message ``index`` of a
    compressed set (``at`` in the decompressed set; ``batch_at``: the wrapper's offset)."""
    name = _LEGACY_FIELDS[field]
    if code == 1:
        detail = f"unknown magic {x}"
    elif code == 2:
        detail = f"size {x} below the v{y} minimum of {LEGACY_MIN_SIZE[y]}"
    elif code == 3:
        if index is None:
            return crc_error("CRC32", x, y, at)
        detail = f"CRC32 mismatch: stored 0x{x:08x}, computed 0x{y:08x}"
    elif code == 4:
        detail = f"{name} length needs 4 bytes, {x} left"
    elif code == 5:
        detail = f"{name} length {x} invalid with {y} bytes left"
    elif code == 6:
        detail = f"{x} bytes left after the value"
    elif code == 7:
        return batch_error("zstd is not allowed in magic 0/1" if x == 4 else f"unknown compression codec {x}", at,
                           "message")
    elif code == 8:
        return batch_error("compressed message with a null value", at, "message")
    elif code == 9:
        detail = f"inner message cut short: {x} bytes"
    elif code == 10:
        detail = f"inner message size {x} invalid with {y} bytes left"
    elif code == 11:
        detail = f"inner magic {x} differs from the wrapper's {y}"
    elif code == 12:
        detail = "compressed message inside a compressed message"
    elif code == 13:
        return batch_error("compressed message with no inner messages", at, "message")
    else:
        return batch_error(f"wrapper offset {x} below the last inner offset {y}", at, "message")
    if index is None:
        return batch_error(detail, at, "message")
    return record_error(index, name, detail, at, None, batch_at)


# -- caps on what a batch expands to (issue 17) ---------------------------------


def batch_limit_error(count, cap, at, what="record batch"):
    """A batch declaring (v2, ``at``: its record count field) or holding (legacy:
    ``count`` None, ``at``: the wrapper) more records than ``max_records_per_batch``."""
    detail = (f"record count {count} above max_records_per_batch={cap}" if count is not None
              else f"more than {cap} inner messages: above max_records_per_batch={cap}")
    return RecordLimitError(detail, what, at, limit="max_records_per_batch", value=cap,
                            count=cap + 1 if count is None else count)


def header_limit_error(index, count, cap, pos, base, batch_at, limit="max_headers_per_record"):
    """Record ``index`` declaring more headers than ``max_headers_per_record``, or
    (``limit`` "max_headers_per_batch") bringing the headers of the batch's records
    0 .. ``index`` to ``count``, more than ``max_headers_per_batch``, or
    ("max_headers_per_call") those of the call so far to ``count`` (where as in
    record_error: at the record's header count)."""
    if limit == "max_headers_per_record":
        detail = f"header count {count} above max_headers_per_record={cap}"
    elif limit == "max_headers_per_batch":
        detail = f"{count} headers in records 0-{index} above max_headers_per_batch={cap}"
    else:
        detail = f"{count} headers in this call up to records[{index}] of this batch, above max_headers_per_call={cap}"
    path = [f"records[{index}]", "header count"]
    if base is None:
        detail += f" (byte {pos} of the decompressed records)"
        pos, base = batch_at, 0
    return RecordLimitError(detail, "records", base + pos, path, limit=limit, value=cap, count=count)


def batch_headers_error(index, batch_count, pos, base, batch_at, batch_cap, call):
    """Record ``index`` bringing its batch's headers to ``batch_count``, past what the
    walker was given: ``max_headers_per_batch`` (``batch_cap``) or what the call
    had left of ``max_headers_per_call`` (``call``: its CallBudget), whichever
    was passed (the batch's, when both were)."""
    if batch_count > batch_cap:
        return header_limit_error(index, batch_count, batch_cap, pos, base, batch_at, "max_headers_per_batch")
    return header_limit_error(index, call.headers + batch_count, call.max_headers, pos, base, batch_at,
                              "max_headers_per_call")


class CallBudget:
    """What one decode call (``records.decode`` with every batch it yields,
    ``arrow.records`` with every row) has taken of its per-call caps, and what
    each batch may still take; shared by both implementations (the compiled
    walkers read ``headers_left()`` once per batch)."""

    __slots__ = ("records", "headers", "decompressed", "max_records", "max_headers", "max_decompressed")

    def __init__(self, max_records: int, max_headers: int, max_decompressed: int):
        self.records = self.headers = self.decompressed = 0
        self.max_records = max_records
        self.max_headers = max_headers
        self.max_decompressed = max_decompressed

    def mark(self) -> tuple:
        return self.records, self.headers, self.decompressed

    def reset(self, mark: tuple) -> None:
        """Give back what was taken since ``mark`` (an Arrow row that failed)."""
        self.records, self.headers, self.decompressed = mark

    def take_records(self, count: int, at: int, what: str = "record batch") -> None:
        """A batch's ``count`` records (v2: declared, ``at`` its count field; legacy:
        a message's) → counted, or RecordLimitError past the call's cap."""
        if count > self.max_records - self.records:
            total = self.records + count
            raise RecordLimitError(f"{count} records bring this call to {total}, above "
                                   f"max_records_per_call={self.max_records}", what, at,
                                   limit="max_records_per_call", value=self.max_records, count=total)
        self.records += count

    def records_left(self, batch_cap: int) -> int:
        return min(batch_cap, self.max_records - self.records)

    def headers_left(self, batch_cap: int) -> int:
        return min(batch_cap, self.max_headers - self.headers)

    def decompress(self, codec: int, data, magic: int, limit: int, at):
        """Decompress a batch's records (or a legacy wrapper's value) within its
        own cap and what the call has left → the buffer, counted."""
        left = self.max_decompressed - self.decompressed
        if left >= limit:
            out = _decompress(codec, data, magic, limit, at)
        else:
            try:
                out = _decompress(codec, data, magic, left, at)
            except RecordLimitError as exc:
                if exc.limit != "max_decompressed_size":
                    raise
                raise RecordLimitError(
                    f"decompressed size above the {left} bytes left of max_decompressed_per_call="
                    f"{self.max_decompressed}", exc.what, exc.offset, limit="max_decompressed_per_call",
                    value=self.max_decompressed, count=self.max_decompressed + 1) from None
        self.decompressed += len(out)
        return out


def legacy_records_error(limit_given: int, batch_cap: int, call: CallBudget, at):
    """A compressed legacy message holding more than ``limit_given`` inner messages
    (``records_left(batch_cap)``): the batch's cap, or the call's."""
    if limit_given >= batch_cap:
        return batch_limit_error(None, batch_cap, at, "message")
    return RecordLimitError(f"more inner messages than the {limit_given} records left of "
                            f"max_records_per_call={call.max_records}", "message", at,
                            limit="max_records_per_call", value=call.max_records, count=call.max_records + 1)


def past_int64(what, delta, base):
    """The detail of an offset past int64 (base offset + a delta): Java's long
    arithmetic wraps it around, to an offset far below the batch's; read as a
    corrupt batch or record instead, it cannot pass for one already consumed."""
    return f"{what} {delta} takes the base offset {base} past int64"


def batch_error(detail, at, what="record batch"):
    return CorruptRecordError(detail, what, at)


def crc_error(kind, stored, computed, at):
    return CorruptRecordError(f"{kind} mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}",
                              "record batch", at)


def wrap64(v: int) -> int:
    """Two's-complement int64 wrap-around, as Java's long arithmetic does."""
    if INT64_MIN <= v <= INT64_MAX:
        return v
    return ((v - INT64_MIN) & 0xFFFFFFFFFFFFFFFF) + INT64_MIN


# -- encode input ---------------------------------------------------------------


def unpack_record(item, i):
    """(offset, timestamp, key, value, headers) of one input record.

    Accepts a Record (either implementation's, or anything with those
    attributes) or a tuple ``(key, value[, headers[, timestamp]])``.
    """
    if isinstance(item, tuple):
        n = len(item)
        if n < 2 or n > 4:
            raise EncodeError(f"a record tuple is (key, value[, headers[, timestamp]]), got {n} items",
                              f"records[{i}]")
        return (None, item[3] if n > 3 else None, item[0], item[1], item[2] if n > 2 else None)
    try:
        return (item.offset, item.timestamp, item.key, item.value, item.headers)
    except AttributeError:
        raise EncodeError(f"expected a Record or a tuple, got {type(item).__name__}", f"records[{i}]") from None


def as_blob(v, what):
    """A key or value to write: None, or a bytes-like object (as bytes or a flat memoryview)."""
    if v is None or type(v) is bytes:
        return v
    if isinstance(v, str):
        raise EncodeError("expected bytes, got str", what)
    try:
        mv = memoryview(v)
    except TypeError:
        raise EncodeError(f"expected bytes, got {type(v).__name__}", what) from None
    return bytes(mv)


def header_pair(pair, what):
    """(key bytes, value bytes-or-None) of one header; keys are str (UTF-8) or bytes."""
    try:
        key, value = pair
    except (TypeError, ValueError):
        raise EncodeError("a header is a (key, value) pair", what) from None
    if isinstance(key, str):
        try:
            key = key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EncodeError(f"cannot encode as UTF-8 ({exc.reason})", what + ".key") from None
    elif key is None:
        raise EncodeError("header keys cannot be null", what + ".key")
    else:
        key = as_blob(key, what + ".key")
    return key, as_blob(value, what + ".value")


# -- Record (both implementations build this one class) ---------------------------


def _plain(v):
    return bytes(v) if isinstance(v, memoryview) else v


def _short(v):
    if v is None:
        return "None"
    v = bytes(v)
    return repr(v) if len(v) <= 24 else repr(v[:24])[:-1] + f"...' ({len(v)} bytes)"


class Record:
    """One record: what a batch holds, and what ``encode`` takes.

    ``headers`` is a list of ``(str, bytes | None)`` pairs, in wire order,
    duplicates kept.  ``control`` is a :class:`ControlRecord` for the records
    of a control batch, else ``None``.  A plain ``__slots__`` class: the
    compiled decoder fills the slots directly, and attribute reads take the
    interpreter's fastest path.
    """

    __slots__ = ("offset", "timestamp", "timestamp_type", "attributes", "key", "value", "headers", "control")

    def __init__(self, key=None, value=None, headers=None, timestamp=None, offset=None, timestamp_type=0,
                 attributes=0, control=None):
        self.key = key
        self.value = value
        self.headers = [] if headers is None else headers
        self.timestamp = timestamp
        self.offset = offset
        self.timestamp_type = timestamp_type
        self.attributes = attributes
        self.control = control

    def _fields(self):
        return (self.offset, self.timestamp, self.timestamp_type, self.attributes, self.key, self.value,
                list(self.headers), self.control)

    def __eq__(self, other):
        try:
            theirs = (other.offset, other.timestamp, other.timestamp_type, other.attributes, other.key, other.value,
                      list(other.headers), other.control)
        except AttributeError:
            return NotImplemented
        return self._fields() == theirs

    __hash__ = None

    def __repr__(self):
        return (f"Record(offset={self.offset!r}, timestamp={self.timestamp!r}, key={_short(self.key)}, "
                f"value={_short(self.value)}, headers={self.headers!r})")

    def __reduce__(self):
        return (Record, (_plain(self.key), _plain(self.value), [(k, _plain(v)) for k, v in self.headers],
                         self.timestamp, self.offset, self.timestamp_type, self.attributes, self.control))
