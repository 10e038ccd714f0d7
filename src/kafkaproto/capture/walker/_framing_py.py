"""The pure-Python twin of kafkaproto.capture.walker._framing: what the
reassembly twin (_tcp_py) tells of each connection made Kafka frames, into
the sink -- the same rule as the compiled module (whose text says it in
full).  The walker twin (_scan_py.Walker) extends it.

Detection holds a direction's first bytes until the connection is known to
be Kafka or not, then replays them; framing takes a frame at its word in a
direction in step, except the first request of a connection seen from its
start and a request claiming more than the judge's limit (judge_frame);
out of step, the next plausible frame is looked for (find_frame_start).
"""

from __future__ import annotations

import importlib

from ..._codec_py import FRAME_BAD_SIZE, FRAME_COMPLETE, frame_at
from ._judge_py import find_frame_start, find_start, judge_frame
from ._tcp_py import MAX_OPEN_CONNECTIONS, MAX_PENDING_BYTES, MAX_PENDING_TOTAL, Conn, Tcp
from .packets import endpoint_text

__all__ = ["COMPILED", "DETECT_BYTES", "Framer"]

COMPILED = False

#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES = 64 * 1024
_COMPACT = 1 << 16
UNDECIDED, KAFKA, OTHER = 0, 1, 2
TO_HELD, TO_KAFKA, TO_OTHER = 0, 1, 2
_FL_RESYNC = 2
_NO_REQUESTS: dict = {}


class _Half:
    """What the walker keeps of one direction (see the compiled module's ``Half``)."""

    __slots__ = ("target", "items", "det", "nbytes", "scanned", "kh", "buf", "pos", "base", "synced", "skip",
                 "unsure", "taken", "claim_wait")

    def __init__(self) -> None:
        self.target = TO_HELD
        self.items: list = []  # ("data", ts, bytes) / ("gap", n)
        self.det = bytearray()  # the first DETECT_BYTES held
        self.nbytes = 0
        self.scanned = 0
        self.kh = None
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.synced = False
        self.skip = "gap"
        self.unsure = False
        self.taken = -1
        self.claim_wait = 0


