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

import struct

from ._impl import codec
from ._impl import load as _load
from .error_codes import ErrorCode
from .errors import KafkaProtocolError, TrailingBytesError, TruncatedError, UnknownApiError, UnsupportedVersionError
from .frames import FrameReader
from .headers import RequestHeader, _by_tag, decode_request_header, decode_response_header
from .messages import APIS, Message, request_class, response_class, version_masks
from .net import send_parts

_pairing = _load("_pairing")

__all__ = [
    "Connection",
    "CorrelationError",
    "PendingRequests",
    "ReceivedRequest",
    "ReceivedResponse",
    "RequestRef",
    "api_versions_handshake",
    "decode_request",
    "decode_response",
    "decode_response_body",
    "encode_request",
    "encode_request_into",
    "encode_request_parts",
    "encode_response",
    "encode_response_into",
    "encode_response_parts",
    "expects_response",
    "negotiate_versions",
    "produce_acks",
    "read_request",
    "read_response",
    "request_header",
    "request_expects_response",
    "request_header_version",
    "request_size",
    "response_header_version",
    "response_size",
    "trailing_bytes",
    "send_request",
    "supported_versions",
]

PRODUCE = 0
API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7
_i16x2 = struct.Struct(">hh")
_i32 = struct.Struct(">i")
_head = struct.Struct(">hhi")
_size = struct.Struct(">i")


