"""Arrow arrays made from buffers.

``pyarrow.array()`` looks for pandas objects in what it is given, which
imports pandas (when installed) on its first call; the log reader builds
its columns from numpy arrays and Python values through these instead, so
that reading a log never loads pandas unless the caller does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["bools", "constant_int", "constant_string", "numbers", "strings"]


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


def constant_string(value: str, n: int) -> pa.Array:
    """``n`` times the same string (large_string)."""
    data = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int64) * len(data)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


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


def column(table: pa.Table, name: str, zero_copy_only: bool = True) -> np.ndarray:
    """A table's column as numpy (see :func:`to_numpy`)."""
    return to_numpy(table.column(name))


def array(values) -> pa.Array:
    """One array for a column (its chunks joined when there are several)."""
    if isinstance(values, pa.ChunkedArray):
        return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    return values
