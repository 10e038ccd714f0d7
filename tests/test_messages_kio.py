"""kio 0.6.5 as a reference codec: for every API, version and kind (request,
response, header, data) that both kio and kafkaproto define, values built from
our schema are written by us, read by kio to the same values, written back by
kio byte for byte, and written by kio from those values (built directly, not
read) to the same bytes; kafkaproto reads kio's bytes back to equal values.

kio's value domain is narrower than the wire's, so generated values are
mapped into it first (see ``_into_kio_domain``): error codes must be ones kio
knows (it raises ValueError on any other), timestamps (``datetime_i64``) must
be >= 0 (or -1 = null where nullable) and before year 10000, and int64
durations (``timedelta_i64``) must be small enough to survive kio's float
arithmetic.  Unknown tagged fields are sent to kio as well: kio must skip
them (it drops them, so its re-encoding is compared with ours without them).

Any disagreement fails, with the verdict of Kafka's own Java classes (the
``java_oracle`` fixture) on the same bytes in the report; none is left within
kio's domain.  What lies outside it is pinned in ``test_kio_limits_decided_by_java``:
kio fails there, and Java reads and rewrites our bytes unchanged.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import os
import random
import types
import typing
import uuid
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaproto import _kinds as K
from kafkaproto.messages import APIS, CLASSES, get, request_class, response_class
from support.message_values import random_message, strategy

try:
    import kio
    from kio.schema.errors import ErrorCode as KioErrorCode
    from kio.schema.index import api_key_map, schema_name_map
    from kio.serial import entity_reader, entity_writer
    from kio.serial.errors import OutOfBoundValue
    from kio.static.constants import EntityType
except ImportError as exc:  # pragma: no cover - kio is in the test extra
    if os.environ.get("KAFKAPROTO_REQUIRE_PEERS", "") not in ("", "0"):
        raise ImportError(f"kio (PyPI kio==0.6.5) is needed for the reference-codec tests: {exc}") from exc
    pytest.skip(f"kio not installed: {exc}", allow_module_level=True)

pytestmark = pytest.mark.peers

KIO_VERSION = "0.6.5"
SEEDS = 3

# What kio 0.6.5 has and kafkaproto does not: nothing since the Kafka 4.4
# schemas (kio 0.6.5 follows Kafka 4.2, older than those).
KIO_ONLY = set()

# Kafka 4.4 versions newer than kio 0.6.5 (Kafka 4.2).
NEWER_THAN_KIO = {("ApiVersionsRequest", 5), ("ApiVersionsResponse", 5), ("TxnOffsetCommitRequest", 6),
                  ("TxnOffsetCommitResponse", 6), ("DeleteGroupsRequest", 3), ("DeleteGroupsResponse", 3),
                  ("StreamsGroupHeartbeatRequest", 1), ("StreamsGroupHeartbeatResponse", 1),
                  ("StreamsGroupDescribeRequest", 1), ("StreamsGroupDescribeResponse", 1)}

# Fields Kafka renamed after kio 0.6.5's schemas, same bytes: (class, our name) -> kio's name.
RENAMED = {
    ("TxnOffsetCommitRequest", "generation_id_or_member_epoch"): "generation_id",
    ("StreamsGroupHeartbeatResponse", "acceptable_recovery_lag_legacy"): "acceptable_recovery_lag",
}

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MS = datetime.timedelta(milliseconds=1)
_MAX_TIMESTAMP_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last instant a datetime holds
_MAX_DURATION_MS = 2**40  # ~35 years; kio's float-based writer rounds beyond ~2**51 ms, its reader fails beyond ~2**56
_KIO_CODES = sorted(c.value for c in KioErrorCode)
_ZERO_UUID = uuid.UUID(int=0)


# ---------------------------------------------------------------------------
# pairing kio's classes with ours


def _kio_entities():
    """(class name, version, kind, kio module) for everything kio defines."""
    out = []
    for versions in schema_name_map.values():
        for version, kinds in versions.items():
            for kind, spec in kinds.items():
                module, _, name = spec.partition(":")
                out.append((name, version, kind, module))
    return out


def _our_class(kio_name):
    return get(kio_name) if kio_name in CLASSES else None


@cache
def _kio_class(module, name):
    return getattr(importlib.import_module(module), name)


def _pairs():
    both, kio_only = [], []
    for name, version, kind, module in _kio_entities():
        ours = _our_class(name)
        if ours is None or not ours.supports(version):
            kio_only.append((name, version))
            continue
        both.append((ours, version, kind.name, module, name))
    both.sort(key=lambda p: (p[0].API_KEY if p[0].API_KEY is not None else 999, p[0].NAME, p[1]))
    return both, kio_only


PAIRS, KIO_ONLY_SEEN = _pairs()


def _ours_only():
    kio_has = {(cls.NAME, v) for cls, v, *_ in PAIRS}
    out = []
    for key in APIS:
        for cls in (request_class(key), response_class(key)):
            for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
                if cls.supports(v) and (cls.NAME, v) not in kio_has:
                    out.append((cls.NAME, v))
    return out


def _unwrap(tp):
    """(inner type, is_tuple, optional) of a kio field annotation."""
    optional = False
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) != len(typing.get_args(tp))
        tp = args[0]
        origin = typing.get_origin(tp)
    if origin is tuple:
        inner = typing.get_args(tp)[0]
        inner_t, _, inner_opt = _unwrap(inner)
        return inner_t, True, optional
    return tp, False, optional


class FieldMap:
    """How one of our structs lines up with a kio dataclass at one version."""

    __slots__ = ("ours", "kio", "fields")

    def __init__(self, ours, kio_cls, version):
        self.ours, self.kio = ours, kio_cls
        hints = typing.get_type_hints(kio_cls)
        kio_fields = {f.name: f for f in dataclasses.fields(kio_cls)}
        our_fields = [f for f in ours._FIELDS if f.versions >> version & 1]
        self.fields = []
        unmatched = set(kio_fields)
        for f in our_fields:
            # kio drops the "_ms" of durations/timestamps and appends "_" to names that shadow builtins
            kname = next((n for n in (RENAMED.get((ours.__name__, f.attr)), f.attr,
                                      f.attr[:-3] if f.attr.endswith("_ms") else None, f.attr + "_")
                          if n in unmatched), None)
            if kname is None:
                raise AssertionError(f"{ours.__name__} v{version}: kio {kio_cls.__module__}.{kio_cls.__name__} "
                                     f"has no field for {f.attr} (kio fields: {sorted(kio_fields)})")
            unmatched.discard(kname)
            kf = kio_fields[kname]
            inner, is_tuple, optional = _unwrap(hints[kname])
            sub = FieldMap(f.struct, inner, version) if f.struct is not None else None
            self.fields.append((f, kname, kf.metadata.get("kafka_type"), optional, sub))
        if unmatched:
            raise AssertionError(f"{ours.__name__} v{version}: kio has fields we lack: {sorted(unmatched)}")


@cache
def _field_map(ours, version, module, name):
    return FieldMap(ours, _kio_class(module, name), version)


# ---------------------------------------------------------------------------
# values: into kio's domain, to kio objects, and both sides to plain data


def _domain_value(v, ktype, optional):
    if v is None:
        return v
    if ktype == "error_code" and v not in _KIO_CODES:
        return _KIO_CODES[v % len(_KIO_CODES)]
    if ktype == "datetime_i64" and not (0 <= v <= _MAX_TIMESTAMP_MS or (optional and v == -1)):
        return v % (_MAX_TIMESTAMP_MS + 1)
    if ktype == "timedelta_i64" and not -_MAX_DURATION_MS <= v <= _MAX_DURATION_MS:
        return v % _MAX_DURATION_MS
    return v


def _into_kio_domain(obj, fmap):
    """Map the values of ``obj`` (in place) into what kio can represent."""
    for f, _, ktype, optional, sub in fmap.fields:
        v = getattr(obj, f.attr)
        if sub is not None:
            for item in (v if f.kind == K.ARRAY else [v]) if v is not None else []:
                _into_kio_domain(item, sub)
        elif f.kind == K.ARRAY and v is not None:
            setattr(obj, f.attr, [_domain_value(x, ktype, False) for x in v])
        else:
            setattr(obj, f.attr, _domain_value(v, ktype, optional))
    return obj


def _strip_unknown(obj, fmap):
    """A copy-free strip of unknown tagged fields (kio neither keeps nor writes them)."""
    obj.unknown_tagged_fields = []
    for f, _, _, _, sub in fmap.fields:
        v = getattr(obj, f.attr)
        if sub is not None and v is not None:
            for item in v if f.kind == K.ARRAY else [v]:
                _strip_unknown(item, sub)
    return obj


def _has_unknown(obj, fmap):
    if obj.unknown_tagged_fields:
        return True
    for f, _, _, _, sub in fmap.fields:
        v = getattr(obj, f.attr)
        if sub is not None and v is not None:
            if any(_has_unknown(item, sub) for item in (v if f.kind == K.ARRAY else [v])):
                return True
    return False


def _to_kio_value(v, ktype, optional):
    if v is None:
        return None
    if ktype == "error_code":
        return KioErrorCode(v)
    if ktype in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=v)
    if ktype == "datetime_i64":
        return None if (optional and v == -1) else _EPOCH + v * _MS
    if ktype == "uuid" and v == _ZERO_UUID:
        return None  # kio's value for the all-zero UUID (what it reads, and its default for tagged UUIDs)
    return v


def to_kio(obj, fmap):
    """Build kio's object for our ``obj`` directly from the values."""
    kwargs = {}
    for f, kname, ktype, optional, sub in fmap.fields:
        v = getattr(obj, f.attr)
        if sub is not None:
            if v is None:
                kwargs[kname] = None
            elif f.kind == K.ARRAY:
                kwargs[kname] = tuple(to_kio(x, sub) for x in v)
            else:
                kwargs[kname] = to_kio(v, sub)
        elif f.kind == K.ARRAY:
            kwargs[kname] = None if v is None else tuple(_to_kio_value(x, ktype, False) for x in v)
        else:
            kwargs[kname] = _to_kio_value(v, ktype, optional)
    return fmap.kio(**kwargs)


