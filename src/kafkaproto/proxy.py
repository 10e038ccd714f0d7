"""The middle of a Kafka connection, without I/O: for proxies, taps and debuggers.

A :class:`ProxyConnection` is fed the bytes of one client↔broker connection
from both directions.  It cuts them into frames, pairs each response with
its request by correlation id (a Produce request with ``acks=0`` gets none),
decodes both if asked, and hands back events that hold the exact bytes to
forward::

    proxy = ProxyConnection()
    for ev in proxy.from_client(chunk):          # a ProxyRequest (or Unframed)
        send_parts(broker_sock, ev.parts())
    for ev in proxy.from_broker(chunk):          # a ProxyResponse (or Unframed)
        if ev.api_key == 3 and rewrite_addresses(ev.message, 3, mapper):
            send_parts(client_sock, ev.encode())  # only the rewritten fields differ
        else:
            send_parts(client_sock, ev.parts())

Every byte fed comes back out, once, in order, in the events' ``parts()``:
bytes that stop framing (a negative or oversized size prefix: not Kafka, or
TLS) come back as :class:`Unframed`, and so does everything after them in
that direction.
"""

from __future__ import annotations

import struct
from collections.abc import Collection

from ._limits import DEFAULT_MAX_FRAME_SIZE
from .errors import FrameSizeError, KafkaProtocolError
from .frames import FrameReader
from .headers import decode_request_header
from .protocol import (
    PendingRequests,
    decode_request,
    decode_response,
    encode_response_parts,
    produce_acks,
    request_header_version,
)

__all__ = ["ProxyConnection", "ProxyRequest", "ProxyResponse", "Unframed", "rewrite_addresses"]

_size = struct.Struct(">i")
_head = struct.Struct(">hhi")
_cid = struct.Struct(">i")

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60


class ProxyRequest:
    """A request frame seen on its way to the broker.

    ``api_key``, ``api_version`` and ``correlation_id`` come from the frame's
    first 8 bytes (None if it is shorter); ``header`` and ``message`` are
    the decoded request (None when not decoding, or when it does not decode:
    ``error`` says why); ``expects_response`` is False for Produce with
    ``acks=0``.
    """

    __slots__ = ("frame", "offset", "api_key", "api_version", "correlation_id", "header", "message", "error",
                 "expects_response", "user")

    def __init__(self, frame, offset, api_key, api_version, correlation_id, header=None, message=None, error=None,
                 expects_response=True):
        self.frame = frame
        #: where the frame's size prefix starts in the client's byte stream
        self.offset = offset
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.header = header
        self.message = message
        self.error = error
        self.expects_response = expects_response
        #: anything the owner attaches (a timestamp, a record id): it comes back as the response's ``request.user``
        self.user = None

    @property
    def client_id(self):
        return self.header.client_id if self.header is not None else None

    def parts(self) -> list:
        """The frame as it came, size prefix included, as buffers to send."""
        return [_size.pack(len(self.frame)), self.frame]

    def __repr__(self):
        return (f"ProxyRequest(api={self.api_key} v{self.api_version}, correlation_id={self.correlation_id}, "
                f"{len(self.frame)} bytes{', error' if self.error is not None else ''})")


class ProxyResponse:
    """A response frame seen on its way to the client, with the request it
    answers (``request``: None when no request waits for its correlation id)."""

    __slots__ = ("frame", "offset", "correlation_id", "request", "header", "message", "error")

    def __init__(self, frame, offset, correlation_id, request=None, header=None, message=None, error=None):
        self.frame = frame
        #: where the frame's size prefix starts in the broker's byte stream
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
        return (f"ProxyResponse(api={self.api_key} v{self.api_version}, correlation_id={self.correlation_id}, "
                f"{len(self.frame)} bytes{', error' if self.error is not None else ''})")


class Unframed:
    """Bytes of a direction that no longer frames, to forward as they are."""

    __slots__ = ("data", "offset", "error")

    def __init__(self, data, offset, error=None):
        self.data = data
        #: where the bytes start in the direction's byte stream
        self.offset = offset
        #: the FrameSizeError that ended framing (on the first Unframed of a direction)
        self.error = error

    def parts(self) -> list:
        return [self.data]

    def __repr__(self):
        return f"Unframed({len(self.data)} bytes)"