class Framer(Tcp):
    """See the compiled module: the reassembly's connections made Kafka frames, into ``sink``."""

    def __init__(self, acc, sink, connection_factory, check, versions: bytes, ports=None, *,
                 max_frame_size: int = 104857600, max_open_connections: int = MAX_OPEN_CONNECTIONS,
                 max_pending_bytes: int = MAX_PENDING_BYTES, max_pending_total: int = MAX_PENDING_TOTAL) -> None:
        super().__init__(acc, max_open_connections=max_open_connections, max_pending_bytes=max_pending_bytes,
                         max_pending_total=max_pending_total)
        if len(versions) != 512:
            raise ValueError("versions must be 512 bytes")
        self.sink = sink
        self._factory = connection_factory
        self._check = check
        self._versions = versions
        self.max_frame_size = max_frame_size
        self._ports = None if ports is None else {p for p in ports if 0 <= p < 65536}
        self._state = importlib.import_module(type(sink).__module__).KafkaState
        #: connections not yet known to be Kafka or not, oldest first, and the bytes they hold
        self._undecided: dict[Conn, None] = {}
        self._held = 0
        self._w = dict.fromkeys(("not_kafka", "gap", "trunc_bytes", "trunc_frames", "detections_forced"), 0)

    def flush_counts(self) -> None:
        acc, w = self.acc, self._w
        super().flush_counts()
        for name, key in (("not_kafka", "not_kafka"), ("gap", "gap"), ("trunc_bytes", "truncated")):
            if w[name]:
                acc.bytes[key] += w[name]
                w[name] = 0
        if w["trunc_frames"]:
            acc.frames["truncated"] += w["trunc_frames"]
            w["trunc_frames"] = 0
        acc.detections_forced += w["detections_forced"]
        w["detections_forced"] = 0

    def limits(self) -> list:
        """What a saved state must have been saved with to load here."""
        return [self.max_frame_size, self.max_open_connections, self.max_pending_bytes, self.max_pending_total,
                None if self._ports is None else sorted(self._ports), DETECT_BYTES]

    # -- what the reassembly tells ----------------------------------------
    def on_new(self, c: Conn) -> None:
        c.h = [_Half(), _Half()]
        self._undecided[c] = None

    def on_free(self, c: Conn) -> None:
        self._undecided.pop(c, None)
        for h in c.h:
            if h.target == TO_HELD:
                self._held -= h.nbytes

    def on_data(self, c: Conn, side: int, ts, data) -> None:
        h = c.h[side]
        if h.target == TO_KAFKA:
            self._kafka_data(h, ts, data)
        elif h.target == TO_OTHER:
            self._w["not_kafka"] += len(data)
        else:
            self._held_data(c, h, ts, data)

    def on_gap(self, c: Conn, side: int, n: int) -> None:
        h = c.h[side]
        if h.target == TO_KAFKA:
            self._kafka_gap(h, n)
        elif h.target == TO_HELD:
            h.items.append(("gap", n))

    def on_end(self, c: Conn, side: int) -> None:
        if c.h[side].target == TO_HELD:
            self._decide(c, True)
        if c.h[side].target == TO_KAFKA:
            self._drop_rest(c.h[side])

    def on_close(self, c: Conn) -> None:
        if c.state == UNDECIDED:
            self._decide(c, True)
        if c.pairing is not None:
            self.sink.close(c.pairing)
            c.pairing = None

    # -- detection ---------------------------------------------------------
    def _held_data(self, c: Conn, h: _Half, ts, data) -> None:
        h.items.append(("data", ts, bytes(data)))
        if h.nbytes < DETECT_BYTES:
            h.det += data[:DETECT_BYTES - h.nbytes]
        h.nbytes += len(data)
        self._held += len(data)
        self._decide(c, False)
        if self._held > self.max_pending_total:
            self._judge_oldest()

    def _judge_oldest(self) -> None:
        """More bytes are held for detection than ``max_pending_total``: judge
        the connections waited on longest with what they sent so far."""
        undecided = self._undecided
        while self._held > self.max_pending_total and undecided:
            c = next(iter(undecided))
            self._w["detections_forced"] += 1
            self._decide(c, True)
            undecided.pop(c, None)

    def _scan_requests(self, h: _Half) -> int:
        """See the compiled module: 1, 0, or -1 (maybe, later)."""
        buf = h.det
        p, verdict = find_frame_start(buf, h.scanned, True, self.max_frame_size, self._versions, _NO_REQUESTS,
                                      self._check, None, self.max_pending_bytes)
        if verdict:
            return 1
        if p >= 0:
            h.scanned = p
            return -1
        h.scanned = max(h.scanned, len(buf) - 7)
        return -1 if len(buf) < DETECT_BYTES else 0

    def _request_start(self, h: _Half) -> int:
        """See the compiled module: 1, 0, or -1 (not enough bytes to say yet)."""
        buf = h.det
        p, verdict = find_frame_start(buf, 0, True, self.max_frame_size, self._versions, _NO_REQUESTS)
        if p == 0 and verdict:
            return 1
        if p == 0 or (p < 0 and len(buf) < 14):
            return -1
        return 0

    def _decide(self, c: Conn, final: bool) -> None:
        """Settle whether the connection is Kafka, and which end is the client."""
        if c.state != UNDECIDED:
            return
        if c.port[0] == c.port[1] and c.addr[0] == c.addr[1]:
            # a socket connected to itself (TCP self-connect): not a Kafka conversation
            return self._settle(c, False)
        ports = self._ports
        if ports is not None:
            if c.port[0] in ports or c.port[1] in ports:
                if c.client < 0:
                    c.client = 1 if c.port[0] in ports and c.port[1] not in ports else 0
                return self._settle(c, True)
            return self._settle(c, False)
        # each connection is judged on its own packets alone
        if c.client >= 0:
            cl, sv = c.client, 1 - c.client
            if c.h[sv].nbytes and not c.h[cl].nbytes:
                return self._settle(c, False)  # the server spoke first: Kafka clients always do
            v = self._request_start(c.h[cl]) if c.d[cl].from_start else self._scan_requests(c.h[cl])
            if v < 0 and (final or c.h[cl].nbytes >= DETECT_BYTES):
                v = 0
            if v >= 0:
                self._settle(c, v == 1)
            return
        # caught mid-stream: whichever side carries decodable requests is the client
        for side in (0, 1):
            if self._scan_requests(c.h[side]) == 1:
                c.client = side
                return self._settle(c, True)
        # give up once both sides sent enough, or one side alone a lot (bounded memory)
        n0, n1 = c.h[0].nbytes, c.h[1].nbytes
        if final or (n0 >= DETECT_BYTES and n1 >= DETECT_BYTES) or n0 >= 16 * DETECT_BYTES or \
                n1 >= 16 * DETECT_BYTES:
            self._settle(c, False)

    def _settle(self, c: Conn, kafka: bool) -> None:
        self._undecided.pop(c, None)
        if not kafka:
            c.state = OTHER
            self._release(c, 0, TO_OTHER)
            self._release(c, 1, TO_OTHER)
            return
        # counted as a Kafka connection (by the sink) once a frame of it is made
        c.state = KAFKA
        cl, sv = c.client, 1 - c.client
        conn = self._factory(c.id, endpoint_text(c.family, c.addr[cl], c.port[cl]),
                             endpoint_text(c.family, c.addr[sv], c.port[sv]), c.first_ts)
        pairing = self.sink.connection(conn)
        c.conn, c.pairing = conn, pairing
        for side in (cl, sv):
            h = c.h[side]
            from_start = c.d[side].from_start
            h.kh = self._state(conn, pairing, self.sink, side == cl, from_start, self.max_frame_size)
            h.synced = from_start
            h.unsure = side == cl and from_start
            h.skip = "gap"
            self._release(c, side, TO_KAFKA)

    def _release(self, c: Conn, side: int, target: int) -> None:
        """The direction's bytes go to ``target`` from now on: those held first."""
        h = c.h[side]
        h.target = target
        self._held -= h.nbytes
        items, h.items, h.det = h.items, [], bytearray()
        for item in items:
            if item[0] == "gap":
                self.on_gap(c, side, item[1])
            else:
                self.on_data(c, side, item[1], item[2])

    # -- framing -----------------------------------------------------------
    def _kafka_data(self, h: _Half, ts, data) -> None:
        if ts is not None:
            h.kh.ts = ts
        h.buf += data
        while True:
            if h.synced:
                if self._frames(h):
                    h.synced = False
                    h.unsure = False
                    h.skip = "not_kafka"
                    continue
                break
            if not self._resync(h):
                break
        # drop the framed bytes once they are many, or all of them
        if h.pos == len(h.buf) or h.pos > _COMPACT:
            del h.buf[:h.pos]
            h.base += h.pos
            h.pos = 0

    def _frames(self, h: _Half) -> int:
        """See the compiled module: 1 when a bad size prefix or a frame judged
        to be none stopped it (at ``pos``), else 0."""
        kh, buf = h.kh, h.buf
        minimum = 8 if kh.is_request else 4
        end = len(buf)
        while True:
            st, size = frame_at(buf, h.pos, end, self.max_frame_size, minimum)
            if st == FRAME_BAD_SIZE:
                return 1
            if end - h.pos < 4:
                return 0
            if kh.is_request and (h.unsure or (size > self._check.limit and h.base + h.pos != h.taken)):
                if h.base + end < h.claim_wait:
                    return 0  # too few bytes yet to say more than last time
                v, wait = judge_frame(buf, h.pos, self.max_frame_size, self._versions, self._check,
                                      self.max_pending_bytes)
                if v is None:
                    h.claim_wait = h.base + wait
                    return 0
                h.claim_wait = 0
                if not v:
                    return 1
                h.unsure = False
                h.taken = h.base + h.pos
            if st != FRAME_COMPLETE:
                return 0
            self.sink.emit(kh, memoryview(buf)[h.pos + 4:h.pos + 4 + size], h.base + h.pos)
            h.pos += 4 + size

    def _resync(self, h: _Half) -> bool:
        """Look for the next plausible frame; True when found (in step)."""
        kh, buf = h.kh, h.buf
        pairing = kh.pairing
        if h.base + len(buf) < h.claim_wait:
            return False  # too few bytes yet to say more than last time
        p, verdict, wait = find_start(buf, h.pos, kh.is_request, self.max_frame_size, self._versions,
                                      pairing.pending, self._check, pairing, self.max_pending_bytes)
        if p < 0:
            self._skip(h, max(h.pos, len(buf) - (7 if kh.is_request else 0)))
            return False
        self._skip(h, p)
        if verdict is None:  # wait for more bytes before judging this position
            h.claim_wait = h.base + wait
            return False
        h.claim_wait = 0
        h.synced = True
        kh.flags |= _FL_RESYNC
        return True

    def _skip(self, h: _Half, p: int) -> None:
        if p > h.pos:
            self._w[h.skip] += p - h.pos
            h.pos = p

    def _drop_rest(self, h: _Half) -> None:
        rest = len(h.buf) - h.pos
        if rest:
            if h.synced:
                self._w["trunc_bytes"] += rest
                if rest >= 4:
                    self._w["trunc_frames"] += 1
            else:
                self._w[h.skip] += rest
        h.base += len(h.buf)
        h.buf = bytearray()
        h.pos = 0

    def _kafka_gap(self, h: _Half, n: int) -> None:
        self._drop_rest(h)
        h.base += n
        h.synced = False
        h.unsure = False
        h.claim_wait = 0
        h.skip = "gap"
