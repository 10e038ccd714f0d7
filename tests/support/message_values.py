"""Values for every message class and version, built from the generated specs.

``random_message`` makes a seeded random instance for a version (fields the
version lacks keep their defaults); ``strategy`` is the same as a hypothesis
strategy.  ``to_kafka_json`` renders an instance the way Kafka's JSON
converter does, for comparison with the Java oracle.
"""

from __future__ import annotations

import base64
import uuid

from hypothesis import strategies as st

from kafkaproto import _kinds as K

INT_RANGES = {
    K.INT8: (-(2**7), 2**7 - 1), K.INT16: (-(2**15), 2**15 - 1), K.INT32: (-(2**31), 2**31 - 1),
    K.INT64: (-(2**63), 2**63 - 1), K.UINT16: (0, 2**16 - 1), K.UINT32: (0, 2**32 - 1),
}
TEXT = "abcxyz-_.09 éü中🙂"


def _has(mask, v):
    return bool(mask >> v & 1)


def _random_int(rng, kind):
    lo, hi = INT_RANGES[kind]
    r = rng.random()
    if r < 0.2:
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1])
    if r < 0.6:
        return rng.randint(max(lo, -1000), min(hi, 1000))
    return rng.randint(lo, hi)


def _random_value(rng, kind, struct, version, flexible, depth, unknown_tags=True):
    if kind in INT_RANGES:
        return _random_int(rng, kind)
    if kind == K.BOOL:
        return rng.random() < 0.5
    if kind == K.FLOAT64:
        return rng.choice([0.0, -1.5, 1e300, rng.uniform(-1e6, 1e6)])
    if kind == K.UUID:
        return uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.8 else uuid.UUID(int=0)
    if kind == K.STRING:
        return "".join(rng.choice(TEXT) for _ in range(rng.randint(0, 12)))
    if kind in (K.BYTES, K.RECORDS):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 12)))
    if kind == K.STRUCT:
        return random_message(struct, version, rng, flexible, depth + 1, unknown_tags)
    raise AssertionError(kind)


def random_message(cls, version, rng, flexible=None, depth=0, unknown_tags=True):
    if flexible is None:
        flexible = cls.is_flexible(version)
    kwargs = {}
    for f in cls._FIELDS:
        if not _has(f.versions, version):
            continue
        nullable = _has(f.nullable, version)
        if nullable and rng.random() < 0.2:
            kwargs[f.attr] = None
            continue
        if f.kind == K.ARRAY:
            n = rng.randint(0, 3 if depth < 3 else 0)
            kwargs[f.attr] = [_random_value(rng, f.elem, f.struct, version, flexible, depth, unknown_tags)
                              for _ in range(n)]
        elif f.kind == K.STRUCT and depth > 4:
            continue
        else:
            kwargs[f.attr] = _random_value(rng, f.kind, f.struct, version, flexible, depth, unknown_tags)
    obj = cls(**kwargs)
    if flexible and unknown_tags and rng.random() < 0.25:
        tags = sorted(rng.sample(range(5000, 5100), rng.randint(1, 3)))
        obj.unknown_tagged_fields = [(t, bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 5)))) for t in tags]
    return obj


# ---------------------------------------------------------------------------
# hypothesis


def _value_strategy(kind, struct, version, flexible, depth):
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind == K.BOOL:
        return st.booleans()
    if kind == K.FLOAT64:
        return st.floats(allow_nan=False)
    if kind == K.UUID:
        return st.uuids()
    if kind == K.STRING:
        return st.text(max_size=10)
    if kind in (K.BYTES, K.RECORDS):
        return st.binary(max_size=10)
    if kind == K.STRUCT:
        return strategy(struct, version, flexible, depth + 1)
    raise AssertionError(kind)


