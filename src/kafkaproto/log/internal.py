"""Kafka's internal topics as typed tables: ``read_table(decoder=...)``.

The records of ``__consumer_offsets`` (``decoder="offsets"``: offset commits
with their metadata and expiry, classic group metadata with its members'
subscriptions and assignments, the consumer, share and streams groups'
records), ``__transaction_state`` (``"transaction-log"``),
``__share_group_state`` (``"share-group-state"``), ``__cluster_metadata``
(``"cluster-metadata"``: topics, partitions, configs, ACLs, features, broker
and controller registrations, producer ids, quotas, SCRAM credentials,
delegation tokens) and ``__remote_log_metadata`` (``"remote-log-metadata"``),
decoded with the classes generated from Kafka's own schemas into one table a
log: where each record is, what it is, and one struct column per record
type (its key's fields, then its value's: the union of every version's),
null but on the rows of that type::

    t = log.open_log(log_dir).read_table(decoder="offsets")
    commits = t.filter(pc.equal(t["type"], "OffsetCommit")).column("offset_commit")

A record its decoder cannot read (an unknown type or version, bytes that do
not parse) is a row with ``error`` set, as a damaged region is.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from .. import _kinds as K
from ..arrow import _field_type, _struct_type
from ..arrow.buffers import strings, to_numpy
from ..messages import INTERNAL_LOGS as LOGS
from ._records import COORDINATORS, RecordError, decode_coordinator, decode_framed, record_class

__all__ = ["DECODERS", "internal_schema", "internal_table"]

#: decoder → (its log in the registry, the topic it reads)
DECODERS = {"offsets": ("group", "__consumer_offsets"), "transaction-log": ("transaction", "__transaction_state"),
            "share-group-state": ("share", "__share_group_state"),
            "cluster-metadata": ("metadata", "__cluster_metadata"),
            "remote-log-metadata": ("remote", "__remote_log_metadata")}

#: the topics Kafka keeps for itself (a whole log dir's read leaves them out unless named)
INTERNAL_TOPICS = frozenset(t for _, t in DECODERS.values())

#: the log reader's columns an internal table is made from
SOURCE_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "segment", "position", "error")

_COMMON = [("topic", pa.large_string()), ("partition", pa.int32()), ("offset", pa.int64()),
           ("timestamp", pa.timestamp("us", tz="UTC")), ("type", pa.large_string()), ("version", pa.int16()),
           ("tombstone", pa.bool_()), ("segment", pa.int64()), ("position", pa.int64()), ("error", pa.large_string())]


def _snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _types(log: str):
    """The record types of a log → [(record type, its name, its column, key class or None, value class)]."""
    out = []
    for rtype, names in sorted(LOGS[log].items()):
        if isinstance(names, tuple):
            kname, vname = names
            if kname is None or vname is None:
                continue
            name = kname[:-len("Key")]
            out.append((rtype, name, _snake(name), record_class(kname), record_class(vname)))
        else:
            out.append((rtype, names, _snake(names), None, record_class(names)))
    return out


_SCHEMAS: dict = {}


def internal_schema(decoder: str) -> pa.Schema:
    """The Arrow schema of a decoder's table: where and what each record is, then a struct column
    per record type (its key's fields, then its value's)."""
    got = _SCHEMAS.get(decoder)
    if got is None:
        if decoder not in DECODERS:
            raise ValueError(f"no decoder {decoder!r} (decoders: {', '.join(DECODERS)})")
        fields = [pa.field(n, t) for n, t in _COMMON]
        for _rtype, _name, column, kcls, vcls in _types(DECODERS[decoder][0]):
            kids = (list(_struct_type(kcls)) if kcls is not None else []) + list(_with_extras(vcls))
            fields.append(pa.field(column, pa.struct(kids)))
        got = _SCHEMAS[decoder] = pa.schema(fields)
    return got


# A classic consumer group's members hold their subscription and assignment as the consumer protocol's
# bytes: the table has them decoded too (a version, then the union of every version's fields).
_CONSUMER = (("consumer_subscription", "ConsumerProtocolSubscription"),
             ("consumer_assignment", "ConsumerProtocolAssignment"))


def _consumer_class(name: str):
    from .. import messages

    return getattr(messages, name)


def _consumer_type(name: str) -> pa.StructType:
    return pa.struct([pa.field("version", pa.int16())] + list(_struct_type(_consumer_class(name))))


def _is_members(cls) -> bool:
    return cls.__qualname__ == "GroupMetadataValue.MemberMetadata"


def _with_extras(cls) -> pa.StructType:
    """A class's struct type, with the consumer protocol decoded in a classic group's members."""
    fields = []
    for f in cls._FIELDS:
        typ = _struct_type_of(f)
        fields.append(pa.field(f.attr, typ))
    if _is_members(cls):
        fields += [pa.field(col, _consumer_type(name)) for col, name in _CONSUMER]
    return pa.struct(fields)


def _struct_type_of(f) -> pa.DataType:
    if f.kind == K.ARRAY and f.elem == K.STRUCT:
        return pa.large_list(_with_extras(f.struct))
    if f.kind == K.STRUCT:
        return _with_extras(f.struct)
    return _field_type(f)


def _consumer_protocol(raw, name: str):
    """A member's subscription or assignment bytes (version, then the message) → (version, message), or None."""
    from ..messages import decode_versioned

    return decode_versioned(name, raw)


