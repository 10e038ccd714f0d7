"""Decode captured frames and describe each in one line, like a dissector.

:func:`dissect` decodes the frames :func:`~kafkaproto.capture.read_frames`
yields (requests by their own header, responses with the api key and
version of their request) and moves each from ``framed`` to ``decoded`` or
``undecodable`` in the accounting; :func:`decode_frame` is that decode for
one frame, whatever holds it (an object, or a view of a frame batch).
:func:`format_line` and :func:`summary` make the text ``kafkaproto inspect``
prints; :func:`error_codes` finds the non-zero error codes of a message
with their field paths.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from ... import _kinds as K
from ..._impl import codec as _codec
from ...error_codes import error_name
from ...errors import KafkaProtocolError
from ...messages import api_name, removed_in_kafka4
from ...protocol import decode_request, decode_response, request_header_version, response_header_version, trailing_bytes
from ..accounting import Accounting
from ..objects import REQUEST, CapturedFrame

__all__ = ["UNPAIRED", "Dissected", "Summaries", "decode_frame", "dissect", "error_codes", "format_line",
           "frame_line", "line_text", "removed_in_kafka4", "summary"]

#: the error of a response whose request is not in the capture
UNPAIRED = "no request with this correlation id in the capture"


class Dissected:
    """A captured frame with its decoded header and message, or the error
    (``error`` its text, ``exception`` the KafkaProtocolError; None for an
    unpaired response, which was not decoded)."""

    __slots__ = ("frame", "header", "message", "error", "client_id", "exception")

    @property
    def trailing_bytes(self) -> int | None:
        """Bytes the frame had after its message body (None: not decoded)."""
        return trailing_bytes(self.message) if self.message is not None else None

    def __init__(self, frame: CapturedFrame, header=None, message=None, error: str | None = None,
                 client_id: str | None = None, exception: KafkaProtocolError | None = None) -> None:
        self.frame = frame
        self.header = header
        self.message = message
        self.error = error
        self.client_id = client_id
        self.exception = exception


def decode_frame(frame, is_request: bool, api_key: int | None = None, api_version: int | None = None, *,
                 zero_copy: bool = False):
    """One frame (size prefix removed) → ``(header, message, None)``, or
    ``(header or None, None, error)`` when it does not decode (the error's
    ``partial`` holds what was read).  A request by its own header; a
    response with the api key and version of its request."""
    try:
        if is_request:
            header, msg = decode_request(frame, zero_copy=zero_copy)
        else:
            header, msg = decode_response(frame, api_key, api_version, zero_copy=zero_copy)
    except KafkaProtocolError as exc:
        return getattr(exc, "header", None), None, exc
    return header, msg, None


def dissect(frames: Iterable[CapturedFrame], acc: Accounting | None = None) -> Iterator[Dissected]:
    """Decode each frame; the accounting moves ``framed`` frames to ``decoded``
    or ``undecodable`` (``unpaired`` responses stay as they are).  A response's
    client id is its request's (the capture layer paired them)."""
    acc = acc if acc is not None else Accounting()
    for f in frames:
        is_request = f.direction == REQUEST
        if not is_request and f.status == "unpaired":
            yield Dissected(f, error=UNPAIRED, client_id=f.client_id)
            continue
        header, msg, exc = decode_frame(f.frame, is_request, f.api_key, f.api_version)
        acc.move(f.status, "decoded" if exc is None else "undecodable", len(f.frame) + 4)
        client_id = header.client_id if is_request and exc is None else f.client_id
        yield Dissected(f, header, msg, None if exc is None else str(exc), client_id, exc)


def _names(items, limit: int = 3) -> list[str]:
    names = []
    for t in items or ():
        name = getattr(t, "name", None) or getattr(t, "topic", None) or None
        if name is None and getattr(t, "topic_id", None) is not None:
            name = str(t.topic_id)[:8]
        if name is not None:
            names.append(str(name))
    if len(names) > limit:
        names = names[:limit] + [f"+{len(names) - limit}"]
    return names


_ERROR_PLANS: dict[type, tuple] = {}


def _error_plan(cls) -> tuple:
    """``(error code attributes, (attribute, is array) of nested structs that
    hold error codes)`` of a message or struct class, found once."""
    plan = _ERROR_PLANS.get(cls)
    if plan is None:
        _ERROR_PLANS[cls] = ((), ())  # a struct that held itself would end here
        codes, nested = [], []
        for f in cls._FIELDS:
            if f.struct is not None:
                if any(_error_plan(f.struct)):
                    nested.append((f.attr, f.kind == K.ARRAY))
            elif f.kind == K.INT16 and f.attr.endswith("error_code"):
                codes.append(f.attr)
        plan = _ERROR_PLANS[cls] = (tuple(codes), tuple(nested))
    return plan


