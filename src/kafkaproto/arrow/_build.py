"""What the Arrow decoders and their twins share in Python: their input
checks, the output types, and the building of pyarrow arrays from column
trees (the twins' way out; the compiled loops hand theirs to pyarrow through
the Arrow C data interface).  ``records_tables``, ``messages_array``,
``request_headers_array`` and ``response_headers_array`` are the twins'
``arrow.records``, ``arrow.messages`` and ``arrow.*_headers``, over a loop
module's column-tree functions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

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
from ..messages import request_class, response_class, version_plans
from ..records import DEFAULT_MAX_DECOMPRESSED_SIZE
from ..records.walk import CallBudget
from . import _common
from .buffers import bools, empty_table, fill_null, masked, numbers, to_numpy, valid

_IN_KIND = {pa.binary(): 0, pa.large_binary(): 1, pa.binary_view(): 2}
#: the compiled calls' fast paths: an input array's class -> its row layout (_columns IN_*),
#: an integer array's class -> its value width in bytes (negative: unsigned)
ARRAY_KIND = {pa.lib.BinaryArray: 0, pa.lib.LargeBinaryArray: 1, pa.lib.BinaryViewArray: 2}
INT_WIDTH = {
    pa.lib.Int8Array: 1, pa.lib.Int16Array: 2, pa.lib.Int32Array: 4, pa.lib.Int64Array: 8,
    pa.lib.UInt8Array: -1, pa.lib.UInt16Array: -2, pa.lib.UInt32Array: -4, pa.lib.UInt64Array: -8,
}
_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary(), pa.string_view(): pa.binary_view()}

_ERROR = pa.field("error", pa.large_string())


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


def _batches_table(walked: dict) -> pa.Table:
    cols = [bools(walked[f.name]) if f.type == pa.bool_() else numbers(walked[f.name], f.type)
            for f in BATCHES_SCHEMA if f.name != "error"]
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
        row_np = to_numpy(rows)
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


def records_tables(lib, blobs, topic=None, partition=None, columns=None, check_crc=True,
                   max_decompressed_size=DEFAULT_MAX_DECOMPRESSED_SIZE, batches=False,
                   max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                   max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                   max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH, control=False, partial=False,
                   max_records_per_call=DEFAULT_ARROW_MAX_RECORDS_PER_CALL,
                   max_headers_per_call=DEFAULT_ARROW_MAX_HEADERS_PER_CALL,
                   max_decompressed_per_call=DEFAULT_ARROW_MAX_DECOMPRESSED_PER_CALL):
    """kafkaproto.arrow.records over ``lib.arrow_records`` (the twin's way: a column
    tree per chunk, its arrays built here)."""
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
        t = _records_table(lib, arr, kind, None if topic is None else topic[start:start + len(arr)],
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
        table = pa.concat_tables(tables) if tables else empty_table(pa.schema(fields))
    if not batches:
        return table
    return table, (walks[0] if len(walks) == 1 else pa.concat_tables(walks) if walks else empty_table(BATCHES_SCHEMA))


# ---------------------------------------------------------------------------
# headers and messages: their types, and the twins' assembly

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


#: the range of each int argument of the header and message decoders (a value
#: outside it is no valid one: -1, which the loops reject or, for a header size,
#: read the header instead)
_INT_RANGE = {"api_key": (-32768, 32767), "api_version": (-32768, 32767), "header_size": (0, 0x7FFFFFFF)}


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
        if isinstance(values, pa.Array) and pa.types.is_integer(values.type):
            ok = valid(values).astype(np.uint8)
            v = to_numpy(values if values.null_count == 0 else fill_null(values, 0))
        elif isinstance(values, pa.Array):
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
    lo, hi = _INT_RANGE[what]
    bad = (v < lo) | (v > hi)
    if bad.any():
        v = np.where(bad, -1, v)
    return np.ascontiguousarray(v, dtype=np.int32), np.ascontiguousarray(ok, dtype=np.uint8)


def _request_headers(lib, arr, kind):
    status, key, ver, corr, hsize, cid, errors = lib.arrow_request_headers(arr, kind, _common.header_table(True))
    vbuf, nulls = _ok_validity(status)
    children = [
        _fixed(pa.int16(), key, vbuf, nulls), _fixed(pa.int16(), ver, vbuf, nulls),
        _fixed(pa.int32(), corr, vbuf, nulls), _from_tree(_STRING_LAYOUT, cid),
        _fixed(pa.int32(), hsize, vbuf, nulls), _errors(len(status), errors),
    ]
    return pa.StructArray.from_arrays(children, fields=list(REQUEST_HEADER_TYPE))


def request_headers_array(lib, frames):
    """arrow.request_headers over ``lib.arrow_request_headers`` (the twin's way)."""
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=REQUEST_HEADER_TYPE)
    return _per_chunk(frames, lambda arr, kind: _request_headers(lib, arr, kind))


