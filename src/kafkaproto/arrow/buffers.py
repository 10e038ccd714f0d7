"""Arrow arrays made from buffers, and numbers read out of them, without pandas.

pyarrow imports pandas (when installed: a third of a second of CPU) on the
first ``pyarrow.array()`` or ``pyarrow.scalar()`` it is given (it looks for
pandas objects in it, so also on a compute function given a Python value),
on the first ``to_numpy()`` (its conversion sets up pandas' data), on
``Schema.empty_table()``, on a tz-aware timestamp's ``to_pylist()`` and on
``import pyarrow.dataset`` (so on ``Table.group_by(...).aggregate()``).  The
log reader, the capture dataset and the report build their columns and read
them through these instead, so that none of them loads pandas unless the
caller does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# pyarrow.acero imports pyarrow.dataset, which imports pandas: the plan's nodes from their own module
from pyarrow._acero import AggregateNodeOptions, Declaration, TableSourceNodeOptions

__all__ = ["array", "bools", "column", "constant_int", "constant_string", "empty_table", "fill_null", "group_by",
           "masked", "nullable", "numbers", "pick", "scalar", "strings", "to_numpy", "valid"]


def numbers(values, typ: pa.DataType) -> pa.Array:
    """A fixed-width numeric array of ``typ`` from a numpy array (or sequence) of numbers."""
    arr = np.ascontiguousarray(values, dtype=typ.to_pandas_dtype())
    return pa.Array.from_buffers(typ, len(arr), [None, pa.py_buffer(arr)])


def bools(values) -> pa.Array:
    """A boolean array from a numpy array (or sequence) of truth values."""
    arr = np.ascontiguousarray(values, dtype=bool)
    return pa.Array.from_buffers(pa.bool_(), len(arr), [None, pa.py_buffer(np.packbits(arr, bitorder="little"))])


def constant_int(value: int, n: int, typ: pa.DataType) -> pa.Array:
    return numbers(np.full(n, value, dtype=typ.to_pandas_dtype()), typ)


def constant_string(value: str, n: int, typ: pa.DataType | None = None) -> pa.Array:
    """``n`` times the same string (large_string unless ``typ`` says string)."""
    typ = pa.large_string() if typ is None else typ
    data = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int64 if typ == pa.large_string() else np.int32) * len(data)
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def strings(values, typ: pa.DataType | None = None) -> pa.Array:
    """A string array (large_string unless ``typ`` says string) from Python strings (None: null)."""
    typ = pa.large_string() if typ is None else typ
    n = len(values)
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64 if typ == pa.large_string() else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def to_numpy(arr) -> np.ndarray:
    """A fixed-width array's values (or a boolean array's) as numpy, read from its buffer (nulls hold
    whatever the buffer has: see :func:`valid`); pyarrow's own to_numpy() imports pandas first."""
    arr = array(arr)
    n, off = len(arr), arr.offset
    data = arr.buffers()[1]
    if arr.type == pa.bool_():
        if data is None or n == 0:
            return np.zeros(n, dtype=bool)
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little", count=off + n)
        return bits[off:].astype(bool)
    dtype = np.dtype(np.int64) if pa.types.is_timestamp(arr.type) else np.dtype(arr.type.to_pandas_dtype())
    if data is None or n == 0:
        return np.zeros(n, dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=n, offset=off * dtype.itemsize)


def valid(arr) -> np.ndarray:
    """Which values of an array are not null."""
    arr = array(arr)
    n, bitmap = len(arr), arr.buffers()[0]
    if bitmap is None or arr.null_count == 0:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little", count=arr.offset + n)
    return bits[arr.offset:].astype(bool)


def column(table: pa.Table, name: str) -> np.ndarray:
    """A table's column as numpy (see :func:`to_numpy`)."""
    return to_numpy(table.column(name))


def array(values) -> pa.Array:
    """One array for a column (its chunks joined when there are several)."""
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 0:  # (combine_chunks() of no chunks imports pandas)
            return pa.nulls(0, values.type)
        return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    return values


def masked(values, ok, typ: pa.DataType) -> pa.Array:
    """``values`` (numbers) as ``typ`` with nulls where not ``ok``."""
    arr = np.ascontiguousarray(values, dtype=typ.to_pandas_dtype())
    ok = np.asarray(ok, dtype=bool)
    if ok.all():
        return pa.Array.from_buffers(typ, len(arr), [None, pa.py_buffer(arr)])
    return pa.Array.from_buffers(typ, len(arr), [pa.py_buffer(np.packbits(ok, bitorder="little")), pa.py_buffer(arr)],
                                 null_count=int(len(ok) - np.count_nonzero(ok)))


def pick(texts, idx, typ: pa.DataType | None = None) -> pa.Array:
    """``texts[i]`` for each ``i`` of ``idx`` (null where ``i`` is negative); ``texts`` is a string
    array or a sequence of strings (then the result is ``typ``, default string)."""
    if not isinstance(texts, pa.Array):
        texts = strings(list(texts), pa.string() if typ is None else typ)
    idx = np.asarray(idx)
    ok = idx >= 0
    if not len(texts):
        return pa.nulls(len(idx), texts.type)
    return texts.take(masked(np.where(ok, idx, 0), ok, pa.int32()))


def nullable(values, typ: pa.DataType) -> pa.Array:
    """A fixed-width numeric array of ``typ`` from a sequence of Python numbers and Nones (nulls)."""
    ok = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return masked([0 if v is None else v for v in values], ok, typ)


def scalar(value, typ: pa.DataType) -> pa.Scalar:
    """A pyarrow scalar of ``typ`` (``pyarrow.scalar()`` would import pandas): give it to compute
    functions in place of a Python value."""
    if value is None:
        return pa.nulls(1, typ)[0]
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return strings([value], typ)[0]
    if pa.types.is_fixed_size_binary(typ):
        return pa.Array.from_buffers(typ, 1, [None, pa.py_buffer(bytes(value))])[0]
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        width = np.int64 if pa.types.is_large_binary(typ) else np.int32
        offsets = np.array([0, len(value)], dtype=width)
        return pa.Array.from_buffers(typ, 1, [None, pa.py_buffer(offsets), pa.py_buffer(bytes(value))])[0]
    if pa.types.is_boolean(typ):
        return bools([value])[0]
    return numbers([value], typ)[0]


def fill_null(values, value):
    """``values`` (an array or chunked array) with its nulls replaced by ``value``."""
    return pc.fill_null(values, scalar(value, values.type))


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows."""
    return pa.Table.from_batches([], schema=schema)


def group_by(table: pa.Table, keys, aggregations, use_threads: bool = False) -> pa.Table:
    """``table.group_by(keys, use_threads).aggregate(aggregations)``, same arguments and result,
    planned on Acero directly: ``aggregate`` imports ``pyarrow.dataset``, which imports pandas."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    plan = []
    for aggr in aggregations:
        target, func, opt = aggr if len(aggr) == 3 else (*aggr, None)
        target = list(target) if isinstance(target, (list, tuple)) else [target]
        base = func[5:] if func.startswith("hash_") else func
        func = "hash_" + base if keys else base
        plan.append((target, func, opt, "_".join(target) + "_" + base if target else base))
    return Declaration.from_sequence([
        Declaration("table_source", TableSourceNodeOptions(table)),
        Declaration("aggregate", AggregateNodeOptions(plan, keys=keys)),
    ]).to_table(use_threads=use_threads)
