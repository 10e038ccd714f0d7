"""``kafkaproto inspect``: a protocol debugger over captures.

The frames come from the capture walker as columns
(:func:`~kafkaproto.capture.read_frame_batches`); the filters on api key,
client id, connection and time are masks over those columns, so a frame
they leave out is never decoded.  Each frame they keep is decoded as
objects (:func:`~kafkaproto.capture.tools.dissect.decode_frame`, over a view of
the batch's bytes) and printed as one line (:func:`~kafkaproto.capture.
dissect.frame_line`), an indented field dump (``verbose``) or one JSON
object (``json``: :func:`frame_json`).

A pipe, a FIFO or standard input is read as a stream (:class:`StreamInput`):
its kind is told from its first bytes without reading them twice, and the
frames gathered so far go out whenever it has nothing more waiting, so
``tcpdump -w - ... | kafkaproto inspect -`` shows frames as they arrive.
"""

from __future__ import annotations

import base64
import datetime
import fnmatch
import math
import os
import re
import select
import stat
import struct
import sys
import uuid
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation

import numpy as np

from ... import COMPILED
from ..._limits import DEFAULT_MAX_FRAME_SIZE
from ...error_codes import ErrorCode
from ...errors import KafkaProtocolError
from ...messages import APIS, api_name, request_class, response_class
from ...protocol import request_header_version, response_header_version, trailing_bytes
from ..accounting import Accounting
from ..dataset import WholeTask, open_capture
from ..formats.pcap import CaptureFormatError, packet_batches, sniff_format
from ..formats.raw import raw_batches
from ..frames import BATCH_BYTES, BATCH_ROWS, FLAGS, FrameBatch
from ..read import capture_kind
from ..walker import streams
from .dissect import UNPAIRED, Summaries, decode_frame, error_codes, frame_line, line_text, removed_in_kafka4

__all__ = ["FrameFilter", "InputError", "StreamInput", "check_raw", "frame_json", "inspect", "open_input",
           "parse_apis", "parse_time"]

_FL_HEADER = FLAGS["header"]
_NO_TS = streams._sink.NO_TS


class InputError(Exception):
    """The input is no capture, or cannot be read (the message says which)."""


# ---------------------------------------------------------------------------
# streams


class StreamInput:
    """A pipe, FIFO, socket or standard input, read once and in order.

    :meth:`read` has a file's meaning (``n`` bytes, fewer only at the end);
    :meth:`read1` returns what has come (at least a byte, unless at the
    end); :meth:`peek` looks ahead without using up; :meth:`waiting` says
    whether bytes are here to read now, without waiting for any."""

    mode = "rb"
    closed = False

    def __init__(self, fd: int, name: str, step: int = 1 << 16, *, owned: bool = False) -> None:
        self.fd = fd
        self.name = name
        self.step = step
        #: close ``fd`` with the stream (not standard input's)
        self.owned = owned
        self._buf = bytearray()
        self._pos = 0
        self._used = 0
        self._eof = False

    def _more(self) -> bool:
        """One read of what has come (waits until something does, or the end)."""
        if self._eof:
            return False
        chunk = os.read(self.fd, self.step)
        if not chunk:
            self._eof = True
            return False
        if self._pos:
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += chunk
        return True

    def _here(self) -> int:
        return len(self._buf) - self._pos

    def peek(self, n: int) -> bytes:
        while self._here() < n and self._more():
            pass
        return bytes(self._buf[self._pos:self._pos + n])

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            while self._more():
                pass
            n = self._here()
        while self._here() < n and self._more():
            pass
        out = bytes(self._buf[self._pos:self._pos + n])
        self._pos += len(out)
        self._used += len(out)
        return out

    def read1(self, n: int = -1) -> bytes:
        if not self._here():
            self._more()
        return self.read(min(n, self._here()) if n is not None and n >= 0 else self._here())

    def tell(self) -> int:
        return self._used

    def waiting(self) -> bool:
        if self._here() or self._eof:
            return True
        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):  # no select on this kind of file: hand each frame out as it comes
            return False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        if self.owned and not self.closed:
            self.closed = True
            os.close(self.fd)


