"""Vectorized decoders from Arrow binary columns to Arrow columns.

Inputs are pyarrow ``binary`` / ``large_binary`` / ``binary_view`` arrays (or
chunked arrays, or anything :func:`pyarrow.array` turns into binary: lists of
bytes, pandas Series...).  Outputs are built from buffers the compiled core
fills without the GIL (:func:`pyarrow.Array.from_buffers`); variable-width
values use 64-bit offsets (``large_string``, ``large_binary``, ``large_list``)
so a batch may hold more than 2 GiB.

- :func:`split_frames`: a stream (bytes, or a binary array of consecutive
  stream chunks) → one row per frame, plus the unconsumed tail;
- :func:`request_headers` / :func:`response_headers`: frames → a struct per
  frame (api key, api version, correlation id, client id, header size);
- :func:`messages`: frames of one API key → one struct type per API key, the
  union of the fields of all its versions (a field a version lacks is null),
  so a column mixing versions has one schema (:func:`message_type`);
- :func:`records`: records blobs (Produce/Fetch ``records`` fields) → one row
  per record, in the shape of Spark's Kafka source (:data:`RECORDS_SCHEMA`).

A row that cannot be decoded never fails the batch: its fields are null and
its ``error`` field says why, in the words of the object decoders
(:func:`kafkaproto.decode_request`...).  Rows in = rows decoded (``error``
null) + rows with an error.

Field types: Kafka's unsigned ``uint16`` / ``uint32`` widen to ``int32`` /
``int64`` (Spark has no unsigned integers); ``uuid`` is ``fixed_size_binary(16)``;
``records`` fields stay raw bytes (``large_binary``).  Unknown tagged fields
are checked and skipped.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from .. import _kinds as K
from .._impl import engine as _engine
from .._impl import load
from .._limits import (
    DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL,
    DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
    DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_HEADERS_PER_BATCH,
    DEFAULT_MAX_HEADERS_PER_RECORD,
    DEFAULT_MAX_RECORDS_PER_BATCH,
    call_caps,
    record_caps,
)
from ..errors import frame_size_error
from ..messages import request_class, response_class
from ..messages._runtime import build_plan
from ..records._common import CallBudget
from ..records._compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from . import _common

# the loops, compiled or their twins (same buffers, computed with the object decoders)
_HEADERS = load("arrow._headers")
_MESSAGES = load("arrow._messages")
_FRAMES = load("arrow._frames")
_RECORDS = load("arrow._records")

__all__ = [
    "BATCHES_SCHEMA",
    "RECORDS_SCHEMA",
    "REQUEST_HEADER_TYPE",
    "RESPONSE_HEADER_TYPE",
    "SplitFrames",
    "message_type",
    "messages",
    "records",
    "request_headers",
    "response_headers",
    "split_frames",
]

_IN_KIND = {pa.binary(): 0, pa.large_binary(): 1, pa.binary_view(): 2}
_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary(), pa.string_view(): pa.binary_view()}

_ERROR = pa.field("error", pa.large_string())
#: bytes a frame had after its message body (Kafka ignores them; decode_request keeps them)
_TRAILING = pa.field("trailing_bytes", pa.int32())

REQUEST_HEADER_TYPE = pa.struct([
    ("api_key", pa.int16()), ("api_version", pa.int16()), ("correlation_id", pa.int32()),
    ("client_id", pa.large_string()), ("header_size", pa.int32()), _ERROR,
])

RESPONSE_HEADER_TYPE = pa.struct([
    ("api_key", pa.int16()), ("api_version", pa.int16()), ("correlation_id", pa.int32()),
    ("header_size", pa.int32()), _ERROR,
])

_SCALAR = {
    K.BOOL: pa.bool_(), K.INT8: pa.int8(), K.INT16: pa.int16(), K.INT32: pa.int32(), K.INT64: pa.int64(),
    K.UINT16: pa.int32(), K.UINT32: pa.int64(), K.FLOAT64: pa.float64(), K.UUID: pa.binary(16),
    K.STRING: pa.large_string(), K.BYTES: pa.large_binary(), K.RECORDS: pa.large_binary(),
}


# ---------------------------------------------------------------------------
# types


def _field_type(f):
    if f.kind == K.ARRAY:
        return pa.large_list(_struct_type(f.struct) if f.elem == K.STRUCT else _SCALAR[f.elem])
    if f.kind == K.STRUCT:
        return _struct_type(f.struct)
    return _SCALAR[f.kind]


def _struct_type(cls):
    return pa.struct([pa.field(f.attr, _field_type(f)) for f in cls._FIELDS])


def _message_class(api_key: int, kind: str):
    if kind == "request":
        return request_class(api_key)
    if kind == "response":
        return response_class(api_key)
    raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")


# per message class: (struct type, its fields, layouts of the columns); keyed by
# class because hashing a nested pyarrow type costs tens of microseconds
_TYPES: dict = {}


def _message_info(cls):
    got = _TYPES.get(cls)
    if got is None:
        typ = pa.struct(list(_struct_type(cls)) + [_TRAILING, _ERROR])
        got = (typ, list(typ), _layout(typ)[2])
        _TYPES[cls] = got
    return got


def message_type(api_key: int, kind: str = "request") -> pa.StructType:
    """The struct type :func:`messages` returns for ``api_key``: every field of
    every version, plus ``trailing_bytes`` (bytes after the body; null for a
    row that did not decode) and ``error``."""
    return _message_info(_message_class(api_key, kind))[0]


# ---------------------------------------------------------------------------
# inputs


def _binary_array(x) -> tuple[pa.Array, int]:
    if isinstance(x, (bytes, bytearray, memoryview)):
        raise TypeError("expected a column of frames (a binary array), got one bytes object: wrap it in a list")
    if not isinstance(x, pa.Array):
        x = pa.array(x, type=pa.large_binary())
    t = x.type
    if t in _AS_BINARY:
        x = x.view(_AS_BINARY[t])
        t = x.type
    elif pa.types.is_fixed_size_binary(t) or pa.types.is_null(t):
        x = x.cast(pa.large_binary())
        t = x.type
    kind = _IN_KIND.get(t)
    if kind is None:
        raise TypeError(f"expected a binary column, got {t}")
    return x, kind


def _chunks(frames):
    """→ ([(array, kind)], chunked?)"""
    if isinstance(frames, pa.ChunkedArray):
        return [_binary_array(c) for c in frames.chunks], True
    return [_binary_array(frames)], False


def _int_column(values, n: int, what: str):
    """An int argument (scalar or per-row column) → (int32 ndarray, uint8 validity)."""
    if values is None:
        raise TypeError(f"{what} is required")
    if isinstance(values, (int, np.integer)):
        v = np.full(n, int(values), dtype=np.int64)
        ok = np.ones(n, dtype=np.uint8)
    else:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if isinstance(values, pa.Array):
            ok = np.ones(n, dtype=np.uint8) if values.null_count == 0 else \
                values.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
            v = values.fill_null(0).to_numpy(zero_copy_only=False)
        else:
            arr = np.asarray(values)
            if arr.dtype == object:
                ok = np.array([x is not None for x in arr], dtype=np.uint8)
                v = np.array([0 if x is None else x for x in arr], dtype=np.int64)
            else:
                v = arr
                ok = np.ones(n, dtype=np.uint8)
        if len(v) != n:
            raise ValueError(f"{what}: {len(v)} values for {n} frames")
        v = np.asarray(v, dtype=np.int64)
    # out of the int16 range: not a valid key or version (the loops reject -1)
    bad = (v < -32768) | (v > 32767)
    if bad.any():
        v = np.where(bad, -1, v)
    return np.ascontiguousarray(v, dtype=np.int32), np.ascontiguousarray(ok, dtype=np.uint8)


# ---------------------------------------------------------------------------
# outputs


def _validity(valid, n: int):
    """0/1 bytes → (bitmap buffer or None, null count)."""
    v = np.frombuffer(valid, dtype=np.uint8, count=n)
    nulls = n - int(np.count_nonzero(v))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(v, bitorder="little")), nulls


_STRUCT, _LIST, _FLAT = range(3)


def _layout(typ):
    """How to rebuild ``typ`` from a column tree: (how, type, child layouts)."""
    if pa.types.is_struct(typ):
        return (_STRUCT, typ, tuple(_layout(typ.field(k).type) for k in range(typ.num_fields)))
    if pa.types.is_large_list(typ):
        return (_LIST, typ, (_layout(typ.value_type),))
    return (_FLAT, typ, ())


_STRING_LAYOUT = _layout(pa.large_string())


def _from_tree(layout, node):
    """A column tree (length, null count, bitmap, buffers, children) → pyarrow array."""
    how, typ, kid_layouts = layout
    n, nulls, bitmap, bufs, kids = node
    buffers = [None if bitmap is None else pa.py_buffer(bitmap)]
    buffers += [pa.py_buffer(b) for b in bufs]
    if how == _FLAT:
        return pa.Array.from_buffers(typ, n, buffers, null_count=nulls)
    children = [_from_tree(lay, kid) for lay, kid in zip(kid_layouts, kids)]
    return pa.Array.from_buffers(typ, n, buffers, null_count=nulls, children=children)


_ZEROS = [pa.py_buffer(bytes(1 << 16))]


def _zeros(size: int) -> pa.Buffer:
    """``size`` zero bytes, sliced from one shared read-only buffer."""
    if _ZEROS[0].size < size:
        _ZEROS[0] = pa.py_buffer(bytes(max(size, 2 * _ZEROS[0].size)))
    return _ZEROS[0].slice(0, size)


_NULL_COLUMNS: dict = {}


def _all_null(typ, n: int) -> pa.Array:
    """A column of ``n`` nulls (int32/int64 or large string/binary) without allocating
    (arrays are immutable: the last few made are kept and handed out again)."""
    got = _NULL_COLUMNS.get((typ, n))
    if got is None:
        if len(_NULL_COLUMNS) >= 16:
            _NULL_COLUMNS.clear()
        got = _NULL_COLUMNS[(typ, n)] = _make_all_null(typ, n)
    return got


def _make_all_null(typ, n: int) -> pa.Array:
    bitmap = _zeros((n + 7) // 8)
    if pa.types.is_large_string(typ) or pa.types.is_large_binary(typ):
        return pa.Array.from_buffers(typ, n, [bitmap, _zeros((n + 1) * 8), _zeros(0)], null_count=n)
    return pa.Array.from_buffers(typ, n, [bitmap, _zeros(n * typ.bit_width // 8)], null_count=n)


def _errors(n: int, errors: dict) -> pa.Array:
    """The error column: null, but at the rows the loop failed: the object decoders' text for them
    (the loops keep each failure's record, so no row is decoded twice)."""
    if not errors:
        return _all_null(pa.large_string(), n)
    idx = np.fromiter(sorted(errors), dtype=np.int64, count=len(errors))
    return _sparse_strings(n, idx, [errors[int(i)] for i in idx])


def _sparse_strings(n, idx, texts) -> pa.Array:
    """A large_string column of ``n`` rows: ``texts`` at rows ``idx``, null elsewhere."""
    data = [t.encode("utf-8") for t in texts]
    lengths = np.zeros(n, dtype=np.int64)
    lengths[idx] = [len(t) for t in data]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.zeros(n, dtype=np.uint8)
    valid[idx] = 1
    return pa.Array.from_buffers(pa.large_string(), n, [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                         pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
                                 null_count=n - len(idx))


def _fixed(typ, data, vbuf, nulls):
    return pa.Array.from_buffers(typ, len(data), [vbuf, pa.py_buffer(data)], null_count=nulls)


def _ok_validity(status):
    return _validity((status == 0).view(np.uint8), len(status))


def _per_chunk(frames, fn, *columns):
    """Run ``fn(array, kind, *column_slices)`` per chunk; chunked in → chunked out."""
    chunks, chunked = _chunks(frames)
    out, start = [], 0
    for arr, kind in chunks:
        n = len(arr)
        out.append(fn(arr, kind, *[c[start:start + n] for c in columns]))
        start += n
    if chunked:
        return pa.chunked_array(out, type=out[0].type if out else None) if out else pa.chunked_array([], type=None)
    return out[0]


def _total(frames) -> int:
    return len(frames)


# ---------------------------------------------------------------------------
# headers


def _request_headers(lib, arr, kind):
    status, key, ver, corr, hsize, cid, errors = lib.arrow_request_headers(arr, kind, _common.header_table(True))
    vbuf, nulls = _ok_validity(status)
    children = [
        _fixed(pa.int16(), key, vbuf, nulls), _fixed(pa.int16(), ver, vbuf, nulls),
        _fixed(pa.int32(), corr, vbuf, nulls), _from_tree(_STRING_LAYOUT, cid),
        _fixed(pa.int32(), hsize, vbuf, nulls), _errors(len(status), errors),
    ]
    return pa.StructArray.from_arrays(children, fields=list(REQUEST_HEADER_TYPE))


def request_headers(frames):
    """Request frames (without their size prefix) → struct column of :data:`REQUEST_HEADER_TYPE`.

    The header version follows from each frame's api key and version
    (:func:`kafkaproto.request_header_version`); ``header_size`` is where
    the body starts.
    """
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=REQUEST_HEADER_TYPE)
    return _per_chunk(frames, lambda arr, kind: _request_headers(_HEADERS, arr, kind))


def _response_headers(lib, arr, kind, keys, kvalid, vers, vvalid):
    ok = (kvalid & vvalid).astype(np.uint8)
    status, corr, hsize, errors = lib.arrow_response_headers(arr, kind, _common.header_table(False), keys, vers, ok)
    vbuf, nulls = _ok_validity(status)
    children = [
        _fixed(pa.int16(), keys.astype(np.int16), vbuf, nulls), _fixed(pa.int16(), vers.astype(np.int16), vbuf, nulls),
        _fixed(pa.int32(), corr, vbuf, nulls), _fixed(pa.int32(), hsize, vbuf, nulls), _errors(len(status), errors),
    ]
    return pa.StructArray.from_arrays(children, fields=list(RESPONSE_HEADER_TYPE))


def response_headers(frames, api_key, api_version):
    """Response frames → struct column of :data:`RESPONSE_HEADER_TYPE`.

    A response does not name its API: ``api_key`` and ``api_version`` (those of
    the requests answered: ints, or columns with one value per frame) decide
    the header version (ApiVersions responses always use v0).
    """
    n = _total(frames)
    keys, kvalid = _int_column(api_key, n, "api_key")
    vers, vvalid = _int_column(api_version, n, "api_version")
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=RESPONSE_HEADER_TYPE)
    return _per_chunk(frames, lambda arr, kind, k, kv, v, vv: _response_headers(_HEADERS, arr, kind, k, kv, v, vv),
                      keys, kvalid, vers, vvalid)