def strategy(cls, version, flexible=None, depth=0):
    if flexible is None:
        flexible = cls.is_flexible(version)
    fields = {}
    for f in cls._FIELDS:
        if not _has(f.versions, version) or (f.kind == K.STRUCT and depth > 4):
            continue
        if f.kind == K.ARRAY:
            s = st.lists(_value_strategy(f.elem, f.struct, version, flexible, depth), max_size=2 if depth < 3 else 0)
        else:
            s = _value_strategy(f.kind, f.struct, version, flexible, depth)
        if _has(f.nullable, version):
            s = st.none() | s
        fields[f.attr] = s
    unknown = st.just([])
    if flexible:
        unknown = st.lists(st.tuples(st.integers(6000, 6100), st.binary(max_size=4)), max_size=2,
                           unique_by=lambda t: t[0]).map(sorted)
    return st.builds(lambda kw, u: _with_unknown(cls(**kw), u), st.fixed_dictionaries(fields), unknown)


def _with_unknown(obj, unknown):
    obj.unknown_tagged_fields = unknown
    return obj


# ---------------------------------------------------------------------------
# Kafka's JSON converter format


def kafka_uuid(u):
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _json_value(kind, v, struct, version):
    if v is None:
        return None
    if kind == K.UUID:
        return kafka_uuid(v)
    if kind in (K.BYTES, K.RECORDS):
        return base64.b64encode(v).decode()
    if kind == K.STRUCT:
        return to_kafka_json(v, version)
    return v


def to_kafka_json(obj, version):
    out = {}
    for f in type(obj)._FIELDS:
        if not _has(f.versions, version):
            continue
        key = f.wire[0].lower() + f.wire[1:]
        v = getattr(obj, f.attr)
        if f.kind == K.ARRAY and v is not None:
            out[key] = [_json_value(f.elem, x, f.struct, version) for x in v]
        else:
            out[key] = _json_value(f.kind, v, f.struct, version)
    return out


# ---------------------------------------------------------------------------
# against Kafka's reading of the same bytes

# Fields whose names differ between Kafka 3.9.1 and the newest schemas with the
# same bytes: (class, Java 3.9.1's name) -> ours.
RENAMED = {
    ("VoteRequest", "candidateEpoch"): "replicaEpoch", ("VoteRequest", "candidateId"): "replicaId",
    ("VoteRequest", "candidateDirectoryId"): "replicaDirectoryId",
    ("ListConfigResourcesResponse", "clientMetricsResources"): "configResources",
    ("ListConfigResourcesResponse", "name"): "resourceName",
    ("TxnOffsetCommitRequest", "generationId"): "generationIdOrMemberEpoch",
}


def tagged_paths(obj, version, path=""):
    """The JSON paths of ``obj``'s tagged fields (Kafka's converter leaves out
    those at their default)."""
    out = set()
    for f in type(obj)._FIELDS:
        if not f.versions >> version & 1:
            continue
        p = f"{path}.{f.wire[0].lower()}{f.wire[1:]}"
        if f.tagged >> version & 1:
            out.add(p)
        value = getattr(obj, f.attr)
        if f.kind == K.STRUCT and value is not None:
            out |= tagged_paths(value, version, p)
        elif f.kind == K.ARRAY and f.elem == K.STRUCT and value:
            for i, x in enumerate(value):
                out |= tagged_paths(x, version, f"{p}[{i}]")
    return out


def compare_with_java(ours, java, path, name, problems, tagged=frozenset()):
    """Every field of Java's reading equals ours; every field of ours that
    Java's JSON lacks is a tagged one (the bytes already showed it at its
    default)."""
    if isinstance(java, dict):
        seen = set()
        for k, jv in java.items():
            mine = k if k in ours else RENAMED.get((name, k))
            if mine not in ours:
                problems.append(f"{path}.{k} missing")
                continue
            seen.add(mine)
            compare_with_java(ours[mine], jv, f"{path}.{k}", name, problems, tagged)
        problems += [f"{path}.{k} not in Java's reading" for k in ours.keys() - seen
                     if f"{path}.{k}" not in tagged]
    elif isinstance(java, list):
        if not isinstance(ours, list) or len(ours) != len(java):
            problems.append(f"{path}: {ours!r} != {java!r}")
            return
        for i, (a, b) in enumerate(zip(ours, java)):
            compare_with_java(a, b, f"{path}[{i}]", name, problems, tagged)
    elif isinstance(java, float) or isinstance(ours, float):
        if float(ours) != float(java):
            problems.append(f"{path}: {ours!r} != {java!r}")
    elif ours != java:
        problems.append(f"{path}: {ours!r} != {java!r}")