def _stream_of(path: str) -> StreamInput | None:
    """The stream ``path`` is read as (``-``, a pipe, a FIFO, a socket, a
    character device), None for a file or folder."""
    if path == "-":
        st = os.fstat(0)
        if stat.S_ISREG(st.st_mode):
            return None
        if os.isatty(0):
            raise InputError("standard input is a terminal: pipe a capture in "
                             "(tcpdump -w - ... | kafkaproto inspect -)")
        return StreamInput(0, "<stdin>")
    st = os.stat(path)
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        fd = os.open(path, os.O_RDONLY)
        if os.isatty(fd):
            os.close(fd)
            raise InputError(f"{path} is a terminal: pipe a capture in")
        return StreamInput(fd, path, owned=True)
    return None


def _request_start(peek, max_frame_size: int) -> bool:
    """Does the input start with a plausible Kafka request frame (the rule
    that tells a Kafka connection from its first bytes)?"""
    head = peek(14)
    if len(head) >= 14:
        head = peek(14 + max(struct.unpack_from(">h", head, 12)[0], 0))
    return bool(streams.request_start(head, max_frame_size, final=True))


def _not_a_capture(name: str, head: bytes) -> InputError:
    return InputError(f"{name}: not a capture: not pcap or pcapng, not a tap table, and it does not start with a "
                      f"Kafka request frame (first bytes: {head[:8].hex(' ') or 'none'})")


