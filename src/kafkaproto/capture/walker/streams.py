"""Kafka frames out of reassembled TCP streams: framing, resynchronization
after a gap, detection of Kafka connections; pairing and numbering happen
where every frame lands, in the walker's sink (capture.walker._sink.FrameSink).

:class:`Extractor` takes packets (or TCP segments) in capture order and
hands every frame to its sink as a row, keeping an :class:`Accounting` of
everything it saw.  A response is paired with the oldest waiting request of
its connection that has its correlation id, which gives it the api key and
version it must be decoded with, and a latency.

After a gap (or when a capture starts in the middle of a connection) a
direction is out of sync; it resynchronizes at the next plausible frame:

- requests: a size prefix, a known api key with a version this library
  knows, a client id of printable characters inside the frame
  (walker._judge.find_frame_start, in constant time per byte), and the
  frame reading as that request -- walked whole up to :data:`CHECK_BYTES`;
  a larger one as far as its first CHECK_BYTES, followed by another
  plausible header (walker._judge.BodyCheck, in C: a bounded amount of work
  per position, whatever size the frame claims);
- responses: a size prefix and a correlation id of a request still waiting
  for its response on this connection, and the first bytes decoding as the
  response to that request.

The bytes skipped are counted as ``gap``.  A direction whose size prefix
makes no sense (negative, or larger than ``max_frame_size``) is not Kafka
from there on: it resynchronizes the same way, counting ``not_kafka``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from ..._impl import load as _load
from ..._limits import DEFAULT_MAX_FRAME_SIZE
from ...errors import KafkaProtocolError
from ...messages import APIS, request_class, response_class
from ...protocol import header_table
from ..accounting import Accounting
from ..objects import Connection
from .packets import ACK, FIN, RST, SYN, TcpSegment, addr4, addr6, decode_tcp
from .tcp import HalfStream, PendingPool

# the walker's units: compiled (the scanner frames in-order data in C) or the
# twins.  Everything of the capture layer takes them from here (tests swap in
# the twins to compare the two).
_sink = _load("capture.walker._sink")
_judge = _load("capture.walker._judge")
_scan = _load("capture.walker._scan")

__all__ = ["Extractor", "KafkaHalf", "request_versions"]

MAX_OUTSTANDING = 1 << 16  # per connection; older requests count as unanswered
DETECT_BYTES = 64 * 1024  # bytes per direction looked at to tell whether a connection is Kafka
#: connections open at once, at most: past it the one opened first is closed
#: (counted as ``evicted_connections``; its later packets start a new one)
MAX_OPEN_CONNECTIONS = 1 << 17
#: bytes waiting behind holes, per direction and in all
MAX_PENDING_BYTES = 8 << 20
MAX_PENDING_TOTAL = 256 << 20
_MAX_CLOSED = 1 << 16  # closed connections remembered (their late packets count as duplicate)

_versions: dict[int, tuple[int, int]] = {}


def request_versions() -> dict[int, tuple[int, int]]:
    """``{api_key: (lowest, highest)}`` request versions this library decodes."""
    if not _versions:
        for key in APIS:
            try:
                cls = request_class(key)
            except (KafkaProtocolError, AttributeError):
                continue
            if cls.LOWEST_VERSION is not None:
                _versions[key] = (cls.LOWEST_VERSION, cls.HIGHEST_VERSION)
    return _versions


def _find_frame_start(buf, pos, is_request, max_frame_size, versions, pending, check=None, pairing=None):
    """Where a frame could start (walker._judge.find_frame_start, compiled or
    the twin's): its header judged in constant time per byte and, with
    ``check``, its frame by a bounded walk.  Detection and resynchronization
    both ask it, and nothing else judges a frame's start."""
    return _judge.find_frame_start(buf, pos, is_request, max_frame_size, versions, pending, check, pairing)


_VERSIONS: list[bytes] = []


def _version_table() -> bytes:
    """Lowest and highest request version of each api key below 256 (512 bytes)."""
    if not _VERSIONS:
        table = bytearray(b"\xff\x00" * 256)
        for key, (lo, hi) in request_versions().items():
            if 0 <= key < 256:
                table[2 * key], table[2 * key + 1] = min(lo, 255), min(hi, 255)
        _VERSIONS.append(bytes(table))
    return _VERSIONS[0]


def request_start(buf, max_frame_size: int, final: bool = False) -> bool | None:
    """Could a request frame start at ``buf[0]``?  None: not enough bytes to
    say yet (False once ``final``)."""
    p, verdict = _find_frame_start(buf, 0, True, max_frame_size, _version_table(), {})
    if p == 0 and verdict:
        return True
    if p == 0 or (p < 0 and len(buf) < 14):
        return False if final else None
    return False


#: a candidate frame up to this size is judged by walking it whole; a larger
#: one by walking its first CHECK_BYTES and by the next frame's header right
#: after it: a position costs a bounded amount of work, whatever the size its
#: prefix claims
CHECK_BYTES = 512
_CHECKS: list = []


def _plan_of(is_request: bool, key: int, version: int):
    """The message program of (kind, api key, version), or None without one."""
    try:
        cls = request_class(key) if is_request else response_class(key)
        return cls.plan(version)
    except (KafkaProtocolError, AttributeError):
        return None


def body_check():
    """The judge of candidate frames (walker._judge.BodyCheck): one per process."""
    if not _CHECKS or type(_CHECKS[0]) is not _judge.BodyCheck:
        _CHECKS[:] = [_judge.BodyCheck(_plan_of, header_table(True), header_table(False), CHECK_BYTES)]
    return _CHECKS[0]


class KafkaHalf:
    """Frames one direction of a Kafka connection (a TCP stream consumer).

    The framing state is ``state`` (a KafkaState of capture.walker._scan: conn,
    pairing, sink, is_request, synced, buf, pos, base, ts, max_frame_size),
    which the compiled fast path also reads and advances: it frames in-order
    data of a synced direction itself and leaves the rest (resyncing
    included) to these methods.  Frames go to the sink."""

    __slots__ = ("state", "acc", "skip_reason")

    def __init__(self, conn: Connection, pairing, sink, is_request: bool, acc: Accounting, synced: bool = True,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.state = _sink.KafkaState(conn, pairing, sink, is_request, synced, max_frame_size)
        self.acc = acc
        self.skip_reason = "gap"

    # -- stream consumer ---------------------------------------------------
    def data(self, ts: int | None, chunk) -> None:
        st = self.state
        if ts is not None:
            st.ts = ts
        st.buf += chunk
        self._run()

    def gap(self, nbytes: int) -> None:
        self._drop_rest()
        st = self.state
        st.base += nbytes
        st.synced = False
        self.skip_reason = "gap"

    def end(self) -> None:
        self._drop_rest()

    # -- internals ---------------------------------------------------------
    def _drop_rest(self) -> None:
        st = self.state
        rest = len(st.buf) - st.pos
        if rest:
            if st.synced:
                self.acc.bytes["truncated"] += rest
                if rest >= 4:
                    self.acc.frames["truncated"] += 1
            else:
                self.acc.bytes[self.skip_reason] += rest
        st.base += len(st.buf)
        st.buf = bytearray()
        st.pos = 0

    def _run(self) -> None:
        st = self.state
        while True:
            if st.synced:
                if st.drain():
                    st.synced = False
                    self.skip_reason = "not_kafka"
                    continue
                break
            if not self._resync():
                break
        st.compact()

    def _resync(self) -> bool:
        """Look for the next plausible frame; True when found (synced)."""
        st = self.state
        buf = st.buf
        p, verdict = _find_frame_start(buf, st.pos, st.is_request, st.max_frame_size, _version_table(),
                                       st.pairing.pending, body_check(), st.pairing)
        if p < 0:
            keep = 7 if st.is_request else 0
            self._skip(max(st.pos, len(buf) - keep))
            return False
        self._skip(p)
        if verdict is None:  # wait for more bytes before judging this position
            return False
        st.synced = True
        st.flags |= _sink.FLAGS["resync"]
        return True

    def _skip(self, p: int) -> None:
        st = self.state
        if p > st.pos:
            self.acc.bytes[self.skip_reason] += p - st.pos
            st.pos = p


class _NotKafka:
    __slots__ = ("acc",)

    def __init__(self, acc: Accounting) -> None:
        self.acc = acc

    def data(self, ts, chunk) -> None:
        self.acc.bytes["not_kafka"] += len(chunk)

    def gap(self, nbytes: int) -> None:
        pass

    def end(self) -> None:
        pass


class _Held:
    """Holds the first bytes of a direction until the connection is known to be
    Kafka or not, then replays them."""

    __slots__ = ("flow", "items", "nbytes", "target", "buf", "scanned")

    def __init__(self, flow: _Flow) -> None:
        self.flow = flow
        self.items: list[tuple] = []
        self.nbytes = 0
        self.target = None
        self.buf = bytearray()
        self.scanned = 0  # where detection's scan for a request resumes

    def data(self, ts, chunk) -> None:
        if self.target is not None:
            self.target.data(ts, chunk)
            return
        self.items.append(("data", ts, bytes(chunk)))
        if self.nbytes < DETECT_BYTES:
            self.buf += chunk[:DETECT_BYTES - self.nbytes]
        self.nbytes += len(chunk)
        ext = self.flow.ext
        ext.held_bytes += len(chunk)
        self.flow.decide(self)
        if ext.held_bytes > ext.pool.limit:
            ext._judge_oldest()

    def gap(self, nbytes: int) -> None:
        if self.target is not None:
            self.target.gap(nbytes)
        else:
            self.items.append(("gap", nbytes))

    def end(self) -> None:
        if self.target is None:
            self.flow.decide(self, final=True)
        if self.target is not None:
            self.target.end()

    def release(self, target) -> None:
        self.target = target
        self.flow.ext.held_bytes -= self.nbytes
        self.flow = None  # no cycle back to the flow: a closed connection is freed by reference counting
        items, self.items, self.buf = self.items, [], bytearray()
        for item in items:
            if item[0] == "data":
                target.data(item[1], item[2])
            else:
                target.gap(item[1])


def _endpoint(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class _Flow:
    __slots__ = ("ext", "conn_id", "ends", "halves", "held", "client", "state", "fins", "closed", "first_ts",
                 "conn", "pairing")

    def __init__(self, ext: Extractor, conn_id: int, a: tuple[str, int], b: tuple[str, int],
                 ts: int | None) -> None:
        self.ext = ext
        self.conn_id = conn_id
        self.ends = (a, b)
        self.held = {a: _Held(self), b: _Held(self)}
        self.halves = {end: HalfStream(self.held[end], ext.acc, ext.max_pending_bytes, ext.pool) for end in (a, b)}
        self.client: tuple[str, int] | None = None
        self.state = "undecided"
        self.fins: set[tuple[str, int]] = set()
        self.closed = False
        self.first_ts = ts
        self.conn: Connection | None = None
        self.pairing = None
        ext.undecided[self] = None

    def other(self, end):
        return self.ends[1] if end == self.ends[0] else self.ends[0]

    def decide(self, held: _Held | None = None, final: bool = False) -> None:
        """Settle whether this is a Kafka connection, and who the client is."""
        if self.state != "undecided":
            return
        ext = self.ext
        a, b = self.ends
        if a == b:
            # a socket connected to itself (TCP self-connect): one stream, no client
            # and server to tell apart, so not a Kafka conversation
            return self._settle(False)
        if ext.ports is not None:
            if a[1] in ext.ports or b[1] in ext.ports:
                if self.client is None:
                    self.client = b if a[1] in ext.ports and b[1] not in ext.ports else a
                return self._settle(True)
            return self._settle(False)
        # Each connection is judged on its own packets alone (no endpoint
        # learnt from other connections): that is what lets connections be
        # reassembled in parallel, in any grouping, with the same verdicts.
        if self.client is not None:
            server = self.other(self.client)
            if self.held[server].nbytes and not self.held[self.client].nbytes:
                return self._settle(False)  # the server spoke first: Kafka clients always do
            buf = self.held[self.client].buf
            verdict = request_start(buf, ext.max_frame_size) if self.halves[self.client].from_start \
                else _scan_requests(self.held[self.client], ext.max_frame_size)
            if verdict is None and (final or self.held[self.client].nbytes >= DETECT_BYTES):
                verdict = False
            if verdict is not None:
                self._settle(bool(verdict))
            return
        # caught mid-stream: whichever side carries decodable requests is the client
        for end in self.ends:
            if _scan_requests(self.held[end], ext.max_frame_size):
                self.client = end
                return self._settle(True)
        # give up once both sides sent enough, or one side alone a lot (bounded memory)
        if final or all(h.nbytes >= DETECT_BYTES for h in self.held.values()) or \
                any(h.nbytes >= 16 * DETECT_BYTES for h in self.held.values()):
            self._settle(False)

    def _settle(self, kafka: bool) -> None:
        ext = self.ext
        ext.undecided.pop(self, None)
        if not kafka:
            self.state = "other"
            for held in self.held.values():
                held.release(_NotKafka(ext.acc))
            return
        # counted as a Kafka connection (by the sink) once a frame of it is made
        self.state = "kafka"
        client, server = self.client, self.other(self.client)
        self.conn = Connection(self.conn_id, _endpoint(*client), _endpoint(*server), self.first_ts)
        self.pairing = ext.sink.connection(self.conn)
        for end, is_request in ((client, True), (server, False)):
            half = KafkaHalf(self.conn, self.pairing, ext.sink, is_request, ext.acc,
                             synced=self.halves[end].from_start, max_frame_size=ext.max_frame_size)
            if not self.halves[end].from_start:
                half.skip_reason = "gap"
            self.held[end].release(half)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.ext._closed(self)
        for half in self.halves.values():
            half.close()
        if self.state == "undecided":
            self.decide(final=True)
        halves = self.halves.values()
        if any(h.from_start for h in halves) and not any(h.state.next or h.state.heap for h in halves):
            self.ext.acc.syn_only += 1  # a connection attempt that carried no byte either way
        if self.pairing is not None:
            self.ext.sink.close(self.pairing)
            self.pairing = None


def _scan_requests(held: _Held, max_frame_size: int) -> bool | None:
    """A request frame that reads somewhere in what ``held`` holds (the
    resynchronization rule)?  None: maybe, later.  The scan resumes where the
    last one could not decide, so the bytes held are judged once."""
    buf = held.buf
    p, verdict = _find_frame_start(buf, held.scanned, True, max_frame_size, _version_table(), {}, body_check())
    if verdict:
        return True
    if p >= 0:
        held.scanned = p
        return None
    held.scanned = max(held.scanned, len(buf) - 7)
    return None if len(buf) < DETECT_BYTES else False


class Extractor:
    """Packets in, frames out: into :attr:`sink` (a FrameSink of capture.walker._scan,
    drained by the caller with ``sink.take()``).

    ``ports``: the brokers' ports; a connection is Kafka when either end uses
    one.  None: detect Kafka connections from their first bytes, each
    connection on its own.

    The state kept is bounded: ``max_open_connections`` open at once (past
    it the one opened first is closed: ``acc.evicted_connections``), and the
    bytes waiting behind holes, ``max_pending_bytes`` per direction and
    ``max_pending_total`` in all (past either a hole is given up on:
    ``acc.gaps_forced``); the bytes held while detection decides whether a
    connection is Kafka count against ``max_pending_total`` too (past it the
    oldest undecided connection is judged on what it sent:
    ``acc.detections_forced``).  Every step costs the same whatever the number of
    connections open.
    """

    def __init__(self, ports: Iterable[int] | None = None, acc: Accounting | None = None,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *,
                 max_open_connections: int = MAX_OPEN_CONNECTIONS, max_pending_bytes: int = MAX_PENDING_BYTES,
                 max_pending_total: int = MAX_PENDING_TOTAL, batch_rows: int = 65536,
                 batch_bytes: int = 32 << 20) -> None:
        self.ports = None if ports is None else set(ports)
        self.acc = acc if acc is not None else Accounting()
        self.max_frame_size = max_frame_size
        self.max_open_connections = max(1, max_open_connections)
        self.max_pending_bytes = max_pending_bytes
        self.pool = PendingPool(max_pending_total)
        # open connections, oldest first; closed ones (a bounded memory of them,
        # so a late retransmission is a duplicate, not a new connection)
        self.flows: OrderedDict[tuple, _Flow] = OrderedDict()
        self.closed: OrderedDict[tuple, _Flow] = OrderedDict()
        # connections not yet known to be Kafka or not, oldest first, and the
        # bytes they hold for detection (bounded with those waiting out of order)
        self.undecided: OrderedDict[_Flow, None] = OrderedDict()
        self.held_bytes = 0
        #: where every frame lands (rows and bytes), and the requests left
        #: unanswered when their connection ends (``sink.unanswered``)
        self.sink = _sink.FrameSink(self.acc, header_table(True), header_table(False), MAX_OUTSTANDING,
                                    batch_rows, batch_bytes)
        self._next_id = 0

    def packet(self, ts: int | None, linktype: int, data: bytes) -> None:
        acc = self.acc
        acc.packets_total += 1
        seg = decode_tcp(linktype, data)
        if isinstance(seg, str):
            acc.packets[seg] += 1
            return
        acc.packets["tcp"] += 1
        acc.payload_bytes_total += len(seg.payload)
        self.segment(ts, seg)

    def tcp(self, ts: int | None, seg: TcpSegment) -> None:
        """One TCP segment decoded elsewhere (the byte-range read stage): counted
        as :meth:`packet` counts a packet that decodes to it, then :meth:`segment`."""
        acc = self.acc
        acc.packets_total += 1
        acc.packets["tcp"] += 1
        acc.payload_bytes_total += len(seg.payload)
        self.segment(ts, seg)

    def segment(self, ts: int | None, seg: TcpSegment) -> None:
        src, dst = (seg.src, seg.sport), (seg.dst, seg.dport)
        key = (src, dst) if src < dst else (dst, src)
        flow = self.flows.get(key)
        if flow is None:
            flow = self.closed.get(key)
        syn_only = seg.flags & (SYN | ACK) == SYN
        if flow is not None and syn_only and (flow.closed or (
                flow.halves[src].state.base is not None and
                flow.halves[src].state.base != (seg.seq + 1) & 0xFFFFFFFF)):
            flow.close()  # the 4-tuple is reused by a new connection
            del self.closed[key]
            flow = None
        if flow is None:
            flow = self._new_flow(key, ts)
        half = flow.halves[src]
        if flow.closed:
            self.acc.bytes["duplicate"] += len(seg.payload)
            return
        if seg.flags & SYN:
            half.syn(seg.seq)
            if syn_only and flow.client is None:
                flow.client = src
        if seg.length:
            # data on a SYN (TCP Fast Open) starts after the SYN's sequence number
            half.segment(ts, (seg.seq + 1) & 0xFFFFFFFF if seg.flags & SYN else seg.seq, seg.payload, seg.length)
        if seg.flags & ACK:
            flow.halves[dst].acked(seg.ack)
        if seg.flags & RST:
            flow.close()
        elif seg.flags & FIN:
            flow.fins.add(src)
            if len(flow.fins) == 2:
                flow.close()

    def scanner(self):
        """A ``CaptureScanner`` (capture.walker._scan, or its twin) that feeds this
        extractor: its packets come here, its frames land in :attr:`sink` and
        its counts in :attr:`acc`."""
        return _scan.CaptureScanner(self.packet, self.settled, self.acc, self.sink)

    def settled(self, family: int, src: bytes, sport: int, dst: bytes, dport: int):
        """The state of direction src -> dst (addresses: 4 or 16 raw bytes) of
        a connection that is open and known to be Kafka or not, as the
        compiled fast path takes it: ``(half, other_half, kafka)`` -- the two
        HalfStream states and the sending side's KafkaHalf state (None: not
        Kafka); None while every packet must come through :meth:`packet`."""
        conv = addr4 if family == 4 else addr6
        a, b = (conv(src), sport), (conv(dst), dport)
        flow = self.flows.get((a, b) if a < b else (b, a))
        if flow is None or flow.closed or flow.state == "undecided":
            return None
        target = flow.held[a].target
        if isinstance(target, KafkaHalf):
            kafka = target.state
        elif type(target) is _NotKafka:
            kafka = None
        else:
            return None
        return flow.halves[a].state, flow.halves[b].state, kafka

    def _new_flow(self, key, ts) -> _Flow:
        flows = self.flows
        while len(flows) >= self.max_open_connections:
            # constant work per new connection: the one opened first is closed
            # (its frames so far are kept; its later packets start a new connection)
            old_key, oldest = next(iter(flows.items()))
            oldest.close()
            self.closed.pop(old_key, None)
            self.acc.evicted_connections += 1
        self._next_id += 1
        self.acc.connections += 1
        flow = _Flow(self, self._next_id, key[0], key[1], ts)
        flows[key] = flow
        return flow

    def _judge_oldest(self) -> None:
        """More bytes are held for detection than ``max_pending_total``: judge
        the connections waited on longest with what they sent so far."""
        undecided = self.undecided
        while self.held_bytes > self.pool.limit and undecided:
            flow = next(iter(undecided))
            self.acc.detections_forced += 1
            flow.decide(final=True)
            undecided.pop(flow, None)

    def _closed(self, flow: _Flow) -> None:
        """``flow`` has just closed: from the open connections to the closed ones."""
        key = flow.ends
        if self.flows.get(key) is flow:
            del self.flows[key]
            closed = self.closed
            closed[key] = flow
            if len(closed) > _MAX_CLOSED:
                closed.popitem(last=False)

    def finish(self) -> None:
        for flow in list(self.flows.values()):
            flow.close()

    def close_all(self) -> None:
        """Close every connection and forget them (their frames land in ``out``):
        the segment path calls it after the last segment of a 4-tuple."""
        self.finish()
        self.flows.clear()
        self.closed.clear()
        self.undecided.clear()
