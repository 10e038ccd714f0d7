"""Pure-Python twin of the compiled message engine (``_engine.pyx``).

Runs the per-version plans built by :mod:`kafkaproto._message`: one loop over
the fields of a struct, recursing into structs and arrays.  Errors get the
field path added as they unwind (``.topics[3].partitions[7].leader_epoch``).
"""

from __future__ import annotations

import gc
from operator import itemgetter

from .. import _kinds as K
from .._codec_py import Reader, Writer
from ..errors import EncodeError, InvalidValueError, KafkaProtocolError, TruncatedError
from ._tags import tag_section

__all__ = ["FieldPlan", "Plan", "Writer", "decode_struct", "encode_struct"]


class FieldPlan:
    __slots__ = ("attr", "kind", "elem", "nullable", "compact", "sub", "default", "default_kind", "ignorable", "tag",
                 "tagged", "zero_copy")

    def __init__(self, attr, kind, elem, nullable, compact, sub, default, default_kind, ignorable, tag, tagged,
                 zero_copy=False):
        self.attr = attr
        self.kind = kind
        self.elem = elem
        self.nullable = nullable
        self.compact = compact
        self.sub = sub
        self.default = default
        self.default_kind = default_kind  # 0 value, 1 fresh list, 2 fresh instance of `default`
        self.ignorable = ignorable
        self.tag = tag
        self.tagged = tagged
        self.zero_copy = zero_copy

    def make_default(self):
        k = self.default_kind
        if k == 0:
            return self.default
        if k == 1:
            return []
        return self.default()

    def is_default(self, v):
        # (a value that cannot be compared with the default, or has no length, is
        # not it: it is then written, or refused, as what it is)
        k = self.default_kind
        if k == 1:
            return isinstance(v, (list, tuple)) and len(v) == 0
        d = self.default if k == 0 else self.default()
        if v is d:
            return True
        try:
            if not (v == d):
                return False
        except (TypeError, ValueError):
            return False
        return k == 2 or type(v) is type(d) or isinstance(d, (int, float))


class Plan:
    __slots__ = ("cls", "name", "fields", "absent", "tagged", "flexible", "context", "tag_map")

    def __init__(self, cls, name, fields, absent, tagged, flexible, context):
        self.cls = cls
        self.name = name
        self.fields = fields
        self.absent = absent
        self.tagged = tagged
        self.flexible = flexible
        self.context = context
        self.tag_map = {f.tag: f for f in tagged}


class _Views(Reader):
    """A reader whose records and zeroCopy bytes fields come out as views of the input."""

    __slots__ = ()


def _read_blob(r, compact, nullable):
    v = r.read_compact_bytes(nullable) if compact else r.read_bytes(nullable)
    if v is None or type(r) is not _Views:
        return v
    end = r.offset
    return r._buf[end - len(v):end]


def _read_value(kind, r, compact, nullable, sub, tagged, blob=False):
    if kind == K.INT32:
        return r.read_int32()
    if kind == K.INT16:
        return r.read_int16()
    if kind == K.INT64:
        return r.read_int64()
    if kind == K.INT8:
        return r.read_int8()
    if kind == K.STRING:
        return r.read_compact_string(nullable) if compact else r.read_string(nullable)
    if kind == K.BOOL:
        return r.read_bool()
    if kind == K.UUID:
        return r.read_uuid()
    if kind == K.BYTES or kind == K.RECORDS:
        if blob:
            return _read_blob(r, compact, nullable)
        return r.read_compact_bytes(nullable) if compact else r.read_bytes(nullable)
    if kind == K.UINT16:
        return r.read_uint16()
    if kind == K.UINT32:
        return r.read_uint32()
    if kind == K.FLOAT64:
        return r.read_float64()
    if kind == K.STRUCT:
        if nullable:
            # a presence marker: int8 (negative = null), or an unsigned varint when tagged (0 = null)
            if tagged:
                if r.read_uvarint() == 0:
                    return None
            elif r.read_int8() < 0:
                return None
        return _decode(sub, r)
    raise AssertionError(kind)  # pragma: no cover


