"""Runtime for the generated message classes (``kafkaproto.messages._gen``).

A generated class lists its fields as :class:`F` specs with version sets.  For
each version a *plan* is built once (which fields are on the wire, in which
encoding, which are tagged) and handed to the engine: the compiled one in
``kafkaproto._codec`` or the pure twin in ``kafkaproto._engine_py``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import inspect

from .. import _kinds as K
from .._impl import codec, engine
from ..errors import KafkaProtocolError, UnsupportedVersionError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

ZERO_UUID = uuid.UUID(int=0)


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


#: default of an array field: a fresh empty list
LIST = _Marker("LIST")
#: default of a struct field: a fresh instance with its own defaults
STRUCT = _Marker("STRUCT")
_UNSET = _Marker("UNSET")

_TYPE_DEFAULTS = {
    "bool": False, "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
    "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID,
}


#: the highest version a version mask holds (Kafka's versions are int16; schemas stay far below this)
MAX_MASK_VERSION = 63


def versions_mask(spec: str) -> int:
    """'0-2,5', '3+' → a bitmask of versions ('N+' runs to :data:`MAX_MASK_VERSION`)."""
    mask = 0
    if not spec:
        return 0
    for part in spec.split(","):
        if part.endswith("+"):
            lo, hi = int(part[:-1]), MAX_MASK_VERSION
        else:
            lo, _, hi = part.partition("-")
            lo, hi = int(lo), int(hi or lo)
        for v in range(lo, hi + 1):
            mask |= 1 << v
    return mask


def open_from(spec: str):
    """N for a spec ending in 'N+' (every version from N on), else None."""
    last = spec.rsplit(",", 1)[-1] if spec else ""
    return int(last[:-1]) if last.endswith("+") else None


class F:
    """A field spec: attribute name, Kafka name, type and version sets."""

    __slots__ = ("attr", "wire", "type", "versions", "nullable", "tagged", "tag", "ignorable", "compact",
                 "default", "struct", "kind", "elem", "versions_spec", "entity", "map_key", "zero_copy")

    def __init__(self, attr, wire, type, versions, nullable="", tagged="", tag=None, ignorable=False, compact=True,
                 default=_UNSET, struct=None, entity=None, map_key=False, zero_copy=False):
        self.attr = attr
        #: what the value names, from the schema's entityType ("topicName", "groupId", "brokerId"...)
        self.entity = entity
        #: the key of the element in Kafka's own hash-set arrays (no effect on the wire)
        self.map_key = map_key
        #: a bytes field Kafka keeps as a view of the receive buffer (the schema's zeroCopy)
        self.zero_copy = zero_copy
        self.wire = wire
        self.type = type
        self.versions_spec = versions
        self.versions = versions_mask(versions)
        self.nullable = versions_mask(nullable)
        self.tagged = versions_mask(tagged)
        self.tag = tag
        self.ignorable = ignorable
        self.compact = compact
        self.struct = struct
        elem = type[2:] if type.startswith("[]") else type
        if type.startswith("[]"):
            self.kind = K.ARRAY
            self.elem = K.STRUCT if struct is not None else K.BY_NAME[elem]
        else:
            self.kind = K.STRUCT if struct is not None else K.BY_NAME[type]
            self.elem = -1
        if default is _UNSET:
            if self.kind == K.ARRAY:
                default = LIST
            elif self.kind == K.STRUCT:
                default = STRUCT
            else:
                default = _TYPE_DEFAULTS[type]
        self.default = default

    def make_default(self):
        if self.default is LIST:
            return []
        if self.default is STRUCT:
            return self.struct()
        return self.default

    def __repr__(self):
        return f"F({self.attr!r}, {self.type!r}, {self.versions_spec!r})"


def _plain(v):
    if isinstance(v, Struct):
        return v.to_dict()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


class FieldInfo(NamedTuple):
    """One field of a message at one version (:meth:`Message.fields`)."""

    name: str                 # the attribute
    kafka_name: str           # the schema's name
    type: str                 # the schema's type: "int32", "string", "[]int32", "[]MetadataResponseTopic"...
    versions: str             # the versions that have the field ("0+", "3-7")
    nullable: bool            # at this version
    tagged: bool              # a tagged field at this version
    tag: int | None
    ignorable: bool           # Kafka drops a non-default value where the version lacks the field
    default: Any              # what a new instance holds
    entity: str | None        # what the value names ("topicName", "brokerId"...)
    zero_copy: bool           # records, and bytes Kafka keeps as a view of the receive buffer
    fields: tuple             # the nested struct's fields (struct and struct-array fields)


def _field_infos(cls, version: int, flexible: bool) -> tuple:
    out = []
    for f in cls._FIELDS:
        if not f.versions >> version & 1:
            continue
        nested = _field_infos(f.struct, version, flexible) if f.struct is not None else ()
        out.append(FieldInfo(f.attr, f.wire, f.type, f.versions_spec, bool(f.nullable >> version & 1),
                             bool(flexible and f.tagged >> version & 1), f.tag, f.ignorable, f.make_default(),
                             f.entity, bool(f.zero_copy or f.kind == K.RECORDS), nested))
    return tuple(out)


class _FieldsSignature:
    """``Struct.__signature__``: what ``inspect.signature(cls)`` and ``help(cls)``
    show, the fields as keyword-only parameters with their defaults (a fresh
    list or struct where the field defaults to one), then ``unknown_tagged_fields``.
    Built on first use, once nested struct classes are resolved."""

    def __get__(self, obj, cls) -> inspect.Signature:
        sig = cls.__dict__.get("_SIGNATURE")
        if sig is None:
            import inspect  # when asked: a bare import of kafkaproto does not load it

            kw = inspect.Parameter.KEYWORD_ONLY
            params = [inspect.Parameter(f.attr, kw, default=f.make_default()) for f in cls._FIELDS]
            params.append(inspect.Parameter("unknown_tagged_fields", kw, default=()))
            sig = inspect.Signature(params)
            cls._SIGNATURE = sig
        return sig


class Struct:
    """Base of every generated struct: keyword construction, equality, repr, to_dict().

    A decoded struct also keeps, out of sight (``_wire``), the order its tags
    had on the wire, so that re-encoding it gives back the bytes it came from
    (see :func:`kafkaproto.protocol.encode_request`'s ``canonical``).
    """

    __slots__ = ("unknown_tagged_fields", "_wire")
    _FIELDS: tuple = ()
    #: the versions that have this struct (a nested struct: those of the fields that hold it)
    VALID_VERSIONS = ""
    #: the message whose versions these are, and which says which are flexible
    _MESSAGE: type[Message] | None = None
    unknown_tagged_fields: tuple[tuple[int, bytes], ...]
    __signature__ = _FieldsSignature()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._PLANS = {}
        cls._ATTRS = tuple(f.attr for f in cls._FIELDS)
        cls._VALID = versions_mask(cls.VALID_VERSIONS)

    @classmethod
    def supports(cls, version: int) -> bool:
        return 0 <= version <= 63 and bool(cls._VALID >> version & 1)

    @classmethod
    def fields(cls, version: int) -> tuple[FieldInfo, ...]:
        """The fields ``version`` has, in schema order (tagged ones included:
        ``tagged`` says which), each a :class:`FieldInfo` with its type,
        nullability, default, tag and nested fields.  A nested struct answers
        for the versions of its message that have it (``VALID_VERSIONS``)."""
        msg = cls._MESSAGE
        if msg is None or not cls.supports(version):
            raise UnsupportedVersionError(f"{cls.__qualname__} v{version} is not supported "
                                          f"(versions {cls.VALID_VERSIONS or 'none'})", cls.__qualname__)
        return _field_infos(cls, version, msg.is_flexible(version))

    def __init__(self, **kwargs):
        for f in self._FIELDS:
            value = kwargs.pop(f.attr, _UNSET)
            setattr(self, f.attr, f.make_default() if value is _UNSET else value)
        #: tagged fields with no name in the schema, as (tag, raw bytes): re-encoded as they came
        self.unknown_tagged_fields = tuple(kwargs.pop("unknown_tagged_fields", None) or ())
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(kwargs))}")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for a in self._ATTRS:
            if getattr(self, a) != getattr(other, a):
                return False
        return tuple(self.unknown_tagged_fields) == tuple(other.unknown_tagged_fields)

    __hash__ = None

    def __repr__(self):
        parts = [f"{a}={getattr(self, a)!r}" for a in self._ATTRS]
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_dict(self) -> dict:
        out = {a: _plain(getattr(self, a)) for a in self._ATTRS}
        if self.unknown_tagged_fields:
            out["unknown_tagged_fields"] = list(self.unknown_tagged_fields)
        return out


def partial_result(cls, obj, path):
    """What a failed decode read before it failed: an instance of ``cls`` with the
    top-level fields that were read, and None for the failing field and those
    not reached (``exc.partial``; None when nothing was read)."""
    if obj is None or not isinstance(obj, cls):
        return None
    failed = path[0] if path else None
    out = cls.__new__(cls)
    for a in cls._ATTRS:
        setattr(out, a, None if a == failed else getattr(obj, a, None))
    out.unknown_tagged_fields = ()
    return out


def _views(data):
    mv = data if type(data) is memoryview else memoryview(data)
    return mv if mv.ndim == 1 and mv.itemsize == 1 else mv.cast("B")


def build_plan(cls, version: int, flexible: bool, context: str, eng=None, cache=None):
    """The plan of ``cls`` at ``version`` for an engine (default: the active one).

    Plans are cached on the class; pass ``cache`` (a dict) to build plans for
    another engine (the tests build twin plans next to compiled ones).
    """
    if eng is None:
        eng = engine
    if cache is None:
        cache = cls._PLANS
    key = (cls, version, flexible)
    plan = cache.get(key)
    if plan is not None:
        return plan
    fields, absent, tagged = [], [], []
    for f in cls._FIELDS:
        present = f.versions >> version & 1
        is_tagged = bool(present and flexible and f.tagged >> version & 1)
        sub = build_plan(f.struct, version, flexible, context, eng, cache) if f.struct is not None and present else None
        default = f.default
        default_kind = 1 if default is LIST else 2 if default is STRUCT else 0
        if default_kind == 2:
            default = f.struct
        fp = eng.FieldPlan(f.attr, f.kind, f.elem, bool(f.nullable >> version & 1), bool(flexible and f.compact),
                           sub, default, default_kind, f.ignorable, -1 if f.tag is None else f.tag, is_tagged,
                           f.zero_copy or f.kind == K.RECORDS)
        if not present:
            absent.append(fp)
        elif is_tagged:
            tagged.append(fp)
            absent.append(fp)
        else:
            fields.append(fp)
    tagged.sort(key=lambda fp: fp.tag)
    plan = eng.Plan(cls, cls.__name__, tuple(fields), tuple(absent), tuple(tagged), flexible, context)
    cache[key] = plan
    return plan


class Message(Struct):
    """Base of every top-level generated message (request, response, header, data).

    A message decoded from a frame also keeps, out of sight (``_trailing``),
    bytes the frame had after its body, written back unless ``canonical``.
    """

    __slots__ = ("_trailing",)
    NAME = ""
    KIND = ""
    API_KEY: int | None = None
    VALID_VERSIONS = ""
    FLEXIBLE_VERSIONS = ""
    NEWEST_VERSIONS = ""
    SNAPSHOT_ONLY_VERSIONS = ""
    LATEST_VERSION_UNSTABLE = False
    #: versions the schema marks deprecated (still valid on the wire)
    DEPRECATED_VERSIONS = ""
    #: requests only: the roles that accept it ("broker", "controller", "zkBroker")
    LISTENERS: tuple = ()
    #: the lowest and highest valid versions (set for each class)
    LOWEST_VERSION: int | None
    HIGHEST_VERSION: int | None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # Nested struct classes are referenced by name: resolve them once.
        nested = {k: v for k, v in vars(cls).items() if isinstance(v, type) and issubclass(v, Struct)}
        for owner in [cls, *nested.values()]:
            owner._MESSAGE = cls
            for f in owner._FIELDS:
                if isinstance(f.struct, str):
                    f.struct = nested[f.struct]
        cls._BY_VERSION = {}
        cls._FLEXIBLE = versions_mask(cls.FLEXIBLE_VERSIONS)
        cls._FLEXIBLE_FROM = open_from(cls.FLEXIBLE_VERSIONS)
        spec = cls.VALID_VERSIONS.split(",")
        cls.LOWEST_VERSION = int(spec[0].split("-")[0]) if cls.VALID_VERSIONS else None
        cls.HIGHEST_VERSION = int(spec[-1].split("-")[-1]) if cls.VALID_VERSIONS else None

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        """Is ``version`` flexible?  A version newer than the schemas follows the
        schema's open-ended rule ("3+"), as Kafka's generated code does."""
        if version < 0:
            return False
        if version <= MAX_MASK_VERSION:
            return bool(cls._FLEXIBLE >> version & 1)
        return cls._FLEXIBLE_FROM is not None and version >= cls._FLEXIBLE_FROM

    @classmethod
    def plan(cls, version: int):
        plan = cls._BY_VERSION.get(version)
        if plan is not None:
            return plan
        if not cls.supports(version):
            raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                          cls.NAME)
        plan = cls._PLANS.get((version, bool(cls._FLEXIBLE >> version & 1)))
        if plan is None:
            plan = build_plan(cls, version, bool(cls._FLEXIBLE >> version & 1), f"{cls.NAME} v{version}")
        cls._BY_VERSION[version] = plan
        return plan

    @classmethod
    def decode(cls, data: ReadableBuffer, version: int, offset: int = 0, *, with_end: bool = False,
               zero_copy: bool = False):
        """Decode a body at ``offset``; bytes left after it are ignored (``with_end=True`` returns the end offset).

        ``zero_copy=True``: ``records`` fields and ``zeroCopy`` bytes fields are
        memoryviews of ``data`` instead of copies.  Each view keeps the whole
        of ``data`` alive (a receive buffer stays in memory as long as any
        view of it does), and sees any later change to it: hand in bytes, or a
        buffer that is not reused while the message is in use.
        """
        plan = cls._BY_VERSION.get(version) or cls.plan(version)
        try:
            obj, end = engine.decode_struct(plan, data, offset, _views(data) if zero_copy else None)
        except KafkaProtocolError as exc:
            exc.set_context(plan.context)
            exc.partial = partial_result(cls, getattr(exc, "partial", None), exc.path)
            raise
        return (obj, end) if with_end else obj

    def encode(self, version: int, *, canonical: bool = False, lenient: bool = False) -> bytes:
        """The body at ``version`` (no header, no size prefix).

        A decoded message is written back as the wire had it: tagged fields
        in their wire order, known tags the wire carried at their default
        values.  ``canonical=True`` writes Kafka's own form instead (tags
        ascending, a tag only for a value other than its default).

        A non-default value in a field ``version`` lacks raises
        :class:`EncodeError`, unless Kafka marks the field ignorable;
        ``lenient=True`` drops such values too, so that one object can be
        encoded at every version a client may ask for.
        """
        w = codec.Writer()
        self.encode_into(w, version, canonical=canonical, lenient=lenient)
        return w.getvalue()

    def encode_into(self, writer, version: int, *, canonical: bool = False, lenient: bool = False) -> None:
        """Append the body to a :class:`~kafkaproto.primitives.Writer` (any mode)."""
        plan = type(self).plan(version)
        try:
            engine.encode_struct(plan, self, writer, canonical, lenient)
        except KafkaProtocolError as exc:
            exc.set_context(plan.context)
            raise
