"""Every Kafka message class, generated from Kafka's JSON schemas.

Classes load on first use: ``from kafkaproto.messages import MetadataResponse``
imports only the module that holds it.  :func:`request_class` and
:func:`response_class` look a class up by api key.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import KafkaProtocolError, UnknownApiError
from ._gen import APIS, CLASSES, VERSIONS
from ._gen.error_codes import _RETRIABLE as RETRIABLE_CODES
from ._gen.error_codes import ErrorCode

if TYPE_CHECKING:
    # Type checkers see every class here (from _gen/__init__.pyi); at run time
    # a class's module is imported when the class is first asked for.
    from ._gen import *  # noqa: F403
    from ._internal import CLASSES as INTERNAL_CLASSES
    from ._internal import LOGS as INTERNAL_LOGS
    from ._runtime import Message

__all__ = ["APIS", "CLASSES", "INTERNAL_CLASSES", "INTERNAL_LOGS", "RETRIABLE_CODES", "ErrorCode", "Message",
           "api_name", "decode_versioned", "get", "internal_class", "removed_in_kafka4", "request_class",
           "response_class", "version_masks", "version_plans"]


_LOADED: dict[str, type] = {}


def get(name: str) -> type[Message]:
    """The class named ``name`` (``"MetadataResponse"``, ``"ConsumerProtocolSubscription"``...)."""
    cls = _LOADED.get(name)
    if cls is not None:
        return cls
    try:
        module, _, _ = CLASSES[name]
    except KeyError:
        raise AttributeError(f"no Kafka message named {name}") from None
    cls = _LOADED[name] = getattr(importlib.import_module(f"{__name__}._gen.{module}"), name)
    return cls


def decode_versioned(name: str, raw) -> tuple[int, Message] | None:
    """A message that starts with its own version (int16), as the consumer
    protocol's subscription and assignment bytes do: ``(version, message)``
    of class ``name`` (:func:`get`), or None when ``raw`` is shorter than a
    version or does not read as one."""
    if raw is None or len(raw) < 2:
        return None
    version = int.from_bytes(raw[:2], "big", signed=True)
    try:
        msg, _end = get(name).decode(bytes(raw), version, 2, with_end=True)
    except (KafkaProtocolError, ValueError):
        return None
    return version, msg


def internal_class(name: str) -> type[Message]:
    """The class of a record of Kafka's own logs (``"OffsetCommitValue"``,
    ``"TopicRecord"``...: :data:`INTERNAL_CLASSES`), generated from the
    schemas in Kafka's jars."""
    from . import _internal

    cls = _LOADED.get(name)
    if cls is None:
        try:
            module = _internal.CLASSES[name][0]
        except KeyError:
            raise AttributeError(f"no record of Kafka's own logs named {name}") from None
        cls = _LOADED[name] = getattr(importlib.import_module(f"{__name__}._internal.{module}"), name)
    return cls


def __getattr__(name: str):
    if name in ("INTERNAL_CLASSES", "INTERNAL_LOGS"):
        # the records of Kafka's own logs: name -> (module, kind, record type); log -> its record kinds
        from . import _internal

        got = globals()[name] = _internal.CLASSES if name == "INTERNAL_CLASSES" else _internal.LOGS
        return got
    if name == "Message":  # the base of every message class (its module needs the engine: loaded when asked)
        from ._runtime import Message

        globals()["Message"] = Message
        return Message
    if name in CLASSES:
        cls = get(name)
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(CLASSES))


def _api(api_key: int):
    try:
        return APIS[api_key]
    except (KeyError, TypeError):
        raise UnknownApiError(f"api key {api_key} is not known", "api key") from None


def request_class(api_key: int) -> type[Message]:
    return get(_api(api_key)[0])


def response_class(api_key: int) -> type[Message]:
    return get(_api(api_key)[1])


def api_name(api_key: int) -> str:
    """``"Metadata"`` for 3; raises UnknownApiError for keys without a schema."""
    return _api(api_key)[0][: -len("Request")]


_MASKS: dict[int, tuple] = {}


def version_masks(api_key: int) -> tuple:
    """``(request valid, request flexible, request flexible from, response valid,
    response flexible, response flexible from)`` of ``api_key``: versions 0..63
    as bitmasks, and the version from which every later one is flexible (None
    when the schema's flexible versions are not open-ended) — what a header's
    version follows from, known without loading the api's classes (the same
    as their ``supports`` and ``is_flexible``)."""
    got = _MASKS.get(api_key)
    if got is None:
        from ._runtime import open_from, versions_mask

        _api(api_key)
        rv, rf, sv, sf = VERSIONS[api_key]
        got = _MASKS[api_key] = (versions_mask(rv), versions_mask(rf), open_from(rf),
                                 versions_mask(sv), versions_mask(sf), open_from(sf))
    return got


_VERSION_PLANS: dict = {}


def version_plans(cls: type[Message], engine=None) -> tuple:
    """The plan of each version 0..63 of message class ``cls`` (None where it has
    none), for ``engine`` (a message engine module; default: the active one): what
    a loop that runs the engine's programs over many frames (the Arrow decoders)
    is handed.  Built once per class and engine."""
    got = _VERSION_PLANS.get((cls, engine))
    if got is None:
        from ._runtime import build_plan
        from ._runtime import engine as active

        # plans of the active engine are cached on the class; another engine's here
        cache = None if engine is None or engine is active else {}
        got = _VERSION_PLANS[(cls, engine)] = tuple(
            build_plan(cls, v, cls.is_flexible(v), f"{cls.NAME} v{v}", eng=engine, cache=cache)
            if cls.supports(v) else None for v in range(64))
    return got


_removed: dict[tuple[int, int], bool] = {}


def removed_in_kafka4(api_key: int | None, version: int | None) -> bool:
    """Is this (api key, version) one Kafka 4.0 no longer speaks?  Those are the
    versions only the older schema snapshot has (KIP-896 raised the lower
    bounds: Produce v0-2, CreateTopics v0-1, keys 4-7...).  A version newer than
    every schema is not counted as removed."""
    got = _removed.get((api_key, version))
    if got is None:
        got = _removed_now(api_key, version)
        if len(_removed) < 1 << 16:
            _removed[(api_key, version)] = got
    return got


def _removed_now(api_key, version) -> bool:
    from ._runtime import MAX_MASK_VERSION, versions_mask

    if not isinstance(api_key, int) or not isinstance(version, int) or not 0 <= version <= MAX_MASK_VERSION:
        return False
    try:
        mask = versions_mask(request_class(api_key).SNAPSHOT_ONLY_VERSIONS)
    except KafkaProtocolError:
        return False
    return bool(mask >> version & 1)