def error_codes(msg) -> list[tuple[str, int]]:
    """Every non-zero ``*error_code`` field of a decoded message, as
    ``(field path, code)`` in field order (``"topics[2].partitions[0].error_code"``)."""
    out: list[tuple[str, int]] = []
    if hasattr(msg, "_FIELDS"):
        _walk_errors(msg, [], out)
    return out


def _walk_errors(obj, path: list, out: list) -> None:
    codes, nested = _error_plan(type(obj))
    for a in codes:
        v = getattr(obj, a)
        if v:
            out.append(("".join(path) + a, v))
    for a, is_array in nested:
        v = getattr(obj, a)
        if v is None:
            continue
        if is_array:
            for i, item in enumerate(v):
                path.append(f"{a}[{i}].")
                _walk_errors(item, path, out)
                path.pop()
        else:
            path.append(a + ".")
            _walk_errors(v, path, out)
            path.pop()


_TOPIC_ATTRS = ("topics", "topic_data", "responses", "creatable_topics")
_LABELLED = (("group_id", "group"), ("key", "key"), ("transactional_id", "txn"))
_SUMMARY_PLANS: dict[type, tuple] = {}


def _summary_plan(cls) -> tuple:
    """What :func:`summary` reads of a message class, found once: the topic
    list attributes it has, its labelled strings, whether it has coordinator
    keys, a client software name, brokers, and (a response) error codes.  An
    attribute the class does not have is not asked for on every message (a
    missing attribute costs an exception inside ``getattr``)."""
    plan = _SUMMARY_PLANS.get(cls)
    if plan is None:
        has = set(getattr(cls, "_ATTRS", ()))
        plan = _SUMMARY_PLANS[cls] = (
            tuple(a for a in _TOPIC_ATTRS if a in has),
            tuple((a, label) for a, label in _LABELLED if a in has),
            "coordinator_keys" in has, "client_software_name" in has, "brokers" in has,
            getattr(cls, "KIND", "") == "response" and any(_error_plan(cls)))
    return plan


def summary(msg) -> str:
    """A short description: topics, group, coordinator key, software, errors."""
    topics, labelled, has_keys, has_software, has_brokers, has_errors = _summary_plan(type(msg))
    parts = []
    for attr in topics:
        items = getattr(msg, attr)
        names = _names(items) if isinstance(items, list) else None
        if names:
            parts.append("topics=" + ",".join(names))
            break
    for attr, label in labelled:
        v = getattr(msg, attr)
        if isinstance(v, str) and v:
            parts.append(f"{label}={v}")
    if has_keys:
        keys = msg.coordinator_keys
        if keys:
            parts.append("keys=" + ",".join(map(str, keys[:3])))
    if has_software and msg.client_software_name:
        parts.append(f"software={msg.client_software_name}/{msg.client_software_version}")
    if has_brokers:
        brokers = msg.brokers
        if isinstance(brokers, list) and brokers and hasattr(brokers[0], "host"):
            parts.append("brokers=" + ",".join(f"{b.host}:{b.port}" for b in brokers[:3]))
    if has_errors:
        errors: dict[str, int] = {}
        for _path, code in error_codes(msg):
            name = error_name(code)
            errors[name] = errors.get(name, 0) + 1
        if errors:
            parts.append("errors=" + ",".join(f"{k}" + (f"x{v}" if v > 1 else "") for k, v in errors.items()))
    return " ".join(parts)


_last_second: list = [None, ""]


def _clock(ts: int | None) -> str:
    if ts is None:
        return "-"
    sec, ns = divmod(ts, 1_000_000_000)
    if _last_second[0] != sec:  # frames come in time order: one strftime per second
        _last_second[:] = [sec, time.strftime("%H:%M:%S", time.gmtime(sec))]
    return f"{_last_second[1]}.{ns // 1000:06d}"


_api_names: dict[int, str] = {}


def _api(api_key: int) -> str:
    name = _api_names.get(api_key)
    if name is None:
        try:
            name = api_name(api_key)
        except KafkaProtocolError:
            name = f"api{api_key}"
        _api_names[api_key] = name
    return name