# ---------------------------------------------------------------------------
# messages


_PLANS: dict = {}


def _plans(cls, engine) -> tuple:
    """The class's plan for each version 0..63 (None where it has none), for ``engine``
    (the message engine a loop runs: the compiled loop runs compiled plans)."""
    got = _PLANS.get((cls, engine))
    if got is None:
        cache = None if engine is _engine else {}
        got = _PLANS[(cls, engine)] = tuple(
            build_plan(cls, v, cls.is_flexible(v), f"{cls.NAME} v{v}", eng=engine, cache=cache)
            if cls.supports(v) else None for v in range(64))
    return got


def _message_column(lib, arr, kind, cls, vers=None, vvalid=None):
    typ, fields, layouts = _message_info(cls)
    status, tree, errors, trailing = lib.arrow_messages(arr, kind, cls, _plans(cls, lib.ENGINE),
                                                        _common.header_table(cls.KIND == "request"), vers, vvalid)
    children = [_from_tree(lay, kid) for lay, kid in zip(layouts, tree[4])]
    children.append(pa.array(trailing, mask=trailing < 0, type=pa.int32()))
    children.append(_errors(len(status), errors))
    return pa.StructArray.from_arrays(children, fields=fields)


def messages(frames, api_key: int, kind: str = "request", api_version=None):
    """Frames of one API key → a struct column of :func:`message_type`.

    Request frames carry their version in the header.  Response frames need
    ``api_version`` (an int, or a column with one version per frame: that of
    the request each one answers).  A frame of another API key, an unsupported
    version or bytes that do not decode give a row of nulls with ``error`` set.
    """
    cls = _message_class(api_key, kind)
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=message_type(api_key, kind))
    if kind == "request":
        return _per_chunk(frames, lambda arr, k: _message_column(_MESSAGES, arr, k, cls))
    vers, vvalid = _int_column(api_version, _total(frames), "api_version")
    return _per_chunk(frames, lambda arr, k, v, vv: _message_column(_MESSAGES, arr, k, cls, v, vv), vers, vvalid)