class CorrelationError(KafkaProtocolError):
    """A response whose correlation id is not the one the connection waits for."""


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible versions, else 1; ControlledShutdown v0 alone uses header v0.

    A version newer than the schemas is flexible when the schema's flexible
    versions are open-ended ("3+"), as in Kafka's generated ``ApiMessageType``.
    """
    if _flexible(api_key, api_version, 0):
        return 2
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible versions, else 0; ApiVersions responses always use v0 (a client
    must read them before it knows which versions the broker speaks)."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if _flexible(api_key, api_version, 3) else 0


def _flexible(api_key: int, api_version: int, at: int) -> bool:
    """Is this version of the request (``at`` 0) or response (3) flexible?  From
    the api's version masks (as its class's ``is_flexible``, without loading it)."""
    masks = version_masks(api_key)
    if api_version < 0:
        return False
    if api_version <= 63:
        return bool(masks[at + 1] >> api_version & 1)
    return masks[at + 2] is not None and api_version >= masks[at + 2]


_TABLES: dict = {}


def header_table(request: bool):
    """This module's header-version rule as data: int8[api keys, 64] of header
    versions, -1 for a version the key's class lacks, -2 for an unknown key.
    What the compiled loops (Arrow, capture) are handed instead of the rule."""
    got = _TABLES.get(request)
    if got is None:
        import numpy as np

        fn = request_header_version if request else response_header_version
        got = np.full((max(APIS) + 1, 64), -2, dtype=np.int8)
        for key, (req, resp) in APIS.items():
            if req if request else resp:
                valid = version_masks(key)[0 if request else 3]
                got[key] = [fn(key, v) if valid >> v & 1 else -1 for v in range(64)]
        _TABLES[request] = got
    return got


def _check_kind(msg, kind):
    if getattr(msg, "KIND", None) != kind:
        raise TypeError(f"expected a {kind} message, got {type(msg).__name__}")


def _request_writer(w, msg, version, correlation_id, client_id, header_tagged_fields, canonical, lenient=False):
    """Write a request frame (size prefix ``size``, header, body, kept trailing bytes) into ``w``."""
    _check_kind(msg, "request")
    hv = request_header_version(msg.API_KEY, version)
    type(msg).plan(version)  # raises UnsupportedVersionError before writing the header
    w.write_int32(0)  # the size, set once known
    codec.encode_request_header(w, hv, msg.API_KEY, version, correlation_id, client_id,
                                _by_tag(header_tagged_fields))
    msg.encode_into(w, version, canonical=canonical, lenient=lenient)
    _write_trailing(w, msg, canonical)


def _response_writer(w, msg, version, correlation_id, header_tagged_fields, canonical, lenient=False):
    _check_kind(msg, "response")
    hv = response_header_version(msg.API_KEY, version)
    type(msg).plan(version)
    w.write_int32(0)  # the size, set once known
    codec.encode_response_header(w, hv, correlation_id, _by_tag(header_tagged_fields))
    msg.encode_into(w, version, canonical=canonical, lenient=lenient)
    _write_trailing(w, msg, canonical)


def _write_trailing(w, msg, canonical):
    if not canonical:
        trailing = getattr(msg, "_trailing", None)
        if trailing:
            w.write_raw(trailing)


def _to_bytes(write, args) -> bytes:
    # blobs kept by reference, then joined: each records blob is copied once
    w = codec.Writer(keep_blobs=True)
    write(w, *args)
    w.set_int32(0, len(w) - 4)
    return w.getvalue() if not w.external else b"".join(w.parts())


def _to_parts(write, args) -> list:
    # One write pass, blobs kept by reference, then one copy of the bytes
    # around them (header-sized for a Produce request).  A sizing pass first
    # (Kafka's SendBuilder) would save that copy but costs a second walk of
    # the message, measured at 2x the time of the whole encode: see the README.
    w = codec.Writer(keep_blobs=True)
    write(w, *args)
    w.set_int32(0, len(w) - 4)
    return w.parts()


def _to_buffer(write, args, buffer, offset) -> int:
    if isinstance(buffer, bytearray):
        if offset < 0 or offset > len(buffer):
            raise ValueError(f"offset {offset} outside the buffer (0..{len(buffer)})")
        w = codec.Writer()
        write(w, *args)
        w.set_int32(0, len(w) - 4)
        buffer[offset:] = w.getvalue()
        return len(buffer)
    w = codec.Writer.into(buffer, offset)
    try:
        write(w, *args)
        w.set_int32(0, len(w) - 4)
        return offset + len(w)
    finally:
        w.release()


def encode_request(msg: Message, version: int, correlation_id: int, client_id: str | None = None,
                   header_tagged_fields=None, *, canonical: bool = False, lenient: bool = False) -> bytes:
    """A complete size-prefixed request frame.

    A decoded message is written back as it came (see :meth:`Message.encode`),
    with any bytes its frame had after the body; ``canonical=True`` writes
    Kafka's own form.  ``lenient=True`` drops the values of fields
    ``version`` lacks instead of raising (one message for every version).
    """
    return _to_bytes(_request_writer, (msg, version, correlation_id, client_id, header_tagged_fields, canonical,
                                       lenient))


def encode_response(msg: Message, version: int, correlation_id: int, header_tagged_fields=None, *,
                    canonical: bool = False, lenient: bool = False) -> bytes:
    """A complete size-prefixed response frame (see :func:`encode_request`).

    ``lenient=True`` drops the values of fields ``version`` lacks instead of
    raising (see :meth:`Message.encode`): one response object, built with the
    newest version's fields, answers a client of any version.
    """
    return _to_bytes(_response_writer, (msg, version, correlation_id, header_tagged_fields, canonical, lenient))


def encode_request_parts(msg: Message, version: int, correlation_id: int, client_id: str | None = None,
                         header_tagged_fields=None, *, canonical: bool = False, lenient: bool = False) -> list:
    """A request frame as a list of buffers to send with one gathering write
    (:func:`kafkaproto.net.send_parts`, ``socket.sendmsg``, ``transport.writelines``).

    Every ``records`` field and ``zeroCopy`` bytes field is the caller's own
    object, not a copy; the bytes around them are coalesced, so k such fields
    give at most 2k+1 parts, and the memory this allocates is the size of
    those other bytes, whatever the size of the records.
    """
    return _to_parts(_request_writer, (msg, version, correlation_id, client_id, header_tagged_fields, canonical,
                                       lenient))


def encode_response_parts(msg: Message, version: int, correlation_id: int, header_tagged_fields=None, *,
                          canonical: bool = False, lenient: bool = False) -> list:
    """A response frame as a list of buffers (see :func:`encode_request_parts`)."""
    return _to_parts(_response_writer, (msg, version, correlation_id, header_tagged_fields, canonical, lenient))


def encode_request_into(buffer, msg: Message, version: int, correlation_id: int, client_id: str | None = None,
                        header_tagged_fields=None, *, offset: int = 0, canonical: bool = False,
                        lenient: bool = False) -> int:
    """Write a request frame into ``buffer`` at ``offset`` → the offset just past it.

    A ``bytearray`` is resized to end with the frame; any other writable
    buffer must have the room (``EncodeError`` if not; the bytes past
    ``offset`` are then unspecified: :func:`request_size` says how much room
    a frame needs).
    """
    return _to_buffer(_request_writer, (msg, version, correlation_id, client_id, header_tagged_fields, canonical,
                                        lenient), buffer, offset)


def encode_response_into(buffer, msg: Message, version: int, correlation_id: int, header_tagged_fields=None, *,
                         offset: int = 0, canonical: bool = False, lenient: bool = False) -> int:
    """Write a response frame into ``buffer`` at ``offset`` (see :func:`encode_request_into`)."""
    return _to_buffer(_response_writer, (msg, version, correlation_id, header_tagged_fields, canonical, lenient),
                      buffer, offset)


def request_size(msg: Message, version: int, client_id: str | None = None, header_tagged_fields=None, *,
                 canonical: bool = False, lenient: bool = False) -> int:
    """The size of the request frame :func:`encode_request` would write, size prefix included (a sizing pass)."""
    w = codec.Writer.counting()
    _request_writer(w, msg, version, 0, client_id, header_tagged_fields, canonical, lenient)
    return len(w)


def response_size(msg: Message, version: int, header_tagged_fields=None, *, canonical: bool = False,
                  lenient: bool = False) -> int:
    """The size of the response frame :func:`encode_response` would write, size prefix included."""
    w = codec.Writer.counting()
    _response_writer(w, msg, version, 0, header_tagged_fields, canonical, lenient)
    return len(w)


def _keep_trailing(msg, mv, end, strict):
    left = len(mv) - end
    if left > 0:
        if strict:
            raise TrailingBytesError(f"{left} bytes after the body", "trailing bytes", end)
        msg._trailing = bytes(mv[end:])


def trailing_bytes(msg) -> int:
    """How many bytes the frame of a decoded message had after its body (0: none)."""
    t = getattr(msg, "_trailing", None)
    return len(t) if t else 0


def decode_request(frame, *, with_end: bool = False, zero_copy: bool = False, strict: bool = False):
    """A request frame (without its size prefix, as split_frames yields it) → (header, message).

    Bytes left after the body are ignored, as Kafka's own parser does (some
    clients send them), but kept with the message (:func:`trailing_bytes`):
    encoding it again writes them back.  ``strict=True`` raises
    :class:`TrailingBytesError` instead.  ``with_end=True`` adds the offset
    where the body ended.  ``zero_copy=True``: records and ``zeroCopy`` bytes
    fields are views of ``frame`` (see :meth:`Message.decode` for what a
    view keeps alive).

    A body that fails part-way raises with ``exc.header`` (the decoded
    header) and ``exc.partial`` (the message's top-level fields read before
    the failure, None for the others).
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
    try:
        msg, end = cls.decode(mv, api_version, offset, with_end=True, zero_copy=zero_copy)
        _keep_trailing(msg, mv, end, strict)
    except KafkaProtocolError as exc:
        exc.header = header
        exc.set_context(f"{cls.NAME} v{api_version}")
        raise
    return (header, msg, end) if with_end else (header, msg)