def _response_headers(lib, arr, kind, keys, kvalid, vers, vvalid):
    ok = (kvalid & vvalid).astype(np.uint8)
    status, corr, hsize, errors = lib.arrow_response_headers(arr, kind, _common.header_table(False), keys, vers, ok)
    vbuf, nulls = _ok_validity(status)
    children = [
        _fixed(pa.int16(), keys.astype(np.int16), vbuf, nulls), _fixed(pa.int16(), vers.astype(np.int16), vbuf, nulls),
        _fixed(pa.int32(), corr, vbuf, nulls), _fixed(pa.int32(), hsize, vbuf, nulls), _errors(len(status), errors),
    ]
    return pa.StructArray.from_arrays(children, fields=list(RESPONSE_HEADER_TYPE))


def response_headers_array(lib, frames, api_key, api_version):
    """arrow.response_headers over ``lib.arrow_response_headers`` (the twin's way)."""
    n = _total(frames)
    keys, kvalid = _int_column(api_key, n, "api_key")
    vers, vvalid = _int_column(api_version, n, "api_version")
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=RESPONSE_HEADER_TYPE)
    return _per_chunk(frames, lambda arr, kind, k, kv, v, vv: _response_headers(lib, arr, kind, k, kv, v, vv),
                      keys, kvalid, vers, vvalid)


def message_plans(lib, cls) -> tuple:
    """What ``lib.arrow_messages`` is handed as its plans: those of the engine it runs
    (none for the twin, which decodes with the message classes)."""
    return () if lib.ENGINE is None else version_plans(cls, lib.ENGINE)


def _message_column(lib, arr, kind, cls, vers=None, vvalid=None, hsizes=None):
    typ, fields, layouts = _message_info(cls)
    status, tree, errors, trailing = lib.arrow_messages(arr, kind, cls, message_plans(lib, cls),
                                                        _common.header_table(cls.KIND == "request"), vers, vvalid,
                                                        hsizes)
    children = [_from_tree(lay, kid) for lay, kid in zip(layouts, tree[4])]
    children.append(masked(trailing, trailing >= 0, pa.int32()))
    children.append(_errors(len(status), errors))
    return pa.StructArray.from_arrays(children, fields=fields)


def message_args(cls, n: int, api_version, header_size):
    """arrow.messages' version and header-size arguments → (versions, their validity,
    header sizes (-1: read the header) or None); (None, None, None) for request
    frames read whole."""
    if header_size is None:
        if cls.KIND == "request":
            return None, None, None
        vers, vvalid = _int_column(api_version, n, "api_version")
        return vers, vvalid, None
    if api_version is None:
        raise TypeError("header_size needs api_version: the versions of frames whose headers are not read")
    vers, vvalid = _int_column(api_version, n, "api_version")
    hs, hvalid = _int_column(header_size, n, "header_size")
    return vers, vvalid, np.where(hvalid != 0, hs, -1).astype(np.int32)


def messages_array(lib, frames, cls, api_version=None, header_size=None):
    """arrow.messages over ``lib.arrow_messages`` (the twin's way)."""
    if isinstance(frames, pa.ChunkedArray) and frames.num_chunks == 0:
        return pa.chunked_array([], type=_message_info(cls)[0])
    vers, vvalid, hsizes = message_args(cls, _total(frames), api_version, header_size)
    if vers is None:
        return _per_chunk(frames, lambda arr, k: _message_column(lib, arr, k, cls))
    if hsizes is None:
        return _per_chunk(frames, lambda arr, k, v, vv: _message_column(lib, arr, k, cls, v, vv), vers, vvalid)
    return _per_chunk(frames, lambda arr, k, v, vv, hs: _message_column(lib, arr, k, cls, v, vv, hs),
                      vers, vvalid, hsizes)
