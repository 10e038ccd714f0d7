"""Decode captured frames and describe each in one line, like a dissector.

:func:`dissect` decodes the frames :func:`~kafkaproto.capture.read_frames`
yields (requests by their own header, responses with the api key and
version of their request) and moves each from ``framed`` to ``decoded`` or
``undecodable`` in the accounting.  :func:`format_line` and :func:`summary`
make the text ``kafkaproto inspect`` prints.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from ..error_codes import error_name
from ..errors import KafkaProtocolError
from ..messages import api_name, request_class
from ..messages._runtime import MAX_MASK_VERSION, versions_mask
from ..protocol import decode_request, decode_response, trailing_bytes
from .accounting import Accounting
from .streams import REQUEST, CapturedFrame

__all__ = ["Dissected", "dissect", "format_line", "removed_in_kafka4", "summary"]


class Dissected:
    """A captured frame with its decoded header and message, or the error."""

    __slots__ = ("frame", "header", "message", "error", "client_id")

    @property
    def trailing_bytes(self) -> int | None:
        """Bytes the frame had after its message body (None: not decoded)."""
        return trailing_bytes(self.message) if self.message is not None else None

    def __init__(self, frame: CapturedFrame, header=None, message=None, error: str | None = None,
                 client_id: str | None = None) -> None:
        self.frame = frame
        self.header = header
        self.message = message
        self.error = error
        self.client_id = client_id


def dissect(frames: Iterable[CapturedFrame], acc: Accounting | None = None) -> Iterator[Dissected]:
    """Decode each frame; the accounting moves ``framed`` frames to ``decoded``
    or ``undecodable`` (``unpaired`` responses stay as they are).  A response's
    client id is its request's (the capture layer paired them)."""
    acc = acc if acc is not None else Accounting()
    for f in frames:
        n = len(f.frame) + 4
        if f.direction == REQUEST:
            try:
                header, msg = decode_request(f.frame)
            except KafkaProtocolError as exc:
                acc.move(f.status, "undecodable", n)
                yield Dissected(f, error=str(exc), client_id=f.client_id)
                continue
            acc.move(f.status, "decoded", n)
            yield Dissected(f, header, msg, client_id=header.client_id)
            continue
        if f.status == "unpaired":
            yield Dissected(f, error="no request with this correlation id in the capture", client_id=f.client_id)
            continue
        try:
            header, msg = decode_response(f.frame, f.api_key, f.api_version)
        except KafkaProtocolError as exc:
            acc.move(f.status, "undecodable", n)
            yield Dissected(f, error=str(exc), client_id=f.client_id)
            continue
        acc.move(f.status, "decoded", n)
        yield Dissected(f, header, msg, client_id=f.client_id)


_version_sets: dict[int, int] = {}


def removed_in_kafka4(api_key: int | None, version: int | None) -> bool:
    """Is this (api key, version) one Kafka 4.0 no longer speaks?  Those are the
    versions only the older schema snapshot has (KIP-896 raised the lower
    bounds: Produce v0-2, CreateTopics v0-1, keys 4-7...).  A version newer than
    every schema is not counted as removed."""
    if api_key is None or version is None or not 0 <= version <= MAX_MASK_VERSION:
        return False
    mask = _version_sets.get(api_key)
    if mask is None:
        try:
            mask = versions_mask(request_class(api_key).SNAPSHOT_ONLY_VERSIONS)
        except KafkaProtocolError:
            mask = 0
        _version_sets[api_key] = mask
    return bool(mask >> version & 1)


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


def _error_codes(value, out: dict[str, int], depth: int = 0) -> None:
    """Non-zero ``*error_code`` fields anywhere in a message (bounded walk)."""
    if depth > 6 or len(out) > 8:
        return
    attrs = getattr(value, "_ATTRS", None)
    if attrs is None:
        return
    for a in attrs:
        v = getattr(value, a)
        if a.endswith("error_code") and isinstance(v, int):
            if v:
                name = error_name(v)
                out[name] = out.get(name, 0) + 1
        elif isinstance(v, list) and v and hasattr(v[0], "_ATTRS"):
            for item in v[:1000]:
                _error_codes(item, out, depth + 1)


def summary(msg) -> str:
    """A short description: topics, group, coordinator key, software, errors."""
    parts = []
    for attr in ("topics", "topic_data", "responses", "creatable_topics"):
        names = _names(getattr(msg, attr, None) if isinstance(getattr(msg, attr, None), list) else None)
        if names:
            parts.append("topics=" + ",".join(names))
            break
    for attr, label in (("group_id", "group"), ("key", "key"), ("transactional_id", "txn")):
        v = getattr(msg, attr, None)
        if isinstance(v, str) and v:
            parts.append(f"{label}={v}")
    keys = getattr(msg, "coordinator_keys", None)
    if keys:
        parts.append("keys=" + ",".join(map(str, keys[:3])))
    if getattr(msg, "client_software_name", ""):
        parts.append(f"software={msg.client_software_name}/{msg.client_software_version}")
    brokers = getattr(msg, "brokers", None)
    if isinstance(brokers, list) and brokers and hasattr(brokers[0], "host"):
        parts.append("brokers=" + ",".join(f"{b.host}:{b.port}" for b in brokers[:3]))
    if getattr(msg, "KIND", "") == "response":
        errors: dict[str, int] = {}
        _error_codes(msg, errors)
        if errors:
            parts.append("errors=" + ",".join(f"{k}" + (f"x{v}" if v > 1 else "") for k, v in errors.items()))
    return " ".join(parts)


def _clock(ts: int | None) -> str:
    if ts is None:
        return "-"
    sec, ns = divmod(ts, 1_000_000_000)
    return time.strftime("%H:%M:%S", time.gmtime(sec)) + f".{ns // 1000:06d}"


def format_line(n: int, d: Dissected, *, with_place: bool = True) -> str:
    """``#n time conn client > server API vV cid=.. client='..' summary [flags]``;
    ``with_place=False`` leaves out time, connection and direction (a raw
    stream of requests has none)."""
    f = d.frame
    head = f"#{n:<4}"
    if with_place:
        arrow = f"{f.conn.client} > {f.conn.server}" if f.direction == REQUEST else f"{f.conn.client} < {f.conn.server}"
        head += f" {_clock(f.ts)} c{f.conn.id} {arrow}"
    if f.api_key is not None:
        try:
            api = api_name(f.api_key)
        except KafkaProtocolError:
            api = f"api{f.api_key}"
        head += f" {api:<16} v{f.api_version:<3}"
    else:
        head += f" {'?':<16} {'':4}"
    cid = f.correlation_id if f.correlation_id is not None else "-"
    head += f" cid={cid!s:<5}"
    if d.client_id is not None or f.direction == REQUEST:
        head += f" client={d.client_id!r}"
    if d.error is not None:
        what = "unpaired" if f.status == "unpaired" else "undecodable"
        return f"{head} {what}: {d.error}"
    text = f"{head} {summary(d.message)}".rstrip()
    lat = f.latency_ns
    if lat is not None:
        text += f" {lat / 1e6:.3f}ms"
    if removed_in_kafka4(f.api_key, f.api_version):
        text += "  [removed in Kafka 4.0]"
    extra = d.trailing_bytes
    if extra:
        text += f"  [{extra} bytes after the body]"
    return text