# ---------------------------------------------------------------------------
# splitting a stream


class SplitFrames(NamedTuple):
    """What :func:`split_frames` found."""

    #: one row per complete frame, its size prefix removed
    frames: pa.Array
    #: bytes after the last complete frame (a partial frame), or, when
    #: ``error`` is set, everything from the bad size prefix on
    tail: bytes
    #: why splitting stopped before the end (a negative or oversized frame size)
    error: str | None = None


_WIN = 1 << 30


def _stream_array(stream) -> tuple[pa.Array, int]:
    if isinstance(stream, (bytes, bytearray, memoryview)):
        data = pa.py_buffer(stream)
        offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int64))
        return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, data]), 1
    if isinstance(stream, pa.ChunkedArray):
        stream = stream.combine_chunks() if stream.num_chunks != 1 else stream.chunk(0)
    arr, kind = _binary_array(stream)
    if kind == 2:
        arr, kind = arr.cast(pa.large_binary()), 1
    return arr, kind


def _windows(buf):
    """A region as buffers of at most 2 GiB - 1 starting every GiB (views use int32 offsets)."""
    size = buf.size if buf is not None else 0
    out = []
    for start in range(0, max(size, 1), _WIN):
        out.append(buf.slice(start, min(size - start, 2 * _WIN - 1)) if buf is not None else pa.py_buffer(b""))
    return out


