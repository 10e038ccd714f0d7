"""Messages as the JSON Kafka's generated ``*JsonConverter`` classes write (what
``DumpLogSegments`` prints for KRaft control records, metadata records and
the records of the coordinators' topics), written as Jackson writes it.

Kafka's rules: the fields a version has, in schema order, named in camelCase
(the schema's name, its first letter lower-cased); a tagged field only when
its value is not the default; integers as numbers, ``float64`` as Java's
``Double.toString``, UUIDs as Kafka's base64 (URL alphabet, no padding),
bytes as base64 (standard alphabet, padded), null where nullable.
Jackson's string escapes: ``\\"``, ``\\\\``, ``\\b \\t \\n \\f \\r``, other control
characters as ``\\u00XX`` (upper-case hex); everything else as is.
"""

from __future__ import annotations

import base64
import math
import uuid

from .. import _kinds as K

__all__ = ["dumps", "java_double", "json_string", "kafka_uuid", "message_json", "to_node"]

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})


def json_string(s: str) -> str:
    """A JSON string as Jackson writes it."""
    return '"' + s.translate(_ESCAPES) + '"'


def kafka_uuid(u) -> str:
    """Kafka's ``Uuid.toString()``: the 16 bytes in URL-safe base64 without padding."""
    raw = u.bytes if isinstance(u, uuid.UUID) else bytes(u)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def java_double(d: float) -> str:
    """Java's ``Double.toString`` (as Jackson writes a double: NaN and the infinities quoted)."""
    if d != d:
        return '"NaN"'
    if math.isinf(d):
        return '"Infinity"' if d > 0 else '"-Infinity"'
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
    # the shortest digits that read back (as Java's do, but for the rare doubles older JDKs print longer)
    mant, _, e = repr(abs(d)).partition("e")
    whole, _, frac = mant.partition(".")
    digits = whole + frac
    point = len(whole) + (int(e) if e else 0)   # where the decimal point is, counted in digits
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    ds = stripped.rstrip("0") or "0"
    if 1e-3 <= abs(d) < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{ds}"
        if point >= len(ds):
            return f"{sign}{ds}{'0' * (point - len(ds))}.0"
        return f"{sign}{ds[:point]}.{ds[point:]}"
    rest = ds[1:] or "0"
    return f"{sign}{ds[0]}.{rest}E{point - 1}"


def _is_default(f, v) -> bool:
    d = f.make_default()
    if f.kind == K.FLOAT64 and v == 0 and d == 0:
        return math.copysign(1.0, v) == math.copysign(1.0, d)
    if f.kind == K.BYTES and v is not None and d is not None:
        return bytes(v) == bytes(d)
    return v == d


def _value(kind: int, v, version: int):
    if v is None:
        return None
    if kind == K.BOOL:
        return bool(v)
    if kind in (K.INT8, K.INT16, K.INT32, K.INT64, K.UINT16, K.UINT32):
        return int(v)
    if kind == K.FLOAT64:
        return float(v)
    if kind == K.UUID:
        return kafka_uuid(v)
    if kind == K.STRING:
        return v
    if kind == K.BYTES:
        return bytes(v)
    if kind == K.RECORDS:
        return b""
    if kind == K.STRUCT:
        return to_node(v, version)
    raise ValueError(f"no JSON for a field of kind {kind}")


def to_node(obj, version: int) -> dict:
    """One struct of a generated message at ``version`` as Kafka's JsonConverter builds it: a dict in
    field order (bytes stay bytes, floats floats: :func:`dumps` writes them as Jackson does)."""
    node = {}
    for f in obj._FIELDS:
        if not f.versions >> version & 1:
            continue
        v = getattr(obj, f.attr)
        if f.tagged >> version & 1 and _is_default(f, v):
            continue
        name = f.wire[:1].lower() + f.wire[1:]
        if f.kind == K.ARRAY and v is not None:
            node[name] = [_value(f.elem, x, version) for x in v]
        else:
            node[name] = _value(f.kind, v, version)
    return node


def dumps(node) -> str:
    """A node as Jackson writes it (compact; see the module's documentation)."""
    if node is None:
        return "null"
    if node is True:
        return "true"
    if node is False:
        return "false"
    if isinstance(node, int):
        return str(node)
    if isinstance(node, float):
        return java_double(node)
    if isinstance(node, str):
        return json_string(node)
    if isinstance(node, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(node)).decode("ascii") + '"'
    if isinstance(node, dict):
        return "{" + ",".join(json_string(k) + ":" + dumps(v) for k, v in node.items()) + "}"
    if isinstance(node, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in node) + "]"
    raise TypeError(f"no JSON for {type(node).__name__}")


def message_json(msg, version: int) -> str:
    """A generated message at ``version`` as Kafka's ``<Message>JsonConverter.write`` makes it."""
    return dumps(to_node(msg, version))