def decode_response(frame, api_key: int, version: int, *, with_end: bool = False, zero_copy: bool = False,
                    strict: bool = False):
    """A response frame (without its size prefix) → (header, message).

    The api key and version are those of the request it answers.  An
    ApiVersions response that does not fit the requested version is read in
    the v0 layout, which brokers use to answer UNSUPPORTED_VERSION (KIP-511).
    Trailing bytes, ``strict``, ``zero_copy`` and the errors' ``header`` and
    ``partial`` as in :func:`decode_request`.
    """
    mv = memoryview(frame)
    cls = response_class(api_key)
    if not cls.supports(version):
        raise UnsupportedVersionError(f"{cls.NAME} v{version} is not supported (versions {cls.VALID_VERSIONS})",
                                      cls.NAME)
    header, offset = decode_response_header(mv, response_header_version(api_key, version))
    try:
        msg, _, end = decode_response_body(cls, mv, version, offset, zero_copy=zero_copy)
        _keep_trailing(msg, mv, end, strict)
    except KafkaProtocolError as exc:
        exc.header = header
        exc.set_context(f"{cls.NAME} v{version}")
        raise
    return (header, msg, end) if with_end else (header, msg)


# KIP-511: a broker asked for an ApiVersions version it does not know answers
# in the v0 layout with UNSUPPORTED_VERSION, so that the client can retry at a
# version it lists.  The one statement of the rule: decode_response_body
# applies it, and the compiled Arrow loop reads these facts from here.
#: the api key whose responses may come in the fallback layout
KIP511_API_KEY = API_VERSIONS
#: the version of that layout
KIP511_VERSION = 0
#: the error code a body read in it must carry to be taken as one
KIP511_ERROR = int(ErrorCode.UNSUPPORTED_VERSION)


