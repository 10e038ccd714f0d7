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
)
from ..errors import frame_size_error
from ..messages import request_class, response_class
from ..messages._runtime import build_plan
from ..records._compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from . import _common
from ._build import (  # noqa: F401  (the helpers the log reader and the tests use from here too)
    _AS_BINARY,
    _ERROR,
    _IN_KIND,
    _RECORD_COLUMNS,
    _RECORD_LAYOUTS,
    _RECORD_NAMES,
    _STRING_LAYOUT,
    BATCHES_SCHEMA,
    RECORDS_SCHEMA,
    _all_null,
    _batches_table,
    _binary_array,
    _chunks,
    _errors,
    _fixed,
    _from_tree,
    _layout,
    _ok_validity,
    _pass_through,
    _per_chunk,
    _records_schema,
    _records_table,
    _sparse_strings,
    _total,
    _validity,
)

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
    return _RECORDS.records_table(blobs, topic, partition, columns, check_crc, max_decompressed_size, batches,
                                  max_records_per_batch, max_headers_per_record, max_headers_per_batch, control,
                                  partial, max_records_per_call, max_headers_per_call, max_decompressed_per_call)
