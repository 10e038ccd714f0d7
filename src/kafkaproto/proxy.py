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
from .errors import FrameSizeError
from .frames import FrameReader
from .protocol import PendingRequests, ReceivedRequest, ReceivedResponse, read_request, read_response

__all__ = ["ProxyConnection", "ProxyRequest", "ProxyResponse", "Unframed", "rewrite_addresses"]

_cid = struct.Struct(">i")
_key = struct.Struct(">h")

#: the proxy's events: the library's received-frame types
ProxyRequest = ReceivedRequest
ProxyResponse = ReceivedResponse

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60


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

    def _request(self, frame, at) -> ReceivedRequest:
        decode = len(frame) >= 2 and self._decodes(_key.unpack_from(frame, 0)[0])
        ev = read_request(frame, at, decode=decode, zero_copy=self.zero_copy)
        if ev.expects_response and ev.correlation_id is not None:
            self.pending.add(ev.correlation_id, ev.ref)  # a few fields, not the frame
        return ev

    def _response(self, frame, at) -> ReceivedResponse:
        req = self.pending.pop(_cid.unpack_from(frame, 0)[0]) if len(frame) >= 4 else None
        decode = req is not None and req.api_key is not None and self._decodes(req.api_key)
        return read_response(frame, at, req, decode=decode, zero_copy=self.zero_copy)


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
