"""Frames and connections as objects: what :meth:`FrameBatch.frames
<kafkaproto.capture.frames.FrameBatch.frames>` gives for code that wants one
object per frame, what the tap records, and the connection a walker makes for
each TCP connection it frames.  (The columns are the fast way: a frame batch
makes no object per frame.)"""

from __future__ import annotations

import hashlib
import struct

__all__ = ["REQUEST", "RESPONSE", "CapturedFrame", "Connection", "RequestInfo", "paired_request", "paired_response"]

REQUEST, RESPONSE = "request", "response"
_i32 = struct.Struct(">i")


class Connection:
    """One TCP connection (or one tap connection): who is the client, who the broker."""

    __slots__ = ("id", "client", "server", "first_ts", "_uid", "__weakref__")

    def __init__(self, id: int, client: str, server: str, first_ts: int | None = None) -> None:
        self.id = id
        self.client = client
        self.server = server
        self.first_ts = first_ts
        self._uid: int | None = None

    @property
    def uid(self) -> int:
        """A 63-bit id that depends only on the connection itself (client,
        server, time of its first packet), not on what else the capture
        holds or the order it is read in: the same connection gets the same
        uid whether its capture is read whole, in byte ranges or rolled into
        many files.  (``id`` numbers connections in the order one reader met
        them.)  Without a first time stamp (tap tables, pcapng simple
        packets) the reader's ``id`` takes its place."""
        if self._uid is None:
            first = self.first_ts if self.first_ts is not None else f"#{self.id}"
            text = f"{self.client}|{self.server}|{first}"
            self._uid = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1
        return self._uid

    def __repr__(self) -> str:
        return f"Connection({self.id}, {self.client} -> {self.server})"


class RequestInfo:
    """The request a response answers, as :class:`CapturedFrame` objects show it."""

    __slots__ = ("api_key", "api_version", "ts", "client_id", "seq")

    def __init__(self, api_key, api_version, ts, client_id=None, seq=None) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.ts = ts
        self.client_id = client_id
        #: the request frame's number in its connection
        self.seq: int | None = seq

    def __repr__(self) -> str:
        return f"RequestInfo(api={self.api_key} v{self.api_version}, client_id={self.client_id!r}, seq={self.seq})"


class CapturedFrame:
    """One Kafka frame (size prefix removed) with where and when it was seen:
    a row of a frame table as an object (:meth:`FrameBatch.frames
    <kafkaproto.capture.frames.FrameBatch.frames>`), or a frame the tap records.

    A response carries its request's :class:`RequestInfo` (``request``), hence
    ``api_key``, ``api_version`` (None when unpaired), ``request_ts`` and the
    request's ``client_id``; a request carries its own.  ``seq`` numbers the
    frames of a connection in the order they come.  Times are nanoseconds
    since the epoch; ``status`` is ``framed`` or ``unpaired``.
    """

    __slots__ = ("ts", "conn", "direction", "offset", "frame", "api_key", "api_version", "correlation_id",
                 "request_ts", "status", "client_id", "request", "seq", "flags")

    def __init__(self, ts, conn, direction, offset, frame, api_key=None, api_version=None,
                 correlation_id=None, request_ts=None, status="framed", client_id=None, request=None,
                 seq=None, flags=0) -> None:
        self.ts = ts
        self.conn = conn
        self.direction = direction
        self.offset = offset
        self.frame = frame
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.request_ts = request_ts
        self.status = status
        self.client_id = client_id
        self.request = request
        self.seq: int | None = seq
        self.flags = flags

    @property
    def wire_size(self) -> int:
        return len(self.frame) + 4

    @property
    def latency_ns(self) -> int | None:
        if self.request_ts is None or self.ts is None:
            return None
        return self.ts - self.request_ts

    def __repr__(self) -> str:
        return (f"CapturedFrame(conn={self.conn.id}, {self.direction}, api={self.api_key} "
                f"v{self.api_version}, cid={self.correlation_id}, {len(self.frame)} bytes, {self.status})")


def paired_request(conn: Connection, ts, offset: int, frame, info: RequestInfo | None) -> CapturedFrame:
    """The CapturedFrame of a request whose pairing is done (``info`` None: no header to pair by)."""
    if info is None:
        return CapturedFrame(ts, conn, REQUEST, offset, frame)
    corr = _i32.unpack_from(frame, 4)[0]
    return CapturedFrame(ts, conn, REQUEST, offset, frame, info.api_key, info.api_version, corr, None, "framed",
                         info.client_id, info)


def paired_response(conn: Connection, ts, offset: int, frame, corr, info: RequestInfo | None) -> CapturedFrame:
    """The CapturedFrame of a response whose pairing is done (``info`` None: ``unpaired``)."""
    if info is None:
        return CapturedFrame(ts, conn, RESPONSE, offset, frame, None, None, corr, None, "unpaired")
    return CapturedFrame(ts, conn, RESPONSE, offset, frame, info.api_key, info.api_version, corr, info.ts, "framed",
                         info.client_id, info)