class ProxyConnection:
    """One client↔broker connection seen from the middle (sans-IO).

    ``decode``: decode requests and responses (True), only those of some
    api keys (a collection of them), or none (False: frame, read request
    headers and pair only, the fast path for forwarding).  ``zero_copy``:
    records fields of decoded messages are views of the frame.
    ``max_outstanding`` bounds the requests waiting for a response (the
    oldest is dropped past it, counted in ``pending.dropped``).
    """

    def __init__(self, *, decode: bool | Collection[int] = True, zero_copy: bool = True,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, max_outstanding: int = 10_000):
        self.decode = decode
        self.zero_copy = zero_copy
        self.pending = PendingRequests(max_outstanding)
        self._readers = (FrameReader(max_frame_size), FrameReader(max_frame_size))
        self._framing = [True, True]
        self._offsets = [0, 0]

    def _decodes(self, api_key) -> bool:
        d = self.decode
        return d is True or (d is not False and api_key in d)

    def from_client(self, data) -> list:
        """Bytes from the client → ProxyRequest (and Unframed) events, in order."""
        return self._feed(0, data, self._request)

    def from_broker(self, data) -> list:
        """Bytes from the broker → ProxyResponse (and Unframed) events, in order."""
        return self._feed(1, data, self._response)

    def _feed(self, side, data, make):
        if not self._framing[side]:
            return [self._unframed(side, bytes(data))] if len(data) else []
        reader = self._readers[side]
        try:
            frames = reader.feed(data)
        except FrameSizeError as exc:
            self._framing[side] = False
            out = [self._framed(side, f, make) for f in getattr(exc, "frames", ())]
            out.append(self._unframed(side, reader.unframed(), exc))
            return out
        return [self._framed(side, f, make) for f in frames]

    def _framed(self, side, frame, make):
        at = self._offsets[side]
        self._offsets[side] = at + 4 + len(frame)
        return make(frame, at)

    def _unframed(self, side, data, exc=None):
        at = self._offsets[side]
        self._offsets[side] = at + len(data)
        return Unframed(data, at, exc)

    def _request(self, frame, at) -> ProxyRequest:
        if len(frame) < 8:
            return ProxyRequest(frame, at, None, None, None, error=KafkaProtocolError(
                f"a request frame of {len(frame)} bytes has no room for a header", "request header", 0))
        key, version, cid = _head.unpack_from(frame, 0)
        ev = ProxyRequest(frame, at, key, version, cid)
        try:
            if self._decodes(key):
                ev.header, ev.message = decode_request(frame, zero_copy=self.zero_copy)
            else:
                ev.header = decode_request_header(frame, request_header_version(key, version))[0]
        except KafkaProtocolError as exc:
            ev.error = exc
        if ev.message is not None:
            ev.expects_response = not (key == 0 and ev.message.acks == 0)
        else:
            ev.expects_response = produce_acks(frame) != 0
        if ev.expects_response:
            self.pending.add(cid, ev)
        return ev

    def _response(self, frame, at) -> ProxyResponse:
        if len(frame) < 4:
            return ProxyResponse(frame, at, None, error=KafkaProtocolError(
                f"a response frame of {len(frame)} bytes has no room for a correlation id", "response header", 0))
        cid = _cid.unpack_from(frame, 0)[0]
        req = self.pending.pop(cid)
        ev = ProxyResponse(frame, at, cid, req)
        if req is not None and req.api_key is not None and self._decodes(req.api_key):
            try:
                ev.header, ev.message = decode_response(frame, req.api_key, req.api_version,
                                                        zero_copy=self.zero_copy)
            except KafkaProtocolError as exc:
                ev.error = exc
        return ev


def rewrite_addresses(msg, api_key: int, mapper) -> bool:
    """Replace each broker address of a Metadata, FindCoordinator or
    DescribeCluster response in place → True if any changed.

    ``mapper(host, port)`` returns the new ``(host, port)``, or None to keep
    it.  Error replies (FindCoordinator answers host "" and port -1) are
    left alone.  Re-encode the message (:meth:`ProxyResponse.encode`, or
    :func:`~kafkaproto.protocol.encode_response`) to get the new frame: every
    other byte stays as the broker wrote it.
    """
    changed = False

    def fix(obj) -> None:
        nonlocal changed
        host, port = getattr(obj, "host", ""), getattr(obj, "port", -1)
        if not host or port is None or port < 0:
            return
        new = mapper(host, port)
        if new is not None and tuple(new) != (host, port):
            obj.host, obj.port = new
            changed = True

    if api_key in (METADATA, DESCRIBE_CLUSTER):
        for b in msg.brokers or ():
            fix(b)
    elif api_key == FIND_COORDINATOR:
        if msg.coordinators:
            for c in msg.coordinators:
                fix(c)
        else:
            fix(msg)
    return changed