def decode_response_body(cls, frame, version: int, offset: int, *, zero_copy: bool = False):
    """The body of a response of class ``cls`` at ``version``, from byte ``offset`` of
    ``frame`` (after its header) → ``(message, version read, end)``.

    An ApiVersions body that does not read at ``version`` is read in the KIP-511
    layout (v0): taken when it carries UNSUPPORTED_VERSION (the version read is
    then 0); otherwise the error of the version asked for is raised (or, when
    the body does not read in the v0 layout either, that one's)."""
    try:
        msg, end = cls.decode(frame, version, offset, with_end=True, zero_copy=zero_copy)
        return msg, version, end
    except KafkaProtocolError:
        if cls.API_KEY != KIP511_API_KEY or version == KIP511_VERSION:
            raise
        msg, end = cls.decode(frame, KIP511_VERSION, offset, with_end=True, zero_copy=zero_copy)
        if msg.error_code != KIP511_ERROR:
            raise
        return msg, KIP511_VERSION, end


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
# received frames, for brokers and proxies


class RequestRef:
    """What a response needs of the request it answers, kept while it waits:
    a few fields, never the request's bytes or message (a Produce request may
    be megabytes).  ``user`` is whatever the owner attached to the request."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "user")

    def __init__(self, api_key, api_version, correlation_id, client_id=None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.user = None

    def __repr__(self):
        return (f"RequestRef(api={self.api_key} v{self.api_version}, correlation_id={self.correlation_id}, "
                f"client_id={self.client_id!r})")


class ReceivedRequest:
    """A request frame as received (by a broker, or a proxy on its way to one).

    ``api_key``, ``api_version`` and ``correlation_id`` come from the frame's
    first 8 bytes (None if it is shorter); ``header`` and ``message`` are
    the decoded request (None when not decoding, or when it does not decode:
    ``error`` says why); ``expects_response`` is False for Produce with
    ``acks=0``.  ``ref`` is the :class:`RequestRef` a response carries back
    (its ``request``); ``user`` is stored there.
    """

    __slots__ = ("frame", "offset", "api_key", "api_version", "correlation_id", "header", "message", "error",
                 "expects_response", "ref")

    def __init__(self, frame, offset, api_key, api_version, correlation_id, header=None, message=None, error=None,
                 expects_response=True):
        self.frame = frame
        #: where the frame's size prefix starts in its byte stream
        self.offset = offset
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.header = header
        self.message = message
        self.error = error
        self.expects_response = expects_response
        self.ref = RequestRef(api_key, api_version, correlation_id)

    @property
    def client_id(self):
        return self.header.client_id if self.header is not None else None

    @property
    def user(self):
        """Anything the owner attaches (a timestamp, a record id): the response's ``request.user``."""
        return self.ref.user

    @user.setter
    def user(self, value):
        self.ref.user = value

    def parts(self) -> list:
        """The frame as it came, size prefix included, as buffers to send."""
        return [_size.pack(len(self.frame)), self.frame]

    def encode(self, message=None, *, canonical: bool = False) -> list:
        """The request re-encoded (``message``, default the decoded one, changed
        or not) with this frame's header, as buffers to send.  The header is
        written from ``header`` as it is now (set ``header.client_id`` or
        ``header.correlation_id`` first to change them), its unknown tags
        included.  Unchanged fields keep their bytes (faithful re-encoding,
        trailing bytes too), so an unchanged request comes back as it came."""
        msg = self.message if message is None else message
        h = self.header
        if msg is None or h is None:
            raise ValueError("no decoded request to encode: decode=True, and a request that decodes")
        return encode_request_parts(msg, h.api_version, h.correlation_id, h.client_id,
                                    h.unknown_tagged_fields or None, canonical=canonical)

    def __repr__(self):
        return (f"ReceivedRequest(api={self.api_key} v{self.api_version}, correlation_id={self.correlation_id}, "
                f"{len(self.frame)} bytes{', error' if self.error is not None else ''})")