def check_raw(path: str, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
    """Raise :class:`InputError` unless the file ``path`` (neither pcap,
    pcapng nor a tap table) starts with a Kafka request frame: the rule by
    which ``inspect`` and ``report`` tell a raw stream of requests from a
    file that is no capture."""
    with open(path, "rb") as fh:
        head = fh.read(14 + 0x7FFF)  # a request header with the longest client id
    if not head:
        raise InputError(f"{path}: empty: no capture to read")
    if not _request_start(lambda n: head[:n], max_frame_size):
        raise _not_a_capture(path, head)


def open_input(path: str, *, ports=None, acc: Accounting, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
               ) -> tuple[str, Iterator[FrameBatch], bool]:
    """``(kind, frame batches, live)`` of ``path`` (``-``: standard input).
    A file or folder is read as a capture dataset
    (:func:`kafkaproto.capture.open_capture`, one capture, read whole); a
    stream (a pipe, a FIFO, a socket) as its bytes come (``live``).  Raises
    :class:`InputError` for what is no capture, and OSError for what cannot
    be opened."""
    got = _stream_of(path)
    if path == "-" and got is None:
        path = "/dev/stdin"  # a file given as standard input: read as that file
    if got is None:
        ds = open_capture(path, ports=ports, max_frame_size=max_frame_size)
        cap = ds.captures[0]
        kind = "pcap" if cap.packets else capture_kind(cap.paths[0], ds.filesystem)
        if kind == "raw":
            check_raw(path, max_frame_size)
        frames = ds.frame_batches(WholeTask(((cap.name, cap.paths),)), accounts={cap.name: acc}, strict=True)
        return kind, (fb for _name, fb in frames), False
    try:
        kind, batches = _stream_batches(got, ports, acc, max_frame_size)
    except BaseException:
        got.close()
        raise
    return kind, _closing(batches, got), True


def _stream_batches(src: StreamInput, ports, acc: Accounting, max_frame_size: int):
    def cut() -> bool:
        return not src.waiting()

    head = src.peek(8)
    if not head:
        raise InputError(f"{src.name}: no bytes came: no capture to read")
    fmt = sniff_format(head)
    if fmt:
        return fmt, packet_batches([src], ports, acc, max_frame_size, BATCH_ROWS, BATCH_BYTES, {}, cut)
    if head[:4] == b"\xff\xff\xff\xff":  # an Arrow IPC stream: the tap's .arrows files
        from ..formats.tapfiles import table_frame_batches

        return "table", table_frame_batches(src, acc, max_frame_size=max_frame_size, cut=cut)
    if head[:4] == b"PAR1" or head[:6] == b"ARROW1":
        raise InputError(f"{src.name}: a Parquet or Arrow IPC file is read from its end (its index): "
                         "give its path, not a pipe")
    if not _request_start(src.peek, max_frame_size):
        raise _not_a_capture(src.name, head)
    return "raw", raw_batches(src, acc, max_frame_size, BATCH_ROWS, BATCH_BYTES, cut)


def _closing(batches: Iterator[FrameBatch], src: StreamInput) -> Iterator[FrameBatch]:
    try:
        yield from batches
    finally:
        batches.close()
        src.close()


# ---------------------------------------------------------------------------
# filters


def parse_apis(text: str) -> set[int]:
    """``"Produce,Fetch"``, ``"0,1"``, ``"metadata"`` → api keys (ValueError for
    a name or key no schema has)."""
    by_name = {api_name(k).lower(): k for k in APIS}
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lstrip("-").isdigit():
            key = int(part)
            if key not in APIS:
                raise ValueError(f"api key {key} is not known")
        else:
            key = by_name.get(part.lower())
            if key is None:
                raise ValueError(f"no api named {part!r} (names as in the output: Produce, Fetch, Metadata...)")
        out.add(key)
    return out


_TIME = re.compile(r"(?:(\d{4})-(\d\d)-(\d\d)(?:[T ]|$))?(?:(\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?)?"
                   r"\s*(Z|[+-]\d\d:?\d\d)?")


def parse_time(text: str) -> int | tuple[str, int]:
    """A time as nanoseconds since the epoch: an ISO 8601 date and time
    (UTC unless it says otherwise: ``2026-11-23T02:35:23.25``,
    ``...+01:00``, ``...Z``; up to nanoseconds, as ``--json`` writes them)
    or seconds since the epoch (``1795401323.25``).  A time of day alone
    (``02:35:23.253893``, as inspect prints it) gives ``("day", ns into
    the day)``: that time on the day of the capture's first frame.
    ValueError for anything else."""
    text = text.strip()
    try:
        return int(Decimal(text) * 1_000_000_000)
    except InvalidOperation:
        pass
    m = _TIME.fullmatch(text)
    if not m or not text or (m.group(1) is None and m.group(4) is None):
        raise ValueError(f"not a time: {text!r}")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    ns = ((int(hour or 0) * 60 + int(minute or 0)) * 60 + int(second or 0)) * 1_000_000_000 + \
        int((frac or "").ljust(9, "0"))
    if hour is not None and not (int(hour) < 24 and int(minute) < 60 and int(second or 0) < 60):
        raise ValueError(f"not a time: {text!r}")
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        ns -= sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000_000_000
    if year is None:
        return "day", ns
    days = (datetime.date(int(year), int(month), int(day)) - datetime.date(1970, 1, 1)).days
    return days * 86_400_000_000_000 + ns


class FrameFilter:
    """Which frames to decode, as a mask over a frame batch's columns.

    ``apis``: api keys (a response by its request's); ``clients``: client
    ids or shell patterns (``billing-*``; a response by its request's);
    ``connections``: connection numbers as printed (``c12`` or ``12``) or
    the JSON's ``uid``, endpoints (``10.0.0.1:9092``) or hosts
    (``10.0.0.1``), either side; ``since``/``until``: nanoseconds since the
    epoch, inclusive, or ``("day", ns)`` from :func:`parse_time`."""

    def __init__(self, apis: Iterable[int] | None = None, clients: Iterable[str] | None = None,
                 connections: Iterable[str] | None = None, since=None, until=None) -> None:
        self.apis = np.array(sorted(apis), dtype=np.int16) if apis else None
        self.clients = list(clients) if clients else None
        self.connections = list(connections) if connections else None
        self.since, self.until = since, until
        self._client_ok: dict[int, bool] = {}

    @property
    def active(self) -> bool:
        return any(x is not None for x in (self.apis, self.clients, self.connections, self.since, self.until))

    def _client_matches(self, client_id: str) -> bool:
        return any(fnmatch.fnmatchcase(client_id, p) for p in self.clients)

    def _conn_matches(self, conn) -> bool:
        for want in self.connections:
            w = want[1:] if want[:1] in ("c", "C") and want[1:].isdigit() else want
            if w.isdigit():
                if int(w) in (conn.id, conn.uid):
                    return True
            elif want in (conn.client, conn.server) or \
                    want in (conn.client.rpartition(":")[0].strip("[]"), conn.server.rpartition(":")[0].strip("[]")):
                return True
        return False

    @staticmethod
    def _lookup(idx: np.ndarray, cache: dict, items, test) -> np.ndarray:
        """``test(items[i])`` for each index of the column (negative: False), asked once per index."""
        ok = []
        for i in np.unique(idx).tolist():
            if i >= 0:
                hit = cache.get(i)
                if hit is None:
                    hit = cache[i] = test(items[i])
                if hit:
                    ok.append(i)
        return np.isin(idx, np.array(ok, dtype=idx.dtype))

    def _resolve_day(self, ts: np.ndarray) -> bool:
        """Times of day become times once a frame with a time is seen."""
        known = ts[ts != _NO_TS]
        if not len(known):
            return False
        day = int(known[0]) // 86_400_000_000_000 * 86_400_000_000_000
        for name in ("since", "until"):
            v = getattr(self, name)
            if isinstance(v, tuple):
                setattr(self, name, day + v[1])
        return True

    def select(self, batch: FrameBatch) -> np.ndarray | None:
        """The rows of ``batch`` to decode (an index array), or None for all."""
        if not self.active:
            return None
        r = batch.rows
        keep = np.ones(len(r), dtype=bool)
        if self.apis is not None:
            keep &= ((r["flags"] & _FL_HEADER) != 0) & np.isin(r["api_key"], self.apis)
        if self.clients is not None:
            keep &= self._lookup(r["client"], self._client_ok, batch.clients, self._client_matches)
        if self.connections is not None:
            # a batch's own connections (each batch numbers those its rows name)
            ok = np.array([self._conn_matches(c) for c in batch.conns], dtype=bool)
            keep &= ok[r["conn"]] if len(ok) else False
        if self.since is not None or self.until is not None:
            ts = r["ts"]
            if (isinstance(self.since, tuple) or isinstance(self.until, tuple)) and not self._resolve_day(ts):
                return np.zeros(0, dtype=np.int64)
            keep &= ts != _NO_TS
            if self.since is not None:
                keep &= ts >= self.since
            if self.until is not None:
                keep &= ts <= self.until
        return np.flatnonzero(keep)


# ---------------------------------------------------------------------------
# a frame as plain values (JSON, the field dump)

_FIELDS: dict[tuple, tuple] = {}
_CLASSES: dict[tuple, type] = {}


_HEADER_VERSIONS: dict[tuple, int] = {}


def _header_version(is_request: bool, api_key: int, api_version: int) -> int:
    key = (is_request, api_key, api_version)
    got = _HEADER_VERSIONS.get(key)
    if got is None:
        got = _HEADER_VERSIONS[key] = (request_header_version if is_request else response_header_version)(
            api_key, api_version)
    return got


def _class(is_request: bool, api_key: int):
    got = _CLASSES.get((is_request, api_key))
    if got is None:
        got = _CLASSES[(is_request, api_key)] = (request_class if is_request else response_class)(api_key)
    return got


def _fields(cls, version: int) -> tuple:
    got = _FIELDS.get((cls, version))
    if got is None:
        got = _FIELDS[(cls, version)] = cls.fields(version)
    return got


def _b64(b) -> str:
    return base64.b64encode(b).decode("ascii")


def _value(v, raw):
    """A value as plain data: bytes through ``raw``, UUIDs as text, floats
    JSON cannot hold as text."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return raw(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, list):
        return [_value(x, raw) for x in v]
    return v


# how a field's value becomes plain data (0: as it is)
_STRUCT, _STRUCTS, _BYTES, _UUID, _OTHER = 1, 2, 3, 4, 5
_AS_IS = {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "string"}
_PLANS: dict[int, tuple] = {}


def _plan(infos) -> tuple:
    """``(name, how, nested fields)`` for each field of ``infos``, found once."""
    got = _PLANS.get(id(infos))
    if got is None:
        plan = []
        for fi in infos:
            if fi.fields:
                how = _STRUCTS if fi.type.startswith("[]") else _STRUCT
            elif fi.type in ("bytes", "records"):
                how = _BYTES
            elif fi.type == "uuid":
                how = _UUID
            else:
                how = 0 if fi.type in _AS_IS or fi.type[2:] in _AS_IS else _OTHER
            plan.append((fi.name, how, fi.fields))
        got = _PLANS[id(infos)] = (infos, tuple(plan))  # infos kept: its id stays its own
    return got[1]


def _plain(obj, infos, raw) -> dict:
    """The fields ``infos`` (a version's :class:`FieldInfo` tuple) of a decoded
    struct, nested structs as dicts, unknown tagged fields as ``{tag, data}``."""
    out = {}
    for name, how, sub in _plan(infos):
        v = getattr(obj, name)
        if how and v is not None:
            if how == _STRUCTS:
                v = [_plain(x, sub, raw) for x in v]
            elif how == _STRUCT:
                v = _plain(v, sub, raw)
            elif how == _BYTES:
                v = raw(v)
            elif how == _UUID:
                v = str(v)
            else:
                v = _value(v, raw)
        out[name] = v
    extra = getattr(obj, "unknown_tagged_fields", None)
    if extra:
        out["unknown_tagged_fields"] = [{"tag": t, "data": raw(d)} for t, d in extra]
    return out


def _header_plain(header, is_request: bool, version: int, raw) -> dict:
    out = {}
    if is_request:
        out = {"api_key": header.api_key, "api_version": header.api_version, "correlation_id": header.correlation_id}
        if version >= 1:
            out["client_id"] = header.client_id
    else:
        out["correlation_id"] = header.correlation_id
    if header.unknown_tagged_fields:
        out["unknown_tagged_fields"] = [{"tag": t, "data": raw(d)} for t, d in header.unknown_tagged_fields]
    return out


def _error_name(code: int) -> str | None:
    e = ErrorCode.of(code)
    return e.name if e.value == code else None


_last_second: list = [None, ""]


def _iso(ts: int) -> str:
    sec, ns = divmod(ts, 1_000_000_000)
    if _last_second[0] != sec:  # frames come in time order: one strftime per second
        _last_second[:] = [sec, datetime.datetime.fromtimestamp(sec, datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S")]
    return f"{_last_second[1]}.{ns:09d}Z"


def _flag_names(flags: int) -> list[str]:
    return [name for name, bit in FLAGS.items() if flags & bit and name != "header"]


# ---------------------------------------------------------------------------
# the command


class _Frame:
    """One frame of a batch, decoded: what every output reads."""

    __slots__ = ("n", "conn", "is_request", "ts", "api_key", "api_version", "correlation_id", "client_id", "size",
                 "latency_ns", "flags", "seq", "request_seq", "offset", "unpaired", "header", "message", "exc")


def frame_json(f: _Frame) -> dict:
    """One frame as JSON-ready data: where and when, the api, the header and
    message with every field of their version (bytes in base64, UUIDs as
    text), the error with its field path, the non-zero error codes with theirs."""
    api = None
    if f.api_key is not None:
        try:
            api = api_name(f.api_key)
        except KafkaProtocolError:
            pass
    out = {
        "frame": f.n,
        "connection": {"id": f.conn.id, "uid": f.conn.uid, "client": f.conn.client, "server": f.conn.server},
        "direction": "request" if f.is_request else "response",
        "time": None if f.ts is None else _iso(f.ts),
        "ts_ns": f.ts,
        "seq": f.seq,
        "offset": f.offset,
        "api_key": f.api_key,
        "api": api,
        "api_version": f.api_version,
        "correlation_id": f.correlation_id,
        "client_id": f.client_id,
        "size": f.size,
        "latency_ns": f.latency_ns,
        "request_seq": f.request_seq,
        "flags": _flag_names(f.flags),
        "status": "unpaired" if f.unpaired else "undecodable" if f.exc is not None else "decoded",
        "removed_in_kafka4": removed_in_kafka4(f.api_key, f.api_version),
        "header_version": None,
        "header": None,
        "message": None,
        "trailing_bytes": None,
        "error": None,
        "error_codes": [],
    }
    if f.header is not None:
        hv = _header_version(f.is_request, f.api_key, f.api_version)
        out["header_version"] = hv
        out["header"] = _header_plain(f.header, f.is_request, hv, _b64)
    cls = None
    if f.api_key is not None and not f.unpaired:
        try:
            cls = _class(f.is_request, f.api_key)
            infos = _fields(cls, f.api_version)
        except KafkaProtocolError:  # an api key or version no schema has: the frame did not decode
            cls = None
    if f.message is not None and cls is not None:
        out["message"] = _plain(f.message, infos, _b64)
        extra = trailing_bytes(f.message)
        out["trailing_bytes"] = extra
        if extra:
            out["trailing"] = _b64(f.message._trailing)
        out["error_codes"] = [{"path": p, "code": c, "name": _error_name(c)} for p, c in error_codes(f.message)]
    if f.unpaired:
        out["error"] = {"message": UNPAIRED, "what": None, "path": None, "offset": None, "detail": UNPAIRED}
    elif f.exc is not None:
        e = f.exc
        out["error"] = {"message": str(e), "what": e.context or e.what, "path": _path(e.path), "offset": e.offset,
                        "detail": e.detail}
        partial = getattr(e, "partial", None)
        if partial is not None and cls is not None:  # the top-level fields read before the error
            out["partial"] = {k: v for k, v in _plain(partial, infos, _b64).items() if v is not None}
    return out


def _path(path) -> str | None:
    return ".".join(path).replace(".[", "[") if path else None


def _tree(value, indent: str, lines: list) -> None:
    """An indented dump of plain data (from :func:`_plain` with bytes kept)."""
    for k, v in value.items():
        if isinstance(v, dict):
            lines.append(f"{indent}{k}:")
            _tree(v, indent + "  ", lines)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            lines.append(f"{indent}{k}: [{len(v)}]")
            for i, item in enumerate(v):
                lines.append(f"{indent}  [{i}]")
                _tree(item, indent + "    ", lines)
        else:
            lines.append(f"{indent}{k}: {_show(v)}")


def _show(v) -> str:
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v[:32])
        return f"<{len(v)} bytes> {b.hex(' ')}" + (" ..." if len(v) > 32 else "")
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return repr(v)


def _verbose(f: _Frame) -> list[str]:
    lines = []
    if f.header is not None:
        hv = _header_version(f.is_request, f.api_key, f.api_version)
        lines.append(f"    header v{hv}:")
        _tree(_header_plain(f.header, f.is_request, hv, bytes), "      ", lines)
    msg = f.message
    if msg is None and f.exc is not None:
        msg = getattr(f.exc, "partial", None)
        if msg is not None:
            lines.append("    read before the error (None: not reached):")
    if msg is not None:
        if f.message is not None:
            lines.append(f"    {type(msg).__name__} v{f.api_version}:")
        _tree(_plain(msg, _fields(type(msg), f.api_version), bytes), "      ", lines)
        if trailing_bytes(msg):
            lines.append(f"    trailing bytes: {_show(msg._trailing)}")
    if f.exc is not None:
        lines.append(f"    error at {_path(f.exc.path) or f.exc.what or 'the frame'}"
                     f"{'' if f.exc.offset is None else f', byte {f.exc.offset}'}: {f.exc.detail}")
    return lines


_FLUSH_LINES = 512


def inspect(path: str, out=None, *, err=None, ports=None, limit: int | None = None,
            flt: FrameFilter | None = None, errors_only: bool = False, json_out: bool = False,
            verbose: bool = False) -> int:
    """Print the frames of a capture, then a summary and the accounting.

    Returns 0, 1 when a frame it decoded did not decode, 2 when the input is
    no capture or nothing of it was readable (the reason on ``err``)."""
    import json

    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    flt = flt if flt is not None else FrameFilter()
    acc = Accounting()
    try:
        kind, batches, live = open_input(path, ports=ports, acc=acc)
    except InputError as exc:
        print(f"kafkaproto inspect: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"kafkaproto inspect: cannot read {path}: {exc}", file=err)
        return 2
    place = kind != "raw"
    total = examined = shown = bad = unpaired = removed = trailing = printed = 0
    stopped = False
    interrupted = False
    dumps = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    summaries = Summaries()
    memo = summaries.memo
    try:
        for batch in batches:
            base = total
            total += len(batch)
            idx = flt.select(batch)
            if idx is None:
                idx = np.arange(len(batch))
            if not len(idx):
                continue
            r = batch.rows
            cols = [r[name][idx].tolist() for name in (
                "direction", "status", "flags", "api_key", "api_version", "correlation_id", "client", "ts",
                "request_ts", "conn", "seq", "request_seq", "offset", "end")]
            starts = batch.starts[idx].tolist()
            numbers = (idx + (base + 1)).tolist()
            conns, clients = batch.conns, batch.clients
            mv = memoryview(batch.data)
            lines = []
            moved = [0, 0, 0, 0]  # decoded frames, bytes; undecodable frames, bytes: moved once a batch
            objects = json_out or verbose
            try:
                for j, (direction, status, flags, key, version, corr, client, ts, rts, conn, seq, rseq, offset,
                        end) in enumerate(zip(*cols)):
                    frame = mv[starts[j]:end]
                    is_request = direction == 0
                    has_header = flags & _FL_HEADER
                    is_unpaired = status == 1
                    header = msg = exc = said = None
                    if not is_unpaired:
                        # a line alone: a body seen before says what it said then (Summaries)
                        mkey = summaries.key(frame, is_request, key, version) if not objects and has_header else None
                        if mkey is not None:
                            said = memo.get(mkey[0])
                        if said is None:
                            header, msg, exc = decode_frame(frame, is_request, key, version, zero_copy=True)
                            if mkey is not None and exc is None:
                                said = summaries.remember(mkey[0], msg)
                        k = 0 if exc is None else 2
                        moved[k] += 1
                        moved[k + 1] += len(frame) + 4
                    examined += 1
                    if exc is not None or is_unpaired:
                        bad += 1
                        unpaired += is_unpaired
                    else:
                        if removed_in_kafka4(key if has_header else None, version):
                            removed += 1
                        if (said[1] if said is not None else trailing_bytes(msg)):
                            trailing += 1
                    if errors_only and exc is None and not is_unpaired and \
                            not (said[2] if said is not None else error_codes(msg)):
                        continue
                    shown += 1
                    if limit is not None and printed >= limit:
                        if live:
                            stopped = True
                            break
                        continue  # a file is read on, for the summary
                    printed += 1
                    ts = None if ts == _NO_TS else ts
                    api_key = key if has_header else None
                    api_version = version if has_header else None
                    correlation_id = corr if has_header or not is_request else None
                    if said is not None and is_request:
                        client_id = mkey[1]
                    else:
                        client_id = header.client_id if is_request and exc is None else (
                            clients[client] if client >= 0 else None)
                    latency = None if is_request or rts == _NO_TS or ts is None else ts - rts
                    error = UNPAIRED if is_unpaired else None if exc is None else str(exc)
                    if said is not None:
                        lines.append(line_text(numbers[j], conns[conn] if place else None, is_request, ts,
                                               api_key, api_version, correlation_id, client_id, error,
                                               is_unpaired, latency, said[0], said[1]))
                    elif not json_out:
                        lines.append(frame_line(numbers[j], conns[conn] if place else None, is_request, ts,
                                                api_key, api_version, correlation_id, client_id, msg, error,
                                                is_unpaired, latency))
                    if objects:  # a frame object only for the JSON line and the field dump
                        f = _Frame()
                        f.n, f.conn, f.is_request, f.ts = numbers[j], conns[conn], is_request, ts
                        f.api_key, f.api_version, f.correlation_id = api_key, api_version, correlation_id
                        f.client_id, f.unpaired, f.latency_ns = client_id, is_unpaired, latency
                        f.header, f.message, f.exc = header, msg, exc
                        f.size, f.flags, f.seq, f.offset = len(frame) + 4, flags, seq, offset
                        f.request_seq = None if is_request or rseq < 0 else rseq
                        if json_out:
                            lines.append(dumps(frame_json(f)))
                        else:
                            lines += _verbose(f)
                    if live and printed == limit:
                        stopped = True  # a stream stops there: it may run on for ever
                        break
                    if len(lines) >= _FLUSH_LINES:
                        # out in pieces: a reader that went away (| head) stops the read soon after
                        out.write("\n".join(lines) + "\n")
                        out.flush()
                        lines = []
            finally:
                if moved[0]:
                    acc.move("framed", "decoded", moved[1], moved[0])
                if moved[2]:
                    acc.move("framed", "undecodable", moved[3], moved[2])
            if lines:
                out.write("\n".join(lines) + "\n")
                out.flush()
            if stopped:
                break
    except CaptureFormatError as exc:
        print(f"kafkaproto inspect: {path}: {exc}", file=err)
        return 2
    except KeyboardInterrupt:
        interrupted = True
    finally:
        batches.close()
    text = f"{total} frames"
    if flt.active or errors_only:
        text += f", {shown} match the filters ({acc.frames['decoded']} decoded)"
    text += f", {bad} undecodable" + (f" ({unpaired} unpaired responses)" if unpaired else "")
    text += (f", {removed} using versions Kafka 4.0 removed, {trailing} with trailing bytes after their body, "
             f"{acc.bytes['truncated']} bytes of frames cut off by a gap or the end of a stream"
             f"; core: {'compiled' if COMPILED else 'pure Python'}")
    if stopped:
        text += f"; stopped after {limit} frames"
    if interrupted:
        text += "; interrupted"
    summary_out = err if json_out else out
    print(text, file=summary_out)
    if kind != "raw":
        print(acc.format(), file=summary_out)
    if interrupted:
        return 130
    if kind == "table" and not acc.frames_total and acc.errors:
        return 2  # damaged files, and no frame in any of them
    return 1 if bad else 0