def _read_field(f, r):
    if f.kind != K.ARRAY:
        return _read_value(f.kind, r, f.compact, f.nullable, f.sub, f.tagged, f.zero_copy)
    n = r.read_compact_array_length(f.nullable) if f.compact else r.read_array_length(f.nullable)
    if n < 0:
        return None
    elem, compact, sub = f.elem, f.compact, f.sub
    out = []
    i = 0
    try:
        for i in range(n):  # noqa: B007 - the index names the element in an error
            out.append(_read_value(elem, r, compact, False, sub, False))
    except KafkaProtocolError as exc:
        exc.add_path(f"[{i}]")
        raise
    return out


def _decode(plan, r):
    obj = plan.cls.__new__(plan.cls)
    f = None
    try:
        for f in plan.fields:
            setattr(obj, f.attr, _read_field(f, r))
        f = None
        for a in plan.absent:
            setattr(obj, a.attr, a.make_default())
        unknown = []
        if plan.flexible:
            start = r.offset
            count = r._uvarint("tagged fields", 5, 32)
            if count > r.remaining:
                raise InvalidValueError(f"count {count} larger than the {r.remaining} bytes left", "tagged fields",
                                        start)
            tag_map = plan.tag_map
            wire = []
            for _ in range(count):
                at = r.offset
                tag = r._uvarint("tag", 5, 32)
                size = r._uvarint("tagged field size", 5, 32)
                wire.append(tag)
                if size > r.remaining:
                    raise TruncatedError(f"need {size} bytes, {r.remaining} left", "tagged field", at)
                f = tag_map.get(tag)
                if f is None:
                    unknown.append((tag, r.read_raw(size)))
                    continue
                end = r.offset + size
                saved = r._end
                r._end = end
                try:
                    value = _read_field(f, r)
                finally:
                    r._end = saved
                if r.offset != end:
                    raise InvalidValueError(f"tagged field {tag} declares {size} bytes, its value used "
                                            f"{size - (end - r.offset)}", "tagged field", at)
                setattr(obj, f.attr, value)
                f = None
            if wire:
                obj._wire = tuple(wire)  # the tags in wire order: re-encoding follows it
        if len(unknown) > 1:
            # Kafka reads tags in any order but writes them ascending: keep them in
            # the order they will be written, so that decode(encode(x)) == x
            unknown.sort(key=itemgetter(0))
        obj.unknown_tagged_fields = tuple(unknown)
    except KafkaProtocolError as exc:
        if f is not None:
            exc.add_path(f.attr)
        exc.partial = obj  # the struct as far as it was read; the outermost level's stays
        raise
    return obj


def decode_struct(plan, data, offset=0, views=None):
    """Decode one struct/message with ``plan`` → (object, end offset).

    ``views``: a memoryview over ``data`` to slice zero-copy fields from
    (None: they are copied into ``bytes``).
    """
    r = Reader(data, offset) if views is None else _Views(views, offset)
    # A decoded message is a tree with no cycles: pausing the collector keeps
    # it from scanning the half-built tree over and over (3-4x faster on large
    # responses).
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        obj = _decode(plan, r)
    finally:
        if paused:
            gc.enable()
    return obj, r.offset


# ---------------------------------------------------------------------------
# encode