class ReceivedResponse:
    """A response frame as received, with the request it answers (``request``,
    a :class:`RequestRef`: None when no request waits for its correlation id)."""

    __slots__ = ("frame", "offset", "correlation_id", "request", "header", "message", "error")

    def __init__(self, frame, offset, correlation_id, request=None, header=None, message=None, error=None):
        self.frame = frame
        #: where the frame's size prefix starts in its byte stream
        self.offset = offset
        self.correlation_id = correlation_id
        self.request = request
        self.header = header
        self.message = message
        self.error = error

    @property
    def api_key(self):
        return self.request.api_key if self.request is not None else None

    @property
    def api_version(self):
        return self.request.api_version if self.request is not None else None

    def parts(self) -> list:
        """The frame as it came, size prefix included, as buffers to send."""
        return [_size.pack(len(self.frame)), self.frame]

    def encode(self, message=None, *, canonical: bool = False) -> list:
        """The response re-encoded (``message``, default the decoded one, changed
        or not) with this frame's version, correlation id and header tags, as
        buffers to send.  Unchanged fields keep their bytes (faithful
        re-encoding), so a changed address is the only difference."""
        msg = self.message if message is None else message
        if msg is None or self.request is None:
            raise ValueError("no decoded response to encode: decode=True, and a response to a known request")
        tags = self.header.unknown_tagged_fields if self.header is not None else None
        return encode_response_parts(msg, self.api_version, self.correlation_id, tags or None, canonical=canonical)

    def __repr__(self):
        return (f"ReceivedResponse(api={self.api_key} v{self.api_version}, correlation_id={self.correlation_id}, "
                f"{len(self.frame)} bytes{', error' if self.error is not None else ''})")


