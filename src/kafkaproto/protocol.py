"""Requests and responses as frames: header version derivation, encode/decode,
version negotiation (KIP-35, KIP-511), a sans-IO connection and a small
blocking client.

>>> from kafkaproto import encode_request, decode_request
>>> from kafkaproto.messages import ApiVersionsRequest
>>> frame = encode_request(ApiVersionsRequest(client_software_name="app", client_software_version="1"),
...                        version=3, correlation_id=7, client_id="c1")
>>> header, msg = decode_request(frame[4:])
>>> header.correlation_id, msg.client_software_name
(7, 'app')
"""

from __future__ import annotations

import socket
import struct
from collections import deque
from typing import TYPE_CHECKING

from ._impl import codec
from .error_codes import ErrorCode
from .errors import KafkaProtocolError, TruncatedError, UnknownApiError, UnsupportedVersionError
from .frames import FrameReader
from .headers import _by_tag, decode_request_header, decode_response_header
from .messages import APIS, request_class, response_class

if TYPE_CHECKING:
    from .messages._runtime import Message

__all__ = [
    "Connection",
    "CorrelationError",
    "api_versions_handshake",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "negotiate_versions",
    "request_header_version",
    "response_header_version",
    "send_request",
    "supported_versions",
]

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7
_i16x2 = struct.Struct(">hh")
_i32 = struct.Struct(">i")


class CorrelationError(KafkaProtocolError):
    """A response whose correlation id is not the one the connection waits for."""


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible versions, else 1; ControlledShutdown v0 alone uses header v0.

    A version newer than the schemas is flexible when the schema's flexible
    versions are open-ended ("3+"), as in Kafka's generated ``ApiMessageType``.
    """
    cls = request_class(api_key)
    if cls.is_flexible(api_version):
        return 2
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible versions, else 0; ApiVersions responses always use v0 (a client
    must read them before it knows which versions the broker speaks)."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if response_class(api_key).is_flexible(api_version) else 0


def _check_kind(msg, kind):
    if getattr(msg, "KIND", None) != kind:
        raise TypeError(f"expected a {kind} message, got {type(msg).__name__}")


def encode_request(msg: Message, version: int, correlation_id: int, client_id: str | None = None,
                   header_tagged_fields=None) -> bytes:
    """A complete size-prefixed request frame."""
    _check_kind(msg, "request")
    w = codec.Writer()
    w.write_int32(0)
    hv = request_header_version(msg.API_KEY, version)
    plan = type(msg).plan(version)  # raises UnsupportedVersionError before writing the header
    del plan
    codec.encode_request_header(w, hv, msg.API_KEY, version, correlation_id, client_id,
                                _by_tag(header_tagged_fields))
    msg.encode_into(w, version)
    data = w.getvalue()
    return _i32.pack(len(data) - 4) + data[4:]


def encode_response(msg: Message, version: int, correlation_id: int, header_tagged_fields=None) -> bytes:
    """A complete size-prefixed response frame."""
    _check_kind(msg, "response")
    w = codec.Writer()
    w.write_int32(0)
    hv = response_header_version(msg.API_KEY, version)
    type(msg).plan(version)
    codec.encode_response_header(w, hv, correlation_id, _by_tag(header_tagged_fields))
    msg.encode_into(w, version)
    data = w.getvalue()
    return _i32.pack(len(data) - 4) + data[4:]


def decode_request(frame, *, with_end: bool = False):
    """A request frame (without its size prefix, as split_frames yields it) → (header, message).

    Bytes left after the body are ignored, as Kafka's own parser does (some
    clients send them); ``with_end=True`` adds the offset where the body ended.
    """
    mv = memoryview(frame)
    if len(mv) < 4:
        raise TruncatedError(f"need 4 bytes, {len(mv)} left", "request header", 0)
    api_key, api_version = _i16x2.unpack_from(mv, 0)
    if api_key not in APIS:
        raise UnknownApiError(f"api key {api_key} is not known", "request header", 0)
    cls = request_class(api_key)
    if not cls.supports(api_version):
        raise UnsupportedVersionError(f"{cls.NAME} v{api_version} is not supported (versions {cls.VALID_VERSIONS})",
                                      "request header", 2)
    header, offset = decode_request_header(mv, request_header_version(api_key, api_version))
    msg, end = cls.decode(mv, api_version, offset, with_end=True)
    return (header, msg, end) if with_end else (header, msg)


def decode_response(frame, api_key: int, version: int, *, with_end: bool = False):
    """A response frame (without its size prefix) → (header, message).

    The api key and version are those of the request it answers.  An
    ApiVersions response that does not fit the requested version is read in
    the v0 layout, which brokers use to answer UNSUPPORTED_VERSION (KIP-511).
    """
    mv = memoryview(frame)
    cls = response_class(api_key)
    if not cls.supports(version):
        raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                      cls.NAME)
    header, offset = decode_response_header(mv, response_header_version(api_key, version))
    try:
        msg, end = cls.decode(mv, version, offset, with_end=True)
    except KafkaProtocolError:
        if api_key != API_VERSIONS or version == 0:
            raise
        msg, end = cls.decode(mv, 0, offset, with_end=True)
        if msg.error_code != ErrorCode.UNSUPPORTED_VERSION:
            raise
    return (header, msg, end) if with_end else (header, msg)


# ---------------------------------------------------------------------------
# version negotiation


def supported_versions() -> dict[int, tuple[int, int]]:
    """This library's (lowest, highest) version per api key (request and response both)."""
    out = {}
    for key, (req, resp) in APIS.items():
        if req and resp:
            rq, rs = request_class(key), response_class(key)
            lo = max(rq.LOWEST_VERSION, rs.LOWEST_VERSION)
            hi = min(rq.HIGHEST_VERSION, rs.HIGHEST_VERSION)
            if lo <= hi:
                out[key] = (lo, hi)
    return out


