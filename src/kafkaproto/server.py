"""The broker side, without I/O: for test brokers, mocks and debuggers.

A :class:`ServerConnection` is fed what one client sends and hands back the
requests, decoded; responses given to it come back as the buffers to send,
in the order the requests came (Kafka's rule on a connection), whatever
order the handlers answer in::

    conn = ServerConnection(versions={18: (0, 3), 3: (0, 12), 0: (3, 11)})   # what this broker speaks
    for req in conn.receive(chunk):              # ReceivedRequest objects
        if not conn.accepts(req):                # a key or version it does not speak, or bytes that do not read
            out = conn.reject(req)               # KIP-511 / UNSUPPORTED_VERSION; None: close the connection
            if out is None:
                return
        elif req.expects_response:               # not for Produce with acks=0
            out = conn.respond(req, handle(req.message))
        send_parts(sock, out)                    # what is ready, in request order

``respond``, ``reject`` and ``abandon`` return their buffers at once: write
them before the next call on the connection (from one task, or before an
``await``), so that they leave in the order given.

At most ``max_pending`` requests await an answer: past that, what the client
sends is held as it came, unframed (``paused()``), as Kafka mutes a busy
channel; stop reading the client, and call ``receive(b"")`` once answers
have gone out.

The helpers below answer what a broker must answer without knowing the
request's schema (:func:`unsupported_version_response`, the KIP-511
ApiVersions reply), advertise versions (:func:`api_versions_response`),
store produced batches (:func:`kafkaproto.records.assign_offsets`) and serve
them back (:func:`fetch_partition`).
"""

from __future__ import annotations

from collections import deque

from ._limits import DEFAULT_MAX_FRAME_SIZE
from .error_codes import ErrorCode
from .errors import UnsupportedVersionError
from .frames import FrameReader
from .messages import response_class
from .protocol import (
    API_VERSIONS,
    ReceivedRequest,
    encode_response_parts,
    read_request,
    supported_versions,
)
from .records import assign_offsets

__all__ = [
    "ServerConnection",
    "api_versions_response",
    "assign_offsets",
    "fetch_partition",
    "unsupported_version_response",
]


class ServerConnection:
    """One client connection seen from the broker (sans-IO).

    ``receive(data)`` → the requests completed by ``data``, decoded
    (:class:`~kafkaproto.protocol.ReceivedRequest`: ``header``, ``message``,
    or ``error`` with the header when it read).  ``respond(request,
    response)`` encodes the response at the request's version and
    correlation id and returns the buffers that may be sent now: responses
    leave in request order, so an answer to a later request waits for the
    earlier ones.  A Produce request with ``acks=0`` expects no response and
    is not waited for.  ``pending`` is how many requests await an answer (a
    broker stops reading a client that has too many, as Kafka mutes a
    channel).  ``max_pending`` bounds them: past it the client's bytes are
    held, and ``receive`` hands out no more requests until answers have gone
    (:meth:`paused`; None: no bound).  ``zero_copy``: records fields are
    views of the request frame.  ``versions`` (api key → (min, max)): what
    this broker speaks, for :meth:`accepts`, :meth:`reject` and the
    ApiVersions answer (default: every version of the library).
    """

    def __init__(self, *, versions: dict[int, tuple[int, int]] | None = None,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, zero_copy: bool = True,
                 max_pending: int | None = 10_000):
        self.versions = supported_versions() if versions is None else dict(versions)
        self.zero_copy = zero_copy
        self.max_pending = max_pending
        self._reader = FrameReader(max_frame_size)
        self._order: deque = deque()   # requests awaiting a response, in arrival order
        self._waiting: set = set()     # the same, to look them up
        self._ready: dict = {}         # request -> its encoded response (none: abandoned)
        self._backlog = bytearray()    # what the client sent while max_pending requests waited
        self._offset = 0

    @property
    def pending(self) -> int:
        return len(self._order)

    def paused(self) -> bool:
        """Are bytes of the client held back because ``max_pending`` requests
        await an answer?  Then read no more of it until answers have gone out,
        and call ``receive(b"")`` for the requests that can be handed out."""
        return bool(self._backlog) or self._reader.more

    def receive(self, data=b"") -> list[ReceivedRequest]:
        """Bytes from the client → the requests they complete, as many as
        ``max_pending`` allows (FrameSizeError on a bad size prefix)."""
        out = []
        while True:
            room = -1 if self.max_pending is None else self.max_pending - len(self._order)
            if room <= 0 and self.max_pending is not None:
                self._backlog += data  # held as it came: bytes, not requests
                return out
            if self._backlog:
                # appended to, never copied whole while held: each byte is copied once
                self._backlog += data
                data, self._backlog = self._backlog, bytearray()
            for frame in self._reader.feed(data, room):
                req = read_request(frame, self._offset, zero_copy=self.zero_copy)
                self._offset += 4 + len(frame)
                if req.expects_response and req.correlation_id is not None:
                    self._order.append(req)
                    self._waiting.add(req)
                out.append(req)
            data = b""
            if not self._reader.more:
                return out

    def respond(self, request: ReceivedRequest, response, *, version: int | None = None,
                header_tagged_fields=None, lenient: bool = False) -> list:
        """Answer ``request`` with the response message → the buffers ready to send now.

        ``version`` defaults to the request's; ``lenient=True`` drops fields
        that version lacks (one response object for every version).
        """
        if not request.expects_response:
            raise ValueError(f"{request!r} expects no response (a Produce request with acks=0)")
        if request in self._ready or request not in self._waiting:
            raise ValueError(f"{request!r} is not waiting for a response on this connection")
        v = request.api_version if version is None else version
        self._ready[request] = encode_response_parts(response, v, request.correlation_id, header_tagged_fields,
                                                     lenient=lenient)
        return self._flush()

    def accepts(self, request: ReceivedRequest) -> bool:
        """Did ``request`` decode, at a key and version in ``versions``?"""
        rng = self.versions.get(request.api_key)
        return request.error is None and rng is not None and rng[0] <= request.api_version <= rng[1]

    def reject(self, request: ReceivedRequest) -> list | None:
        """Answer a request this broker does not speak (:func:`unsupported_version_response`:
        KIP-511 for ApiVersions) → the buffers ready to send, or None when there
        is nothing to answer with, as Kafka closes the connection then."""
        reply = unsupported_version_response(request, self.versions)
        if reply is None:
            return None
        if not request.expects_response:
            return self._flush()
        return self.respond(request, reply, version=0 if request.api_key == API_VERSIONS else None)

    def abandon(self, request: ReceivedRequest) -> list:
        """Give up answering ``request`` (a handler that failed) → the buffers of
        later responses that were waiting for it.  The client never gets an
        answer with its correlation id: Kafka's clients time such requests out."""
        if request in self._waiting:
            self._ready[request] = []  # nothing goes out for it; those behind it can
        return self._flush()

    def api_versions(self, **kw):
        """This broker's ApiVersionsResponse (its ``versions``)."""
        return api_versions_response(self.versions, **kw)

    def _flush(self) -> list:
        out: list = []
        while self._order and self._order[0] in self._ready:
            req = self._order.popleft()
            self._waiting.discard(req)
            out += self._ready.pop(req)
        return out