# ---------------------------------------------------------------------------
# Arrow arrays from decoded messages (built from buffers: pa.array() would import pandas)


def _scalars(values, kind: int, typ: pa.DataType) -> pa.Array:
    n = len(values)
    ok = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    mask = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
    if kind in (K.STRING, K.BYTES, K.RECORDS):
        raw = [b"" if v is None else (v.encode("utf-8") if kind == K.STRING else bytes(v)) for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(b) for b in raw), dtype=np.int64, count=n), out=offsets[1:])
        return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
    if kind == K.UUID:
        data = b"".join(bytes(16) if v is None else v.bytes for v in values)
        return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(data)])
    if kind == K.BOOL:
        arr = np.fromiter((bool(v) for v in values), dtype=bool, count=n)
        return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(np.packbits(arr, bitorder="little"))])
    dtype = np.float64 if kind == K.FLOAT64 else np.dtype(typ.to_pandas_dtype())
    arr = np.fromiter((0 if v is None else v for v in values), dtype=dtype, count=n)
    return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(arr)])


def _column(values, f, typ: pa.DataType) -> pa.Array:
    """The values of one field (None: null) as an array of ``typ``."""
    if f.kind == K.ARRAY:
        n = len(values)
        ok = np.fromiter((v is not None for v in values), dtype=bool, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((0 if v is None else len(v) for v in values), dtype=np.int64, count=n),
                  out=offsets[1:])
        flat = [x for v in values if v is not None for x in v]
        if f.elem == K.STRUCT:
            child = _structs(flat, f.struct, typ.value_type)
        else:
            child = _scalars(flat, f.elem, typ.value_type)
        mask = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
        return pa.Array.from_buffers(typ, n, [mask, pa.py_buffer(offsets)], children=[child])
    if f.kind == K.STRUCT:
        return _structs(values, f.struct, typ)
    return _scalars(values, f.kind, typ)


def _structs(objs, cls, typ: pa.StructType, extra=None) -> pa.Array:
    """Struct values (None: null) of a generated class as a struct array of ``typ`` (``extra``: a
    second class whose fields follow, from the same objects' second element)."""
    n = len(objs)
    parts = [(cls, [None if o is None else (o[0] if extra is not None else o) for o in objs])]
    if extra is not None:
        parts.append((extra, [None if o is None else o[1] for o in objs]))
    kids, k = [], 0
    for owner, items in parts:
        if owner is None:
            continue
        for f in owner._FIELDS:
            kids.append(_column([None if o is None else getattr(o, f.attr) for o in items], f, typ.field(k).type))
            k += 1
        if _is_members(owner):
            for col, name in _CONSUMER:
                field = "subscription" if col == "consumer_subscription" else "assignment"
                got = [None if o is None or id(o) not in _CONSUMER_GROUPS else
                       _consumer_protocol(getattr(o, field), name) for o in items]
                ctyp = typ.field(k).type
                cls = _consumer_class(name)
                versions = _scalars([None if g is None else g[0] for g in got], K.INT16, pa.int16())
                inner = _structs([None if g is None else g[1] for g in got], cls, pa.struct(list(ctyp)[1:]))
                ok = np.fromiter((g is not None for g in got), dtype=bool, count=len(got))
                mask = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
                kids.append(pa.StructArray.from_buffers(
                    ctyp, len(got), [mask],
                    children=[versions] + [inner.field(j) for j in range(inner.type.num_fields)]))
                k += 1
    ok = np.fromiter((o is not None for o in objs), dtype=bool, count=n)
    mask = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.StructArray.from_buffers(typ, n, [mask], children=kids) if kids else \
        pa.Array.from_buffers(typ, n, [mask])


