"""Pure-Python twin of the column memory (``_columns.pyx``): the same column
trees, (length, null count, bitmap, buffers, children), from Python lists."""

from __future__ import annotations

import numpy as np

from .. import _kinds as K

COMPILED = False

FIXED = {
    K.BOOL: ("u1", 1), K.INT8: ("i1", 1), K.INT16: ("<i2", 2), K.INT32: ("<i4", 4), K.INT64: ("<i8", 8),
    K.UINT16: ("<i4", 4), K.UINT32: ("<i8", 8), K.FLOAT64: ("<f8", 8), K.UUID: (None, 16),
}


def rows(arr):
    return arr.to_pylist()


class Col:
    """One column of the output tree; `what` is fixed, var, struct or list."""

    __slots__ = ("what", "kind", "valid", "values", "offs", "kids")

    def __init__(self, what, kind=None, kids=()):
        self.what = what
        self.kind = kind
        self.valid = bytearray()
        self.values = []
        self.offs = [0]
        self.kids = list(kids)

    def null(self):
        self.valid.append(0)
        if self.what == "fixed":
            self.values.append(None)
        elif self.what == "var":
            self.values.append(b"")
            self.offs.append(self.offs[-1])
        elif self.what == "list":
            self.offs.append(self.offs[-1])
        else:
            for k in self.kids:
                k.null()

    def put(self, v):
        self.valid.append(1)
        if self.what == "var":
            self.values.append(v)
            self.offs.append(self.offs[-1] + len(v))
        else:
            self.values.append(v)

    def export(self):
        n = len(self.valid)
        valid = np.frombuffer(bytes(self.valid), dtype=np.uint8)
        nulls = n - int(np.count_nonzero(valid))
        bitmap = bits(valid) if nulls else None
        if self.what == "fixed":
            dtype, width = FIXED[self.kind]
            if dtype is None:
                data = b"".join(bytes(16) if v is None else v for v in self.values)
            else:
                data = np.array([0 if v is None else v for v in self.values], dtype=dtype)
                data = bits(data) if self.kind == K.BOOL else data.tobytes()
            bufs = (data,)
        elif self.what == "var":
            bufs = (np.array(self.offs, dtype="<i8").tobytes(), b"".join(self.values))
        elif self.what == "list":
            bufs = (np.array(self.offs, dtype="<i8").tobytes(),)
        else:
            bufs = ()
        return (n, nulls, bitmap, bufs, tuple(k.export() for k in self.kids))


def bits(values) -> bytes:
    return np.packbits(np.asarray(values, dtype=np.uint8), bitorder="little").tobytes()


def scalar_col(kind):
    return Col("fixed" if kind in FIXED else "var", kind)


def struct_cols(cls):
    kids = []
    for f in cls._FIELDS:
        if f.kind == K.ARRAY:
            kid = Col("list")
            kid.kids.append(struct_cols(f.struct) if f.elem == K.STRUCT else scalar_col(f.elem))
        elif f.kind == K.STRUCT:
            kid = struct_cols(f.struct)
        else:
            kid = scalar_col(f.kind)
        kids.append(kid)
    return Col("struct", kids=kids)


def _scalar(kind, v):
    if kind == K.STRING:
        return v.encode("utf-8")
    if kind in (K.BYTES, K.RECORDS):
        return bytes(v)
    if kind == K.UUID:
        return v.bytes
    if kind == K.BOOL:
        return 1 if v else 0
    return v


def _put_value(col, kind, struct_cls, v, version):
    if v is None:
        col.null()
    elif kind == K.STRUCT:
        put_struct(col, struct_cls, v, version)
    else:
        col.put(_scalar(kind, v))


def put_struct(col, cls, obj, version):
    for f, kid in zip(cls._FIELDS, col.kids):
        if not f.versions >> version & 1:
            kid.null()
            continue
        v = getattr(obj, f.attr)
        if f.kind != K.ARRAY:
            _put_value(kid, f.kind, f.struct, v, version)
        elif v is None:
            kid.null()
        else:
            elem = kid.kids[0]
            for x in v:
                _put_value(elem, f.elem, f.struct, x, version)
            kid.valid.append(1)
            kid.offs.append(len(elem.valid))
    col.valid.append(1)