def format_line(n: int, d: Dissected, *, with_place: bool = True) -> str:
    """``#n time conn client > server API vV cid=.. client='..' summary [flags]``;
    ``with_place=False`` leaves out time, connection and direction (a raw
    stream of requests has none)."""
    f = d.frame
    return frame_line(n, f.conn if with_place else None, f.direction == REQUEST, f.ts, f.api_key, f.api_version,
                      f.correlation_id, d.client_id, d.message, d.error, f.status == "unpaired", f.latency_ns)


_heads: dict = {}  # (connection, direction) / (api key, version) -> their text in a line


def frame_line(n: int, conn, is_request: bool, ts: int | None, api_key: int | None, api_version: int | None,
               correlation_id: int | None, client_id: str | None, message, error: str | None, unpaired: bool,
               latency_ns: int | None) -> str:
    """:func:`format_line` from a frame's parts (``conn`` None: no time,
    connection or direction, as in a raw stream of requests)."""
    return line_text(n, conn, is_request, ts, api_key, api_version, correlation_id, client_id, error, unpaired,
                     latency_ns, "" if error is not None else summary(message),
                     0 if error is not None else trailing_bytes(message))


def line_text(n: int, conn, is_request: bool, ts: int | None, api_key: int | None, api_version: int | None,
              correlation_id: int | None, client_id: str | None, error: str | None, unpaired: bool,
              latency_ns: int | None, desc: str, extra: int) -> str:
    """:func:`frame_line` with the message's :func:`summary` (``desc``) and
    trailing bytes (``extra``) given."""
    head = f"#{n:<4}"
    if conn is not None:
        place = _heads.get((conn, is_request))
        if place is None:
            if len(_heads) > 1 << 16:
                _heads.clear()
            arrow = f"{conn.client} > {conn.server}" if is_request else f"{conn.client} < {conn.server}"
            place = _heads[(conn, is_request)] = f" c{conn.id} {arrow}"
        head += f" {_clock(ts)}{place}"
    api = _heads.get((api_key, api_version))
    if api is None:
        api = _heads[(api_key, api_version)] = f" {_api(api_key):<16} v{api_version:<3}" if api_key is not None \
            else f" {'?':<16} {'':4}"
    head += api
    cid = correlation_id if correlation_id is not None else "-"
    head += f" cid={cid!s:<5}"
    if client_id is not None or is_request:
        head += f" client={client_id!r}"
    if error is not None:
        what = "unpaired" if unpaired else "undecodable"
        return f"{head} {what}: {error}"
    text = f"{head} {desc}".rstrip()
    if latency_ns is not None:
        text += f" {latency_ns / 1e6:.3f}ms"
    if removed_in_kafka4(api_key, api_version):
        text += "  [removed in Kafka 4.0]"
    if extra:
        text += f"  [{extra} bytes after the body]"
    return text


class Summaries:
    """What a line says of a message body, remembered by the body's bytes:
    real client traffic repeats its bodies (ApiVersions, Metadata,
    heartbeats, coordinator look-ups: most frames of a capture), and a
    body's summary depends on nothing else (its api key, version and
    direction).  ``key(frame, ...)`` decodes the frame's header alone and
    gives ``(memo key, client id)``, or None when the header does not decode
    or the body is too long to remember (the caller decodes the frame
    whole); ``memo`` maps a key to ``(summary, trailing bytes, has errors)``
    of a body that decoded.  Bounded: at most ``entries`` bodies of at most
    ``body_bytes`` each."""

    __slots__ = ("memo", "entries", "body_bytes")

    def __init__(self, entries: int = 4096, body_bytes: int = 2048) -> None:
        self.memo: dict = {}
        self.entries, self.body_bytes = entries, body_bytes

    def key(self, frame, is_request: bool, api_key: int, api_version: int):
        try:
            if is_request:
                hv = request_header_version(api_key, api_version)
                _, _, _, client_id, _, end = _codec.decode_request_header(frame, hv, 0)
            else:
                hv = response_header_version(api_key, api_version)
                _, _, end = _codec.decode_response_header(frame, hv, 0)
                client_id = None
        except (KafkaProtocolError, KeyError):
            return None
        if len(frame) - end > self.body_bytes:
            return None
        return (is_request, api_key, api_version, bytes(frame[end:])), client_id

    def remember(self, key, msg) -> tuple:
        got = (summary(msg), trailing_bytes(msg), bool(error_codes(msg)))
        if len(self.memo) >= self.entries:
            self.memo.clear()
        self.memo[key] = got
        return got