# the members of the classic groups whose protocol type is "consumer" (their bytes are the consumer
# protocol's), while a table is built
_CONSUMER_GROUPS: set = set()


# ---------------------------------------------------------------------------
# the table


def internal_table(decoder: str, source: pa.Table) -> pa.Table:
    """The records of ``source`` (the log reader's :data:`SOURCE_COLUMNS`: an internal topic's
    records and damaged regions) decoded → a table of :func:`internal_schema`."""
    schema = internal_schema(decoder)
    log = DECODERS[decoder][0]
    types = _types(log)
    by_type = {rtype: k for k, (rtype, *_rest) in enumerate(types)}
    n = source.num_rows
    keys = source.column("key").to_pylist() if n else []
    values = source.column("value").to_pylist() if n else []
    errors_in = source.column("error").to_pylist() if n else []
    type_names, versions, tombstones, errors = [None] * n, [None] * n, [None] * n, list(errors_in)
    rows = [[None] * n for _ in types]
    offsets = to_numpy(source.column("offset"))
    for i in range(n):
        if errors_in[i] is not None:
            continue  # a damaged region's row, as it is
        try:
            if log in COORDINATORS:
                rtype, kmsg, version, vmsg = decode_coordinator(log, keys[i], values[i])
                tombstones[i] = vmsg is None
                msg = (kmsg, vmsg if vmsg is not None else None)
            else:
                rtype, version, vmsg = decode_framed(log, values[i])
                tombstones[i] = False
                msg = vmsg
        except RecordError as exc:
            errors[i] = f"offset {int(offsets[i])}: {exc.detail}"
            continue
        k = by_type[rtype]
        type_names[i], versions[i] = types[k][1], version
        rows[k][i] = msg
        if log == "group" and msg[1] is not None and type(msg[1]).__name__ == "GroupMetadataValue" and \
                msg[1].protocol_type == "consumer":
            _CONSUMER_GROUPS.update(id(m) for m in msg[1].members)
    try:
        return _table(schema, source, types, rows, type_names, versions, tombstones, errors)
    finally:
        _CONSUMER_GROUPS.clear()


def _table(schema, source, types, rows, type_names, versions, tombstones, errors) -> pa.Table:
    cols = [source.column(c) for c in ("topic", "partition", "offset", "timestamp")]
    cols += [strings(type_names), _scalars(versions, K.INT16, pa.int16()),
             _scalars(tombstones, K.BOOL, pa.bool_()), source.column("segment"), source.column("position"),
             strings(errors)]
    for k, (_rtype, _name, column, kcls, vcls) in enumerate(types):
        typ = schema.field(column).type
        objs = rows[k]
        if kcls is not None:
            cols.append(_coordinator_column(objs, kcls, vcls, typ))  # a tombstone: its value's fields null
        else:
            cols.append(_structs(objs, vcls, typ))
    return pa.Table.from_arrays([_chunk(c) for c in cols], schema=schema)


def _coordinator_column(objs, kcls, vcls, typ) -> pa.Array:
    nk = len(kcls._FIELDS)
    keys_part = [None if o is None else o[0] for o in objs]
    vals_part = [None if o is None else o[1] for o in objs]
    karr = _structs(keys_part, kcls, pa.struct(list(typ)[:nk]))
    varr = _structs(vals_part, vcls, pa.struct(list(typ)[nk:]))
    kids = [karr.field(j) for j in range(nk)] + [varr.field(j) for j in range(varr.type.num_fields)]
    ok = np.fromiter((o is not None for o in objs), dtype=bool, count=len(objs))
    mask = None if ok.all() else pa.py_buffer(np.packbits(ok, bitorder="little"))
    return pa.StructArray.from_buffers(typ, len(objs), [mask], children=kids)


def _chunk(col):
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col