def _plain_kio_value(v, ktype, optional):
    if v is None:
        if ktype == "datetime_i64":
            return -1
        if ktype == "uuid":
            return _ZERO_UUID  # kio reads the all-zero UUID as None
        return None
    if isinstance(v, KioErrorCode):
        return v.value
    if isinstance(v, datetime.datetime):
        # kio reads milliseconds through a float: 1 us off is its rounding, not another value
        return (v - _EPOCH + _MS / 2) // _MS
    if isinstance(v, datetime.timedelta):
        return v // _MS
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, bytes):
        return bytes(v)
    if isinstance(v, str):
        return str(v)
    return v


def plain_kio(kobj, fmap):
    out = {}
    for f, kname, ktype, optional, sub in fmap.fields:
        v = getattr(kobj, kname)
        if sub is not None:
            if v is None:
                out[f.attr] = None
            elif f.kind == K.ARRAY:
                out[f.attr] = [plain_kio(x, sub) for x in v]
            else:
                out[f.attr] = plain_kio(v, sub)
        elif f.kind == K.ARRAY:
            out[f.attr] = None if v is None else [_plain_kio_value(x, ktype, False) for x in v]
        else:
            out[f.attr] = _plain_kio_value(v, ktype, optional)
    return out


def plain_ours(obj, fmap):
    out = {}
    for f, _, _, _, sub in fmap.fields:
        v = getattr(obj, f.attr)
        if sub is not None and v is not None:
            out[f.attr] = [plain_ours(x, sub) for x in v] if f.kind == K.ARRAY else plain_ours(v, sub)
        elif isinstance(v, list):
            out[f.attr] = list(v)
        else:
            out[f.attr] = v
    return out