def _split(lib, stream, max_frame_size, zero_copy):
    arr, kind = _stream_array(stream)
    if zero_copy and (max_frame_size < 0 or max_frame_size > _WIN):
        raise ValueError("zero-copy frames are limited to 1 GiB each: lower max_frame_size or pass zero_copy=False")
    got = lib.arrow_split_frames(arr, kind, max_frame_size, zero_copy)
    n = got["n"]
    if zero_copy:
        data = arr.buffers()[2]
        buffers = _windows(data)
        assert len(buffers) == got["side_base"]
        buffers += _windows(pa.py_buffer(got["data"]))
        frames = pa.Array.from_buffers(pa.binary_view(), n, [None, pa.py_buffer(got["views"])] + buffers)
    else:
        frames = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(got["offsets"]),
                                                               pa.py_buffer(got["data"])])
    error = None
    if got["bad_at"] >= 0:
        size, at = got["bad_size"], got["bad_at"]
        error = str(frame_size_error(size, max_frame_size, at))
    return SplitFrames(frames, got["tail"], error)


def split_frames(stream, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, zero_copy: bool = False) -> SplitFrames:
    """Cut a stream of size-prefixed frames into one row per frame.

    ``stream`` is bytes, or a binary column whose rows are consecutive pieces
    of one stream (as captured; nulls are skipped): frames may straddle rows.
    The result is a ``large_binary`` array (the bodies copied: the size
    prefixes between them keep a plain binary array from pointing into the
    stream).  With ``zero_copy=True`` it is a ``binary_view`` array whose rows
    point into the input's memory (only a frame that straddles rows is
    copied): every decoder here reads it, but pyarrow 26 cannot ``filter`` or
    ``take`` view arrays yet (``cast(pa.large_binary())`` first).  A negative
    size, or one above ``max_frame_size``, stops the split: ``error`` says where.
    """
    return _split(_FRAMES, stream, max_frame_size, zero_copy)