def read_request(frame, offset: int = 0, *, decode: bool = True, zero_copy: bool = False) -> ReceivedRequest:
    """A request frame (size prefix removed) → :class:`ReceivedRequest`, never raising
    on bad bytes: what does not decode is in ``error`` (with the header when it
    read, and ``error.partial``).  ``decode=False`` reads the header only."""
    if len(frame) < 8:
        return ReceivedRequest(frame, offset, None, None, None, error=KafkaProtocolError(
            f"a request frame of {len(frame)} bytes has no room for a header", "request header", 0))
    key, version, cid = _head.unpack_from(frame, 0)
    ev = ReceivedRequest(frame, offset, key, version, cid)
    try:
        if decode:
            ev.header, ev.message = decode_request(frame, zero_copy=zero_copy)
        else:
            ev.header = request_header(frame)
    except KafkaProtocolError as exc:
        ev.error = exc
        ev.header = getattr(exc, "header", None) or _header_or_none(frame)
    if ev.message is not None:
        ev.expects_response = expects_response(ev.message)
    else:
        ev.expects_response = produce_acks(frame) != 0
    ev.ref.client_id = ev.client_id
    return ev


def read_response(frame, offset: int, request: RequestRef | None, *, decode: bool = True,
                  zero_copy: bool = False) -> ReceivedResponse:
    """A response frame (size prefix removed) answering ``request`` (None:
    unpaired, not decoded) → :class:`ReceivedResponse`, never raising on bad bytes."""
    if len(frame) < 4:
        return ReceivedResponse(frame, offset, None, request, error=KafkaProtocolError(
            f"a response frame of {len(frame)} bytes has no room for a correlation id", "response header", 0))
    ev = ReceivedResponse(frame, offset, _i32.unpack_from(frame, 0)[0], request)
    if decode and request is not None and request.api_key is not None:
        try:
            ev.header, ev.message = decode_response(frame, request.api_key, request.api_version, zero_copy=zero_copy)
        except KafkaProtocolError as exc:
            ev.error = exc
            ev.header = getattr(exc, "header", None)
    return ev


def request_header(frame) -> RequestHeader:
    """The header of a request frame (size prefix removed), whatever its api key
    and version: a key or version this library cannot decode still gives its
    api key, version, correlation id and client id (a broker answers such a
    request from them).  Unknown keys are read in the v1 layout, which every
    header version shares up to the client id.  Raises if even that does not read."""
    mv = memoryview(frame)
    if len(mv) < 8:
        raise TruncatedError(f"need 8 bytes, {len(mv)} left", "request header", 0)
    api_key, api_version = _i16x2.unpack_from(mv, 0)
    try:
        hv = request_header_version(api_key, api_version)
    except UnknownApiError:
        hv = 1
    return decode_request_header(mv, hv)[0]


def _header_or_none(frame):
    try:
        return request_header(frame)
    except KafkaProtocolError:
        return None


# ---------------------------------------------------------------------------
# pairing requests with responses


def produce_acks(frame) -> int | None:
    """The ``acks`` of a Produce request frame (size prefix removed); None for
    another request or one whose header or first fields do not read."""
    mv = memoryview(frame)
    if len(mv) < 8:
        return None
    api_key, api_version = _i16x2.unpack_from(mv, 0)
    if api_key != PRODUCE:
        return None
    cls = request_class(PRODUCE)
    try:
        _header, offset = decode_request_header(mv, request_header_version(PRODUCE, api_version))
        r = codec.Reader(mv, offset)
        if api_version >= 3:  # transactional id first
            if cls.is_flexible(api_version):
                r.read_compact_string(True)
            else:
                r.read_string(True)
        return r.read_int16()
    except KafkaProtocolError:
        return None


def request_expects_response(frame) -> bool:
    """Does this request frame (size prefix removed) get a response?  Every
    request does but Produce with ``acks=0``, which brokers never answer."""
    return produce_acks(frame) != 0


def expects_response(msg: Message) -> bool:
    """The same rule for a request message: False only for Produce with ``acks=0``."""
    return not (msg.API_KEY == PRODUCE and getattr(msg, "acks", None) == 0)