# ---------------------------------------------------------------------------
# one case


@cache
def _kio_codec(module, name):
    cls = _kio_class(module, name)
    return entity_reader(cls), entity_writer(cls)


def _kio_write(writer, kobj):
    buf = io.BytesIO()
    writer(buf, kobj)
    return buf.getvalue()


def check_case(cls, version, module, name, obj):
    """Every comparison for one value; returns a list of problems (empty when all agree)."""
    fmap = _field_map(cls, version, module, name)
    reader, writer = _kio_codec(module, name)
    where = f"{cls.NAME} v{version}"
    problems = []
    data = obj.encode(version)
    unknown = _has_unknown(obj, fmap)
    expected = obj
    if unknown:
        expected = cls.decode(data, version)
        _strip_unknown(expected, fmap)
    clean = expected.encode(version) if unknown else data

    # 1. kio reads our bytes, all of them, to the same values
    try:
        kobj, size = reader(data, 0)
    except Exception as exc:  # noqa: BLE001 - any kio failure is a finding
        return [f"{where}: kio cannot read our bytes: {type(exc).__name__}: {exc}"]
    if size != len(data):
        problems.append(f"{where}: kio read {size} of our {len(data)} bytes")
    if plain_kio(kobj, fmap) != plain_ours(expected, fmap):
        problems.append(f"{where}: kio read other values\n"
                        f" ours {plain_ours(expected, fmap)}\n kio  {plain_kio(kobj, fmap)}")
    # 2. kio writes back what it read, byte for byte (without the unknown tags it skipped)
    back = _kio_write(writer, kobj)
    if back != clean:
        problems.append(f"{where}: kio re-encoded other bytes\n ours {clean.hex()}\n kio  {back.hex()}")
    # 3. kio writes the same bytes from the values themselves
    built = _kio_write(writer, to_kio(expected, fmap))
    if built != clean:
        problems.append(f"{where}: kio encodes the values to other bytes\n ours {clean.hex()}\n kio  {built.hex()}")
    # 4. we read kio's bytes to the same values
    for label, kb in (("re-encoded", back), ("encoded", built)):
        try:
            ours_back, end = cls.decode(kb, version, with_end=True)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{where}: kafkaproto cannot read kio's {label} bytes: {exc}")
            continue
        if end != len(kb) or ours_back != expected:
            problems.append(f"{where}: kafkaproto reads kio's {label} bytes to another value")
    return problems


