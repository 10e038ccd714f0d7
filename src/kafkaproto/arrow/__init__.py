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
from ..records import DEFAULT_MAX_DECOMPRESSED_SIZE
from ._build import (  # noqa: F401  (the helpers the log reader and the tests use from here too)
    _AS_BINARY,
    _ERROR,
    _IN_KIND,
    _RECORD_COLUMNS,
    _RECORD_LAYOUTS,
    _RECORD_NAMES,
    _STRING_LAYOUT,
    _TRAILING,
    BATCHES_SCHEMA,
    RECORDS_SCHEMA,
    REQUEST_HEADER_TYPE,
    RESPONSE_HEADER_TYPE,
    _all_null,
    _batches_table,
    _binary_array,
    _chunks,
    _errors,
    _field_type,
    _fixed,
    _from_tree,
    _int_column,
    _layout,
    _message_class,
    _message_column,
    _message_info,
    _ok_validity,
    _pass_through,
    _per_chunk,
    _records_schema,
    _records_table,
    _request_headers,
    _response_headers,
    _sparse_strings,
    _struct_type,
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


def message_type(api_key: int, kind: str = "request") -> pa.StructType:
    """The struct type :func:`messages` returns for ``api_key``: every field of
    every version, plus ``trailing_bytes`` (bytes after the body; null for a
    row that did not decode) and ``error``."""
    return _message_info(_message_class(api_key, kind))[0]


def request_headers(frames):
    """Request frames (without their size prefix) → struct column of :data:`REQUEST_HEADER_TYPE`.

    The header version follows from each frame's api key and version
    (:func:`kafkaproto.request_header_version`); ``header_size`` is where
    the body starts.
    """
    return _HEADERS.request_headers_array(frames)


def response_headers(frames, api_key, api_version):
    """Response frames → struct column of :data:`RESPONSE_HEADER_TYPE`.

    A response does not name its API: ``api_key`` and ``api_version`` (those of
    the requests answered: ints, or columns with one value per frame) decide
    the header version (ApiVersions responses always use v0).
    """
    return _HEADERS.response_headers_array(frames, api_key, api_version)


# ---------------------------------------------------------------------------
# messages


def messages(frames, api_key: int, kind: str = "request", api_version=None, *, header_size=None):
    """Frames of one API key → a struct column of :func:`message_type`.

    Request frames carry their version in the header.  Response frames need
    ``api_version`` (an int, or a column with one version per frame: that of
    the request each one answers).  A frame of another API key, an unsupported
    version or bytes that do not decode give a row of nulls with ``error`` set.

    ``header_size`` (an int, or a column with one per frame, as
    :func:`request_headers` / :func:`response_headers` or a capture's frame
    table give it) says where each body starts: those headers are not read
    again, and ``api_version`` (then needed for requests too) gives each
    frame's version; the caller vouches that the frames are of ``api_key``.
    A null (or negative) header size reads that frame's header as usual.
    Errors and ``trailing_bytes`` are the same either way (byte offsets count
    from the frame's start).
    """
    return _MESSAGES.messages_array(frames, _message_class(api_key, kind), api_version, header_size)


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
