"""Types of kafkaproto.arrow._columns (_columns.pyx), the column memory the
compiled Arrow loops share, and of its twin _columns_py.

The compiled module's classes (``CMem``, a malloc'd block exposed through the
buffer protocol, ``RowsIn``, the input rows of a loop, and ``IntsIn``, an int
argument of a loop: a value or a column) are C-level types
the other loops use through _columns.pxd; the twin builds the same column
trees from lists and bytes instead.  What both hand to kafkaproto.arrow is a
column tree, described here for the other loops' stubs.
"""

from typing import TypeAlias

from _typeshed import ReadableBuffer

#: One output column: (length, null count, validity bitmap or None, buffers,
#: children), the parts pyarrow.Array.from_buffers takes.
_Column: TypeAlias = tuple[int, int, ReadableBuffer | None, tuple[ReadableBuffer, ...], tuple[_Column, ...]]
#: Failed rows: row -> the error text the object decoders raise for it.
_Errors: TypeAlias = dict[int, str]

COMPILED: bool