# ---------------------------------------------------------------------------
# records

#: What :func:`records` returns: Spark's Kafka source columns, then the index
#: of the input row each record came from and the error of a blob that does
#: not decode.
RECORDS_SCHEMA = pa.schema([
    ("key", pa.large_binary()), ("value", pa.large_binary()), ("topic", pa.large_string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
    ("headers", pa.large_list(pa.struct([("key", pa.large_string()), ("value", pa.large_binary())]))),
    ("row", pa.int64()), _ERROR,
])

# the columns the compiled loop fills, in its order
_RECORD_COLUMNS = ("key", "value", "offset", "timestamp", "timestampType", "headers", "row")
# their layouts, worked out once (timestamps are filled as int64 microseconds:
# the same buffers as the timestamp type)
_RECORD_NAMES = frozenset(RECORDS_SCHEMA.names)
_RECORD_LAYOUTS = {name: _layout(RECORDS_SCHEMA.field(name).type) for name in _RECORD_COLUMNS}


def _pass_through(values, n: int, typ, what: str):
    """A topic/partition argument → an array with one value per input row (or None)."""
    if values is None:
        return None
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        if isinstance(values, (str, int, np.integer)):
            values = [values] * n
        values = pa.array(values, type=typ)
    if len(values) != n:
        raise ValueError(f"{what}: {len(values)} values for {n} blobs")
    return values.cast(typ)


#: What ``records(..., batches=True)`` returns beside the records: one row per
#: batch the walk went through (a legacy top-level message is one), in blob
#: order: the blob's ``row``, the batch's ``position`` in it, ``magic``,
#: ``codec`` (its attributes' low bits), ``bytes`` (12 + its size), the
#: ``records`` it gave the table (control records only with ``control=True``;
#: none when its blob has an error), ``truncated`` for the partial batch at a
#: blob's end (magic and codec -1, ``bytes`` what is there); then its header:
#: ``base_offset``, ``last_offset``, ``count`` (the records it declares),
#: ``leader_epoch``, ``crc`` (unsigned), ``attributes``, ``base_timestamp``,
#: ``max_timestamp``, ``producer_id``, ``producer_epoch``, ``base_sequence``
#: (-1 where a legacy message has none), and for a control batch its first
#: record's ``control_type`` (0 ABORT, 1 COMMIT...) and ``coordinator_epoch``
#: (transaction markers), else -1.  A legacy message's base offset is its
#: first record's, its last offset the wrapper's, its timestamps the
#: wrapper's.  ``error``: null, but for the batch a ``partial=True`` walk
#: stopped at (its header fields as far as they were read, -1 beyond; ``bytes``
#: -1 when its size field is out of range).  A blob with an error lists the
#: batches before it.
BATCHES_SCHEMA = pa.schema([
    ("row", pa.int64()), ("position", pa.int64()), ("magic", pa.int8()), ("codec", pa.int8()), ("bytes", pa.int64()),
    ("records", pa.int64()), ("truncated", pa.bool_()), ("base_offset", pa.int64()), ("last_offset", pa.int64()),
    ("count", pa.int32()), ("leader_epoch", pa.int32()), ("crc", pa.int64()), ("attributes", pa.int16()),
    ("base_timestamp", pa.int64()), ("max_timestamp", pa.int64()), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()), ("base_sequence", pa.int32()), ("control_type", pa.int16()),
    ("coordinator_epoch", pa.int64()), _ERROR,
])