def negotiate_versions(broker, ours: dict[int, tuple[int, int]] | None = None) -> dict[int, int]:
    """The highest version both sides support, per api key.

    ``broker`` is an ApiVersionsResponse (or a mapping api_key → (min, max)).
    Keys with no common version are left out.
    """
    if ours is None:
        ours = supported_versions()
    if hasattr(broker, "api_keys"):
        theirs = {k.api_key: (k.min_version, k.max_version) for k in broker.api_keys}
    else:
        theirs = dict(broker)
    out = {}
    for key, (lo, hi) in theirs.items():
        if key in ours:
            a, b = max(lo, ours[key][0]), min(hi, ours[key][1])
            if a <= b:
                out[key] = b
    return out


# ---------------------------------------------------------------------------
# sans-IO connection


class Connection:
    """Frames requests and matches responses, with no I/O of its own.

    >>> conn = Connection(client_id="tool")
    >>> data = conn.send(ApiVersionsRequest(), version=0)   # bytes to write to the socket
    >>> # ... for every chunk read from the socket:
    >>> # for cid, header, response in conn.receive(chunk): ...

    Kafka answers in request order on one connection: a response whose
    correlation id is not the oldest outstanding one raises CorrelationError.
    """

    def __init__(self, client_id: str | None = None, first_correlation_id: int = 1,
                 max_frame_size: int | None = None):
        self.client_id = client_id
        self._next = first_correlation_id
        self._pending: deque = deque()
        self._reader = FrameReader() if max_frame_size is None else FrameReader(max_frame_size)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def send(self, msg, version: int, expect_response: bool = True) -> bytes:
        cid = self._next
        self._next = (cid + 1) & 0x7FFFFFFF
        data = encode_request(msg, version, cid, self.client_id)
        if expect_response:
            self._pending.append((cid, msg.API_KEY, version))
        return data

    def receive(self, data) -> list:
        """Feed received bytes → list of (correlation_id, header, response message)."""
        out = []
        for frame in self._reader.feed(data):
            if not self._pending:
                cid = _i32.unpack_from(frame, 0)[0] if len(frame) >= 4 else None
                raise CorrelationError(f"response with correlation id {cid} but no request is outstanding",
                                       "response header", 0)
            cid, api_key, version = self._pending[0]
            got = _i32.unpack_from(frame, 0)[0] if len(frame) >= 4 else None
            if got != cid:
                raise CorrelationError(f"expected correlation id {cid}, got {got}", "response header", 0)
            self._pending.popleft()
            header, msg = decode_response(frame, api_key, version)
            out.append((cid, header, msg))
        return out


def send_request(host: str, port: int, msg, version: int, client_id: str | None = "kafkaproto",
                 timeout: float = 10.0):
    """Open a connection, send one request, return the decoded response message."""
    conn = Connection(client_id)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(conn.send(msg, version))
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError(f"{host}:{port} closed the connection before answering")
            got = conn.receive(chunk)
            if got:
                return got[0][2]


def api_versions_handshake(host: str, port: int, client_id: str | None = "kafkaproto", timeout: float = 10.0,
                           software_name: str = "kafkaproto", software_version: str = "0.1.0"):
    """Ask a broker for its versions as real clients do: at our highest ApiVersions
    version first, then again at the version the broker's error reply names (or v0).

    Returns ``(api_versions_version_used, response)``.
    """
    from .messages import ApiVersionsRequest

    ours = supported_versions()[API_VERSIONS][1]
    version = ours
    tried = set()
    while True:
        tried.add(version)
        req = ApiVersionsRequest(client_software_name=software_name, client_software_version=software_version)
        resp = send_request(host, port, req, version, client_id, timeout)
        if resp.error_code != ErrorCode.UNSUPPORTED_VERSION:
            return version, resp
        entry = next((k for k in resp.api_keys if k.api_key == API_VERSIONS), None)
        version = min(entry.max_version, ours) if entry is not None else 0
        if version in tried:
            version = 0
        if version in tried:
            return version, resp