class PendingRequests:
    """The requests of one connection waiting for their responses, in the order they were sent.

    This is the pairing rule of every connection of the library (the client
    :class:`Connection`, the proxy, the capture walker's sink: one rule,
    :mod:`kafkaproto._pairing`): Kafka answers the requests of a connection in
    the order it got them, so a response answers the oldest waiting request
    with its correlation id (a client that reuses an id gets each of its
    requests paired in turn); requests that get no response
    (:func:`request_expects_response`) are never added.  With
    ``max_outstanding``, adding past it drops the oldest (counted in
    ``dropped``): memory stays bounded when a peer never answers
    (:class:`~kafkaproto.proxy.ProxyConnection` holds the client back instead).
    """

    __slots__ = ("_waiting", "max_outstanding", "dropped")

    def __init__(self, max_outstanding: int | None = None):
        self._waiting = _pairing.Pairing()
        self.max_outstanding = max_outstanding
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def add(self, correlation_id: int, request) -> None:
        """Note ``request`` as waiting, after any other with the same correlation id."""
        self._waiting.add(correlation_id, request)
        if self.max_outstanding is not None and len(self._waiting) > self.max_outstanding:
            self._waiting.drop_oldest()
            self.dropped += 1

    def oldest(self):
        """(correlation id, request) of the request waiting longest, or None."""
        return self._waiting.oldest()

    def pop(self, correlation_id: int):
        """The request a response with this correlation id answers: the oldest
        waiting with it (None if none waits)."""
        return self._waiting.take(correlation_id)

    def clear(self) -> None:
        self._waiting.clear()


# ---------------------------------------------------------------------------
# sans-IO connection


class Connection:
    """Frames requests and matches responses, with no I/O of its own.

    >>> conn = Connection(client_id="tool")
    >>> parts = conn.send(ApiVersionsRequest(), version=0)   # buffers to write to the socket
    >>> # kafkaproto.net.send_parts(sock, parts), or sock.sendall(b"".join(parts))
    >>> # ... for every chunk read from the socket:
    >>> # for cid, header, response in conn.receive(chunk): ...

    Kafka answers in request order on one connection: a response whose
    correlation id is not the oldest outstanding one raises CorrelationError.
    A Produce request with ``acks=0`` gets no response, and is not waited for.
    """

    def __init__(self, client_id: str | None = None, first_correlation_id: int = 1,
                 max_frame_size: int | None = None):
        self.client_id = client_id
        self._next = first_correlation_id
        self._pending = PendingRequests()
        self._reader = FrameReader() if max_frame_size is None else FrameReader(max_frame_size)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def send(self, msg, version: int, expect_response: bool | None = None) -> list:
        """Frame a request → the buffers to write (see :func:`encode_request_parts`:
        a records field is the caller's own object).  ``expect_response``
        defaults to the protocol's rule (:func:`expects_response`)."""
        cid = self._next
        self._next = (cid + 1) & 0x7FFFFFFF
        parts = encode_request_parts(msg, version, cid, self.client_id)
        if expect_response is None:
            expect_response = expects_response(msg)
        if expect_response:
            self._pending.add(cid, (msg.API_KEY, version))
        return parts

    def receive(self, data) -> list:
        """Feed received bytes → list of (correlation_id, header, response message)."""
        out = []
        for frame in self._reader.feed(data):
            got = _i32.unpack_from(frame, 0)[0] if len(frame) >= 4 else None
            oldest = self._pending.oldest()
            if oldest is None:
                raise CorrelationError(f"response with correlation id {got} but no request is outstanding",
                                       "response header", 0)
            cid, (api_key, version) = oldest
            if got != cid:
                raise CorrelationError(f"expected correlation id {cid}, got {got}", "response header", 0)
            self._pending.pop(cid)
            header, msg = decode_response(frame, api_key, version)
            out.append((cid, header, msg))
        return out


def send_request(host: str, port: int, msg, version: int, client_id: str | None = "kafkaproto",
                 timeout: float = 10.0):
    """Open a connection, send one request, return the decoded response message."""
    import socket

    conn = Connection(client_id)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        send_parts(sock, conn.send(msg, version))
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