def _write_value(kind, w, v, compact, nullable, sub, tagged, blob, canonical, lenient):
    if kind == K.INT32:
        w.write_int32(v)
    elif kind == K.INT16:
        w.write_int16(v)
    elif kind == K.INT64:
        w.write_int64(v)
    elif kind == K.INT8:
        w.write_int8(v)
    elif kind == K.STRING:
        if v is None and not nullable:
            raise EncodeError("null in a non-nullable field", "string")
        w.write_compact_string(v) if compact else w.write_string(v)
    elif kind == K.BOOL:
        w.write_bool(v)
    elif kind == K.UUID:
        w.write_uuid(v)
    elif kind == K.BYTES or kind == K.RECORDS:
        if blob:
            # records and zeroCopy bytes: the writer may keep the caller's object (parts)
            w.write_blob(v, compact, nullable)
            return
        if v is None and not nullable:
            raise EncodeError("null in a non-nullable field", "bytes")
        w.write_compact_bytes(v) if compact else w.write_bytes(v)
    elif kind == K.UINT16:
        w.write_uint16(v)
    elif kind == K.UINT32:
        w.write_uint32(v)
    elif kind == K.FLOAT64:
        w.write_float64(v)
    elif kind == K.STRUCT:
        if v is None:
            if not nullable:
                raise EncodeError("null in a non-nullable field", sub.name)
            if tagged:
                w.write_uvarint(0)
            else:
                w.write_int8(-1)
            return
        if nullable:
            if tagged:
                w.write_uvarint(1)
            else:
                w.write_int8(1)
        _encode(sub, v, w, canonical, lenient)
    else:  # pragma: no cover
        raise AssertionError(kind)


def _write_field(f, w, v, canonical, lenient):
    if f.kind != K.ARRAY:
        _write_value(f.kind, w, v, f.compact, f.nullable, f.sub, f.tagged, f.zero_copy and not f.tagged, canonical,
                     lenient)
        return
    if v is None:
        if not f.nullable:
            raise EncodeError("null in a non-nullable field", "array")
        w.write_compact_array_length(None) if f.compact else w.write_array_length(None)
        return
    if not isinstance(v, (list, tuple)):
        raise EncodeError(f"expected a list, got {type(v).__name__}", "array")
    if type(v) is not tuple:
        # one snapshot: the count written is of the items written after it
        # (another thread, or Python code run while encoding, may change a list)
        v = tuple(v)
    w.write_compact_array_length(len(v)) if f.compact else w.write_array_length(len(v))
    elem, compact, sub = f.elem, f.compact, f.sub
    i = 0
    try:
        for i, x in enumerate(v):  # noqa: B007 - the index names the element in an error
            _write_value(elem, w, x, compact, False, sub, False, False, canonical, lenient)
    except KafkaProtocolError as exc:
        exc.add_path(f"[{i}]")
        raise


def _encode(plan, obj, w, canonical, lenient):
    if not isinstance(obj, plan.cls):
        raise EncodeError(f"expected {plan.name}, got {type(obj).__name__}", plan.name)
    f = None
    try:
        for f in plan.fields:
            _write_field(f, w, getattr(obj, f.attr), canonical, lenient)
        for f in plan.absent:
            if not f.tagged and not f.ignorable and not lenient:
                v = getattr(obj, f.attr)
                if not f.is_default(v):
                    raise EncodeError(f"{v!r} is not the default, and this version has no such field",
                                      f.attr)
        f = None
        unknown = obj.unknown_tagged_fields
        if plan.flexible:
            wire = None if canonical else getattr(obj, "_wire", None)
            entries = []
            for f in plan.tagged:
                v = getattr(obj, f.attr)
                # canonical (Kafka's form): a tag only for a value other than the
                # default; faithful: also for every known tag the wire carried
                if not f.is_default(v) or (wire is not None and f.tag in wire):
                    sub = Writer()
                    _write_field(f, sub, v, canonical, lenient)
                    entries.append((f.tag, sub.getvalue()))
            f = None
            w.write_tagged_fields(tag_section(entries, unknown, wire) if unknown or wire is not None else entries)
        elif unknown:
            raise EncodeError(f"{len(unknown)} tagged fields set, but this version is not flexible", "tagged fields")
    except KafkaProtocolError as exc:
        if f is not None:
            exc.add_path(f.attr)
        raise


def encode_struct(plan, obj, writer, canonical=False, lenient=False):
    """Encode ``obj`` with ``plan`` into ``writer``.  Unless ``canonical``, a
    decoded struct is written back as the wire had it (its tags' order, known
    tags at their defaults); a changed field is written as changed.
    ``lenient``: a field this version lacks is dropped even when Kafka marks
    it not ignorable (one response object for many versions)."""
    _encode(plan, obj, writer, canonical, lenient)
