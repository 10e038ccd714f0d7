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
that direction; so do the bytes of a frame that a direction ends inside of,
from :meth:`ProxyConnection.finish`.

Pairing follows Kafka's rule: a connection's responses come in the order of
its requests, so a response answers the oldest waiting request with its
correlation id (a client that reuses an id is paired in turn).  At most
``max_outstanding`` requests wait for a response: past that the client's
bytes are held, unframed (``paused()``; stop reading the client, and call
``from_client(b"")`` once responses have come), as a broker mutes a busy
connection.

Memory: with a shared :class:`MemoryBudget`, a frame is buffered whole only
while the budget has room for it (and it is no larger than the budget's
``max_frame``); any other frame comes back as :class:`Streamed` pieces, as
its bytes arrive, with what its first bytes say (api key, version,
correlation id; a response is paired by them) and never held whole.
"""

from __future__ import annotations

import struct
from collections.abc import Collection

from ._limits import DEFAULT_MAX_FRAME_SIZE
from .errors import FrameSizeError, TruncatedError
from .frames import FrameReader
from .protocol import PendingRequests, ReceivedRequest, ReceivedResponse, read_request, read_response

__all__ = ["MemoryBudget", "ProxyConnection", "ProxyRequest", "ProxyResponse", "Streamed", "StreamedFrame", "Unframed",
           "rewrite_addresses"]

_cid = struct.Struct(">i")
_key = struct.Struct(">h")

#: the proxy's events: the library's received-frame types
ProxyRequest = ReceivedRequest
ProxyResponse = ReceivedResponse

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60

#: body bytes of a streamed frame held before its first piece goes out: room
#: for a request header, a client id and Produce's transactional id and acks
STREAM_HEAD = 512


class Unframed:
    """Bytes of a direction that no longer frames, to forward as they are."""

    __slots__ = ("data", "offset", "error")

    def __init__(self, data, offset, error=None):
        self.data = data
        #: where the bytes start in the direction's byte stream
        self.offset = offset
        #: the FrameSizeError that ended framing (on the first Unframed of a
        #: direction), or the TruncatedError of a direction that ended inside a frame
        self.error = error

    def parts(self) -> list:
        return [self.data]

    def __repr__(self):
        return f"Unframed({len(self.data)} bytes)"


class MemoryBudget:
    """Bytes that the partial frames of many connections may hold together.

    A frame is charged twice its size while it is buffered (the reader's
    buffer before the frame's own ``bytes`` is allocated, then the frame
    and the copies made of it while it is recorded and forwarded), from
    its first bytes until the feed after the one that completed it.
    ``max_frame``: the largest frame ever held whole (default a quarter
    of ``limit``).  A frame that comes whole within one feed is handed out
    whole (the chunk that brought it holds it already: bounded by the read
    size, not by the budget).  One event loop: not for use from several
    threads.
    """

    __slots__ = ("limit", "max_frame", "used", "peak", "streamed")

    def __init__(self, limit: int, max_frame: int | None = None):
        if limit <= 0:
            raise ValueError(f"a memory budget must be positive, not {limit}")
        self.limit = int(limit)
        self.max_frame = self.limit // 4 if max_frame is None else int(max_frame)
        self.used = 0
        self.peak = 0
        #: frames passed on in pieces because they did not fit
        self.streamed = 0

    @staticmethod
    def charge(size: int) -> int:
        return 2 * size + 4

    def take(self, size: int) -> int:
        """Reserve room for a frame of ``size`` bytes → the charge, 0 if it does not fit."""
        need = self.charge(size)
        if size > self.max_frame or self.used + need > self.limit:
            return 0
        self.used += need
        self.peak = max(self.peak, self.used)
        return need

    def give(self, charge: int) -> None:
        self.used -= charge

    def __repr__(self):
        return f"MemoryBudget({self.used} of {self.limit} bytes used, frames up to {self.max_frame} kept)"


class StreamedFrame:
    """A frame passed on in pieces (see :class:`Streamed`).

    ``offset``: where its size prefix starts in the direction's byte stream;
    ``size``: what that prefix claims; ``head``: its first body bytes (up to
    :data:`STREAM_HEAD`); ``passed``: the bytes handed out so far, prefix
    included (``4 + size`` once ``done``); ``event``: the head read as a
    :class:`ProxyRequest` / :class:`ProxyResponse` (its ``frame`` is the head;
    a response is paired with its request), None before the head is in;
    ``user``: anything the owner attaches.
    """

    __slots__ = ("offset", "size", "head", "passed", "done", "event", "user")

    def __init__(self, offset: int, size: int):
        self.offset = offset
        self.size = size
        self.head = b""
        self.passed = 0
        self.done = False
        self.event = None
        self.user = None

    def __repr__(self):
        return f"StreamedFrame({self.passed} of {4 + self.size} bytes passed at {self.offset})"


class Streamed:
    """A piece of a frame too large for the memory budget, to forward as it is.
    ``frame`` (a :class:`StreamedFrame`) is shared by the pieces of one frame;
    ``first`` and ``last`` mark the piece that starts it and the one that ends it."""

    __slots__ = ("data", "frame", "first", "last")

    def __init__(self, data, frame: StreamedFrame, first: bool, last: bool):
        self.data = data
        self.frame = frame
        self.first = first
        self.last = last

    @property
    def offset(self) -> int:
        return self.frame.offset + self.frame.passed - len(self.data)

    def parts(self) -> list:
        return [self.data]

    def __repr__(self):
        return f"Streamed({len(self.data)} bytes of {self.frame!r})"


class ProxyConnection:
    """One client↔broker connection seen from the middle (sans-IO).

    ``decode``: decode requests and responses (True), only those of some
    api keys (a collection of them), or none (False: frame, read request
    headers and pair only, the fast path for forwarding).  ``zero_copy``:
    records fields of decoded messages are views of the frame.
    ``max_outstanding`` bounds the requests waiting for a response: past
    it the client's bytes are held as they came (back-pressure: see
    :meth:`paused`; None: no bound).  ``budget``: a :class:`MemoryBudget`
    (shared by many connections) that frames are held against; a frame that
    does not fit comes back as :class:`Streamed` pieces.  None: every frame
    is held whole.  When a direction ends, :meth:`finish` hands back what it
    still holds; call :meth:`close` when the connection ends, to give its
    share of the budget back.
    """

    def __init__(self, *, decode: bool | Collection[int] = True, zero_copy: bool = True,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, max_outstanding: int = 10_000,
                 budget: MemoryBudget | None = None):
        self.decode = decode
        self.zero_copy = zero_copy
        self.max_outstanding = max_outstanding
        self.pending = PendingRequests()
        self.budget = budget
        self._readers = (FrameReader(max_frame_size), FrameReader(max_frame_size))
        self._framing = [True, True]
        self._offsets = [0, 0]
        # per side: the charge of the frame being buffered, that of the frames
        # handed out by the last feed (given back at the next), the frame
        # being streamed and its bytes held until its head is in
        self._charged = [0, 0]
        self._spent = [0, 0]
        self._streams: list = [None, None]
        self._held = [b"", b""]
        # the client's bytes that came while max_outstanding requests waited
        self._backlog = bytearray()
        self._ended = [False, False]

    def paused(self) -> bool:
        """Are bytes of the client held back because ``max_outstanding``
        requests wait for a response?  Then read no more of it until some
        responses have come through :meth:`from_broker`, and call
        ``from_client(b"")`` for the requests that can go."""
        return bool(self._backlog) or self._readers[0].more

    def _room(self, side: int) -> int:
        # how many frames a feed may hand out (-1: any number)
        if side == 1 or self.max_outstanding is None or self._ended[0]:
            return -1
        room = self.max_outstanding - len(self.pending)
        return room if room > 0 else 0

    def streaming(self, side: int) -> StreamedFrame | None:
        """The frame being passed on in pieces from the client (0) or the broker (1)."""
        return self._streams[side]

    def close(self) -> None:
        """Give this connection's share of the budget back (idempotent)."""
        if self.budget is not None:
            self.budget.give(sum(self._charged) + sum(self._spent))
        self._charged = [0, 0]
        self._spent = [0, 0]

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
        budget = self.budget
        if self._spent[side]:
            budget.give(self._spent[side])  # the frames of the last feed are forwarded by now
            self._spent[side] = 0
        out: list = []
        if self._streams[side] is not None:
            took = self._stream(side, data, 0, out)
            if took == len(data):
                return out
            data = memoryview(data)[took:]
        if not self._framing[side]:
            if len(data):
                out.append(self._unframed(side, bytes(data)))
            return out
        reader = self._readers[side]
        while True:
            room = self._room(side)
            if room == 0:
                # max_outstanding requests wait: the client's bytes wait too, unframed
                self._backlog += data
                break
            if side == 0 and self._backlog:
                # appended to, never copied whole while held: each byte is copied once
                self._backlog += data
                data, self._backlog = self._backlog, bytearray()
            try:
                frames = reader.feed(data, room)
            except FrameSizeError as exc:
                self._framing[side] = False
                out += [self._framed(side, f, make) for f in getattr(exc, "frames", ())]
                out.append(self._unframed(side, reader.unframed(), exc))
                return out
            data = b""
            if frames and self._charged[side]:
                # the frame held against the budget came out first: given back once forwarded
                self._spent[side] += self._charged[side]
                self._charged[side] = 0
            at = self._offsets[side]
            for f in frames:
                out.append(make(f, at))
                at += 4 + len(f)
            self._offsets[side] = at
            if not reader.more:
                break
        size = reader.partial_size
        if budget is not None and size is not None and not self._charged[side]:
            self._charged[side] = budget.take(size)
            if not self._charged[side]:
                budget.streamed += 1
                self._begin_stream(side, size, reader.unframed(), out)
        return out

    def _begin_stream(self, side, size, got, out) -> None:
        self._streams[side] = StreamedFrame(self._offsets[side], size)
        self._offsets[side] += 4 + size
        self._held[side] = b""
        self._stream(side, got, 0, out)

    def _stream(self, side, data, pos, out) -> int:
        """Pass on what the frame being streamed still needs of ``data[pos:]`` → bytes taken."""
        sf = self._streams[side]
        take = min(4 + sf.size - sf.passed - len(self._held[side]), len(data) - pos)
        piece = bytes(data[pos:pos + take])
        if sf.event is None:
            # hold the first bytes until the head is in (or the frame ends)
            held = self._held[side] + piece
            head = min(sf.size, STREAM_HEAD)
            if len(held) - 4 < head:
                self._held[side] = held
                return take
            self._held[side] = b""
            sf.head = held[4:4 + head]
            sf.event = self._read_head(side, sf)
            piece, first = held, True
        else:
            first = False
        sf.passed += len(piece)
        if sf.passed == 4 + sf.size:
            sf.done = True
            self._streams[side] = None
        out.append(Streamed(piece, sf, first, sf.done))
        return take

    def finish(self, side: int) -> list:
        """The client's (0) or the broker's (1) direction has ended → the events
        for what it still holds, so that every byte fed comes back once: the
        requests held back by ``max_outstanding`` (handed out now), the held
        head of a frame being streamed (a last :class:`Streamed` piece), and
        the bytes of a frame the direction ended inside of (an
        :class:`Unframed` whose ``error`` is a TruncatedError)."""
        if self._ended[side]:
            return []
        self._ended[side] = True
        make = self._request if side == 0 else self._response
        out = []
        if self._framing[side] and self._streams[side] is None and (side == 1 or self.paused()):
            out += self._feed(side, b"", make)
        out += self.flush_stream(side)
        if self._framing[side] and self._streams[side] is None:
            reader = self._readers[side]
            size = reader.partial_size
            rest = reader.unframed()
            if rest:
                at = self._offsets[side]
                claim = f" of {4 + size} bytes" if size is not None else ""
                err = TruncatedError(f"the {('client', 'broker')[side]} direction ended {len(rest)} bytes into a "
                                     f"frame{claim}", "frame", at)
                out.append(self._unframed(side, rest, err))
        return out

    def flush_stream(self, side: int) -> list:
        """The bytes held of a streamed frame whose head is not all in (its
        direction ended): as a last :class:`Streamed` piece (or none)."""
        sf = self._streams[side]
        held = self._held[side]
        if sf is None or not held:
            return []
        self._held[side] = b""
        if len(held) > 4:
            sf.head = held[4:4 + STREAM_HEAD]
            sf.event = self._read_head(side, sf)
        sf.passed += len(held)
        return [Streamed(held, sf, True, False)]

    def _read_head(self, side, sf):
        # the head alone is never decoded, but paired as a whole frame is
        return (self._request if side == 0 else self._response)(sf.head, sf.offset, head_only=True)

    def _framed(self, side, frame, make):
        at = self._offsets[side]
        self._offsets[side] = at + 4 + len(frame)
        return make(frame, at)

    def _unframed(self, side, data, exc=None):
        at = self._offsets[side]
        self._offsets[side] = at + len(data)
        return Unframed(data, at, exc)

    def _request(self, frame, at, head_only=False) -> ReceivedRequest:
        decode = not head_only and len(frame) >= 2 and self._decodes(_key.unpack_from(frame, 0)[0])
        ev = read_request(frame, at, decode=decode, zero_copy=self.zero_copy)
        if ev.expects_response and ev.correlation_id is not None:
            self.pending.add(ev.correlation_id, ev.ref)  # a few fields, not the frame
        return ev

    def _response(self, frame, at, head_only=False) -> ReceivedResponse:
        req = self.pending.pop(_cid.unpack_from(frame, 0)[0]) if len(frame) >= 4 else None
        decode = not head_only and req is not None and req.api_key is not None and self._decodes(req.api_key)
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