def _value(cls, version, module, name, seed):
    rng = random.Random(seed * 1_000_003 + (cls.API_KEY or 0) * 131 + version)
    obj = random_message(cls, version, rng, unknown_tags=False)  # kio cannot skip unknown tags: see below
    return _into_kio_domain(obj, _field_map(cls, version, module, name))


# ---------------------------------------------------------------------------
# tests


def test_kio_version_and_coverage():
    assert kio.__version__ == KIO_VERSION
    # every kio entity we lack is a known Kafka 4.2 bump (or kio's own extra)
    assert set(KIO_ONLY_SEEN) == KIO_ONLY, sorted(set(KIO_ONLY_SEEN) ^ KIO_ONLY)
    kinds = {}
    for _, _, kind, _, _ in PAIRS:
        kinds[kind] = kinds.get(kind, 0) + 1
    # request and response pairs: every API key kio knows, at every version both define
    assert kinds["request"] == kinds["response"] >= 290
    assert kinds.get("header", 0) == 4 and kinds.get("data", 0) >= 10
    # kio has no ZooKeeper-era RPCs, and stops before Kafka 4.4's keys 93 and 94
    assert set(api_key_map) == {k for k in APIS if k not in (4, 5, 6, 7, 93, 94)}
    ours_only = _ours_only()
    # what only we cover: the versions Kafka 4.0 removed (our snapshot layer, kio starts above
    # them) and the ZooKeeper-era keys 4-7
    kio_lowest = {}
    for cls, v, *_ in PAIRS:
        kio_lowest[cls.NAME] = min(v, kio_lowest.get(cls.NAME, v))
    newer = set()
    for name, v in ours_only:
        if get(name).API_KEY in (4, 5, 6, 7, 93, 94) or v < kio_lowest.get(name, -1):
            continue
        newer.add((name, v))
    assert newer == NEWER_THAN_KIO, sorted(newer ^ NEWER_THAN_KIO)
    assert ("ProduceRequest", 2) in ours_only and ("FetchResponse", 3) in ours_only
    print(f"\nkio {KIO_VERSION}: {len(PAIRS)} (class, version) pairs in common {kinds}; "
          f"{len(KIO_ONLY_SEEN)} only in kio; {len(ours_only)} only in kafkaproto")


def test_field_layouts_agree():
    """kio's dataclass for every common (class, version) has exactly our fields, nested structs too."""
    for cls, version, _, module, name in PAIRS:
        _field_map(cls, version, module, name)  # raises on any field one side lacks