def api_versions_response(versions: dict[int, tuple[int, int]] | None = None, *, error_code: int = 0,
                          throttle_time_ms: int = 0):
    """An ApiVersionsResponse advertising ``versions`` (api key → (min, max);
    default: every version this library speaks, :func:`supported_versions`)."""
    cls = response_class(API_VERSIONS)
    versions = supported_versions() if versions is None else versions
    return cls(error_code=error_code, throttle_time_ms=throttle_time_ms,
               api_keys=[cls.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                         for k, (lo, hi) in sorted(versions.items())])


def unsupported_version_response(request: ReceivedRequest, versions: dict[int, tuple[int, int]] | None = None):
    """The answer to a request at a version the broker does not speak.

    For ApiVersions this is KIP-511's reply, to encode at version 0 whatever
    the request's version (``respond(req, ..., version=0)``): error
    UNSUPPORTED_VERSION and the versions of ApiVersions the broker speaks, so
    the client retries with one of them.  For any other api key it is that
    key's response with its top-level ``error_code`` set to
    UNSUPPORTED_VERSION (at the request's version when this library has it);
    None when that response has no top-level error code at that version, and
    for a request that did not decode for another reason than its version (a
    body cut short, a bad value: the version is not the problem), where Kafka
    closes the connection.
    """
    if request.error is not None and not isinstance(request.error, UnsupportedVersionError):
        return None
    versions = supported_versions() if versions is None else versions
    if request.api_key == API_VERSIONS:
        lo, hi = versions[API_VERSIONS]
        return api_versions_response({API_VERSIONS: (lo, hi)}, error_code=ErrorCode.UNSUPPORTED_VERSION)
    try:
        cls = response_class(request.api_key)
    except Exception:
        return None
    version = request.api_version
    if not cls.supports(version) or "error_code" not in {f.name for f in cls.fields(version)}:
        return None
    return cls(error_code=ErrorCode.UNSUPPORTED_VERSION)


def fetch_partition(partition_index: int, records, *, high_watermark: int, last_stable_offset: int = -1,
                    log_start_offset: int = -1, error_code: int = 0, aborted_transactions=None,
                    preferred_read_replica: int = -1):
    """A Fetch response partition serving stored batches.

    ``records``: one buffer (a log segment's slice) or a list of stored
    batches; either way they are kept as they are, and encoded to parts each
    is sent by reference, without a copy (a list is one records field made of
    its buffers in order).  ``aborted_transactions``: (producer id, first
    offset) pairs, for read-committed consumers (a list, even an empty one);
    None, the default, writes null, as Kafka answers a read-uncommitted one.
    """
    cls = response_class(1)
    aborted = None if aborted_transactions is None else [
        cls.AbortedTransaction(producer_id=p, first_offset=o) for p, o in aborted_transactions]
    return cls.PartitionData(partition_index=partition_index, error_code=error_code, high_watermark=high_watermark,
                             last_stable_offset=last_stable_offset, log_start_offset=log_start_offset,
                             aborted_transactions=aborted, preferred_read_replica=preferred_read_replica,
                             records=records)