def _numpy_column(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy array of ``typ``'s width (or of bools) as an Arrow array, from its buffer: pa.array()
    would import pandas (when installed) to look for pandas objects in it."""
    if typ == pa.bool_():
        data = np.packbits(np.ascontiguousarray(values, dtype=bool), bitorder="little")
    else:
        data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(data)])


def _batches_table(walked: dict) -> pa.Table:
    cols = [_numpy_column(walked[f.name], f.type) for f in BATCHES_SCHEMA if f.name != "error"]
    failed = walked["error"]
    n = len(cols[0])
    if failed:
        idx = np.fromiter(sorted(failed), dtype=np.int64, count=len(failed))
        cols.append(_sparse_strings(n, idx, [failed[int(i)] for i in idx]))
    else:
        cols.append(_all_null(pa.large_string(), n))
    return pa.Table.from_arrays(cols, schema=BATCHES_SCHEMA)


def _records_table(lib, arr, kind, topic, partition, names, check_crc, limit, batches=False,
                   max_records=DEFAULT_MAX_RECORDS_PER_BATCH, max_headers=DEFAULT_MAX_HEADERS_PER_RECORD,
                   max_batch_headers=DEFAULT_MAX_HEADERS_PER_BATCH, partial=False, control=False, budget=None):
    want = [name in names or name == "row" for name in _RECORD_COLUMNS]
    status, tree, errors, walked = lib.arrow_records(arr, kind, check_crc, limit, want, batches, max_records,
                                                     max_headers, max_batch_headers, partial, control, budget=budget)
    filled = [name for name in _RECORD_COLUMNS if name in names or name == "row"]
    cols = {name: _from_tree(_RECORD_LAYOUTS[name], node) for name, node in zip(filled, tree[4])}
    rows = cols["row"]
    if "topic" in names:
        cols["topic"] = _all_null(pa.large_string(), len(rows)) if topic is None else topic.take(rows)
    if "partition" in names:
        cols["partition"] = _all_null(pa.int32(), len(rows)) if partition is None else partition.take(rows)
    if errors:
        bad = np.fromiter(errors, dtype=np.int64, count=len(errors))
        row_np = rows.to_numpy()
        # an error row is the only row of its blob: find them by row index
        err_rows = np.flatnonzero(np.isin(row_np, bad))
        cols["error"] = _sparse_strings(len(rows), err_rows, [errors[int(row_np[j])] for j in err_rows])
    else:
        cols["error"] = _all_null(pa.large_string(), len(rows))
    schema = _records_schema(frozenset(names))
    table = pa.Table.from_arrays([cols[name] for name in schema.names], schema=schema)
    if not batches:
        return table
    return table, _batches_table(walked)


_SCHEMAS: dict = {}


def _records_schema(names: frozenset) -> pa.Schema:
    got = _SCHEMAS.get(names)
    if got is None:
        got = _SCHEMAS[names] = pa.schema([f for f in RECORDS_SCHEMA if f.name in names])
    return got


def records(blobs, *, topic=None, partition=None, columns=None, check_crc: bool = True,
            max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, batches: bool = False,
            max_records_per_batch: int | None = DEFAULT_MAX_RECORDS_PER_BATCH,
            max_headers_per_record: int | None = DEFAULT_MAX_HEADERS_PER_RECORD,
            max_headers_per_batch: int | None = DEFAULT_MAX_HEADERS_PER_BATCH, control: bool = False,
            partial: bool = False, max_records_per_call: int | None = DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
            max_headers_per_call: int | None = DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
            max_decompressed_per_call: int | None = DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL):
    """Records blobs (one per row: a Produce/Fetch ``records`` field, a log
    segment...) → a table with one row per record, columns of :data:`RECORDS_SCHEMA`.

    Every batch format (v2, legacy v0/v1) and codec; a partial batch at the
    end of a blob is skipped (normal in Fetch responses); control records are
    left out, as a consumer does (aborted transactions are not: that needs the
    Fetch response's list).  ``headers`` is null for a record without any,
    duplicates and order kept; ``timestamp`` is the record's milliseconds as
    microseconds (-1 ms: none, as magic 0 writes).  ``row`` is the index of the
    blob a record came from; ``topic`` / ``partition`` (a value or a column
    with one value per blob) are copied to each of its records.

    ``columns`` picks the output columns (``row`` and ``error`` always come):
    ``["offset", "timestamp"]`` parses every record but copies no key, value
    or header.  A blob that does not decode gives one row: nulls, its ``row``,
    and ``error``.

    ``batches=True`` returns ``(records table, batches table)``: the second
    (:data:`BATCHES_SCHEMA`) says what the records came in, from the same walk.
    ``control=True`` keeps control records as rows (their key and value as
    stored).  ``partial=True`` (with ``batches=True``: how a log segment is
    read) stops a blob at its first bad batch but keeps the records of the
    batches before it: that batch is listed among the batches with its
    ``error``, and the blob gets no error row.

    ``max_decompressed_size``, ``max_records_per_batch``,
    ``max_headers_per_record`` and ``max_headers_per_batch`` cap what one
    batch may expand to, as in :func:`kafkaproto.records.decode`: a blob with
    a batch beyond one is an error row (the records cap is checked before its
    rows are reserved, the header caps before a record's headers are added).
    ``max_records_per_call``, ``max_headers_per_call`` and
    ``max_decompressed_per_call`` count across every batch of every row of
    the call (a whole column, even one in several chunks): the blob whose
    batches would pass one is an error row, and gives back what it took.
    """
    max_records, max_headers, max_batch_headers = record_caps(max_records_per_batch, max_headers_per_record,
                                                              max_headers_per_batch)
    # one budget for every chunk of the column
    budget = CallBudget(*call_caps(max_records_per_call, max_headers_per_call, max_decompressed_per_call))
    names = _RECORD_NAMES if columns is None else set(columns) | {"row", "error"}
    unknown = names - _RECORD_NAMES
    if unknown:
        raise ValueError(f"no such records column: {', '.join(sorted(unknown))}")
    chunks, _ = _chunks(blobs)
    n = sum(len(a) for a, _ in chunks)
    topic = _pass_through(topic, n, pa.large_string(), "topic")
    partition = _pass_through(partition, n, pa.int32(), "partition")
    if partial and not batches:
        raise ValueError("partial=True reports the failing batch in the batches table: pass batches=True too")
    tables, walks, start = [], [], 0
    for arr, kind in chunks:
        t = _records_table(_RECORDS, arr, kind, None if topic is None else topic[start:start + len(arr)],
                           None if partition is None else partition[start:start + len(arr)], names, check_crc,
                           max_decompressed_size, batches, max_records, max_headers, max_batch_headers, partial,
                           control, budget)
        if batches:
            t, w = t
            if start:
                w = w.set_column(0, "row", pa.compute.add(w.column("row"), start))
            walks.append(w)
        if start:
            t = t.set_column(t.schema.get_field_index("row"), "row", pa.compute.add(t.column("row"), start))
        tables.append(t)
        start += len(arr)
    if len(tables) == 1:
        table = tables[0]
    else:
        fields = [f for f in RECORDS_SCHEMA if f.name in names]
        table = pa.concat_tables(tables) if tables else pa.schema(fields).empty_table()
    if not batches:
        return table
    return table, (walks[0] if len(walks) == 1 else pa.concat_tables(walks) if walks else BATCHES_SCHEMA.empty_table())