def _java_verdict(java_oracle_for, cls, version, obj):
    """What Kafka's own classes make of our bytes for ``obj``."""
    if cls.API_KEY is None:
        return "no Java verdict (not an API message)"
    data = obj.encode(version)
    try:
        rep = java_oracle_for(cls.API_KEY, version).decode(cls.API_KEY, cls.KIND, version, data)
    except Exception as exc:  # noqa: BLE001
        return f"Java cannot read our bytes either: {exc}"
    if rep["reencoded"] == data and not rep["trailing"]:
        return "Java reads our bytes and writes them back unchanged: kafkaproto agrees with Kafka"
    return f"Java disagrees with kafkaproto: it re-encodes {rep['reencoded'].hex()} (trailing {rep['trailing']})"


def test_every_pair_round_trips_through_kio(request):
    problems, cases = {}, 0
    for cls, version, _, module, name in PAIRS:
        for seed in range(SEEDS):
            cases += 1
            obj = _value(cls, version, module, name, seed)
            found = check_case(cls, version, module, name, obj)
            if found:
                problems.setdefault((cls.NAME, version), []).append((obj, found))
    assert cases == SEEDS * len(PAIRS)
    if problems:
        # Kafka's own classes decide who is wrong (the JVM is only started when needed).
        java_oracle_for = request.getfixturevalue("java_oracle_for")
        report = []
        for (_name, version), found in sorted(problems.items())[:10]:
            obj, lines = found[0]
            report.append("\n".join(lines[:2]) + "\n => " + _java_verdict(java_oracle_for, type(obj), version, obj))
        pytest.fail(f"{len(problems)} of {len(PAIRS)} pairs disagree with kio:\n" + "\n\n".join(report))


def test_kio_limits_decided_by_java(java_oracle):
    """What kio 0.6.5 cannot read, although Kafka's own classes read and rewrite it unchanged:
    unknown tagged fields (kio raises KeyError instead of skipping them), error codes it has
    no enum member for, negative or far-future timestamps, durations beyond a timedelta.  These are kio's limits,
    not ours; the values of the round-trip tests above are mapped into kio's domain because of them."""
    from kafkaproto.messages import (
        ApiVersionsResponse,
        CreateDelegationTokenRequest,
        CreateDelegationTokenResponse,
        MetadataRequest,
    )

    cases = []
    md = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
    md.unknown_tagged_fields = [(7, b"\x01\x02")]
    md.topics[0].unknown_tagged_fields = [(4000, b"")]
    cases.append((md, 12, KeyError))
    av = ApiVersionsResponse(error_code=-20000)  # no such code: Kafka maps it to UNKNOWN_SERVER_ERROR when used
    cases.append((av, 3, ValueError))
    cases.append((CreateDelegationTokenResponse(issue_timestamp_ms=-2), 3, OutOfBoundValue))
    cases.append((CreateDelegationTokenResponse(issue_timestamp_ms=2**62), 3, ValueError))  # year out of range
    cases.append((CreateDelegationTokenRequest(max_lifetime_ms=2**62), 3, ValueError))  # timedelta overflow
    for obj, version, kio_error in cases:
        cls = type(obj)
        module, _, name = schema_name_map[api_key_map[cls.API_KEY]][version][
            EntityType.request if cls.KIND == "request" else EntityType.response].partition(":")
        reader, _ = _kio_codec(module, name)
        data = obj.encode(version)
        with pytest.raises(kio_error):
            reader(data, 0)
        rep = java_oracle.decode(cls.API_KEY, cls.KIND, version, data)
        assert rep["reencoded"] == data and rep["trailing"] == 0, (cls.NAME, version)
        assert cls.decode(data, version) == obj


_HYP_PAIRS = [p for p in PAIRS if p[0].API_KEY is not None]


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_hypothesis_values_round_trip_through_kio(data):
    cls, version, _, module, name = data.draw(st.sampled_from(_HYP_PAIRS), label="pair")
    obj = data.draw(strategy(cls, version), label="value")
    fmap = _field_map(cls, version, module, name)
    _into_kio_domain(_strip_unknown(obj, fmap), fmap)
    assert check_case(cls, version, module, name, obj) == []
