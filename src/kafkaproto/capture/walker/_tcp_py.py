"""The pure-Python twin of kafkaproto.capture.walker._tcp: TCP segments in
capture order to an in-order byte stream per direction, and the life of
each connection -- the same rule as the compiled module, whose text says it
in full.

A connection is found by its 4-tuple (the lower ``(address, port)`` end
first: end 0); each direction's segments waiting behind a hole are kept by
offset, in the order they came.  The walker's framing (``_framing_py.Framer``,
which ``_scan_py.Walker`` extends) extends :class:`Tcp` and is told of each connection, chunk of data, gap, end of a
direction and close through the ``on_*`` methods.
"""

from __future__ import annotations

import heapq

__all__ = ["COMPILED", "MAX_CLOSED", "MAX_OPEN_CONNECTIONS", "MAX_PENDING_BYTES", "MAX_PENDING_TOTAL", "Tcp"]

COMPILED = False

MAX_OPEN_CONNECTIONS = 1 << 17
MAX_PENDING_BYTES = 8 << 20
MAX_PENDING_TOTAL = 256 << 20
MAX_CLOSED = 1 << 16

SYN, FIN, RST, ACK = 0x02, 0x01, 0x04, 0x10
_MASK = 0xFFFFFFFF
_HALF = 0x80000000


class Dir:
    """One direction's reassembly (see the compiled module's ``Dir``)."""

    __slots__ = ("base", "from_start", "ended", "next", "heap", "pending", "conn", "side")

    def __init__(self, conn, side: int) -> None:
        self.base: int | None = None  # sequence number of stream offset 0
        self.from_start = False  # its SYN was seen
        self.ended = False
        self.next = 0  # the next stream offset expected
        #: segments waiting behind a hole: a heap of (offset, arrival, ts, length, captured bytes)
        self.heap: list = []
        self.pending = 0  # their captured bytes
        self.conn = conn
        self.side = side

    def offset(self, seq: int) -> int:
        """The stream offset of ``seq``: the one within 2 GiB of the next expected."""
        return self.next + ((seq - self.base - self.next + _HALF) & _MASK) - _HALF


class Conn:
    """One connection (see the compiled module's ``Conn``); the walker adds its
    state of each direction as ``h``."""

    __slots__ = ("key", "family", "addr", "port", "id", "first_ts", "closed", "fins", "client", "state", "d", "h",
                 "conn", "pairing")

    def __init__(self, key: tuple, cid: int, ts: int | None) -> None:
        self.key = key
        self.family = key[0]
        self.addr = (key[1], key[3])
        self.port = (key[2], key[4])
        self.id = cid
        self.first_ts = ts
        self.closed = False
        self.fins = 0
        self.client = -1
        self.state = 0
        self.d = (Dir(self, 0), Dir(self, 1))
        self.h: list = [None, None]
        self.conn = None
        self.pairing = None


class Tcp:
    """See the compiled module: connections by their 4-tuple and the
    reassembly of each direction; a Walker extends it."""

    def __init__(self, acc, *, max_open_connections: int = MAX_OPEN_CONNECTIONS,
                 max_pending_bytes: int = MAX_PENDING_BYTES, max_pending_total: int = MAX_PENDING_TOTAL) -> None:
        self.acc = acc
        self.max_open_connections = max(1, max_open_connections)
        self.max_pending_bytes = max_pending_bytes
        self.max_pending_total = max_pending_total
        # open connections, oldest first; closed ones (a bounded memory of them,
        # so a late retransmission is a duplicate, not a new connection)
        self._open: dict[tuple, Conn] = {}
        self._closed: dict[tuple, Conn] = {}
        #: the directions with bytes waiting, oldest first (a dict as an ordered set)
        self._waiting: dict[Dir, None] = {}
        self._pool = 0
        self._dup_seen = False
        self._serial = 0
        self._next_id = 0
        self._n = dict.fromkeys(("duplicate", "gaps", "missing", "gaps_forced", "connections", "evicted", "syn_only"),
                                0)

    @property
    def open_connections(self) -> int:
        return len(self._open)

    @property
    def pending_bytes(self) -> int:
        return self._pool

    def finish(self) -> None:
        """The end of the capture: every open connection closes (oldest first)."""
        self.close_every()

    def close_all(self) -> None:
        """Close every connection and forget them all."""
        self.close_every()
        for c in list(self._closed.values()):
            self.forget(c)

    def flush(self) -> None:
        self.flush_counts()

    def flush_counts(self) -> None:
        acc, n = self.acc, self._n
        if n["duplicate"] or self._dup_seen:
            # (a copy with no byte captured is a duplicate too: the ledger names it)
            acc.bytes["duplicate"] += n["duplicate"]
            self._dup_seen = False
        if n["gaps"]:
            acc.gaps += n["gaps"]
            acc.missing_bytes += n["missing"]
        acc.gaps_forced += n["gaps_forced"]
        acc.connections += n["connections"]
        acc.evicted_connections += n["evicted"]
        acc.syn_only += n["syn_only"]
        for k in n:
            n[k] = 0

    # -- what the walker is told (overridden) -------------------------------
    def on_new(self, c: Conn) -> None:
        pass

    def on_data(self, c: Conn, side: int, ts, data) -> None:
        pass

    def on_gap(self, c: Conn, side: int, n: int) -> None:
        pass

    def on_end(self, c: Conn, side: int) -> None:
        pass

    def on_close(self, c: Conn) -> None:
        pass

    def on_free(self, c: Conn) -> None:
        pass

    # -- connections -------------------------------------------------------
    def _new(self, key: tuple, ts) -> Conn:
        while len(self._open) >= self.max_open_connections:
            # constant work per new connection: the one opened first is closed
            c = next(iter(self._open.values()))
            self.close(c)
            self.forget(c)
            self._n["evicted"] += 1
        self._next_id += 1
        self._n["connections"] += 1
        c = Conn(key, self._next_id, ts)
        self._open[key] = c
        self.on_new(c)
        return c

    def close(self, c: Conn) -> None:
        """The connection is over (both directions end; it joins the closed ones)."""
        if c.closed:
            return
        c.closed = True
        del self._open[c.key]
        self._closed[c.key] = c
        if len(self._closed) > MAX_CLOSED:
            self.forget(next(iter(self._closed.values())))
        self._half_close(c, 0)
        self._half_close(c, 1)
        self.on_close(c)
        d0, d1 = c.d
        if (d0.from_start or d1.from_start) and not (d0.next or d0.heap or d1.next or d1.heap):
            self._n["syn_only"] += 1  # a connection attempt that carried no byte either way

    def forget(self, c: Conn) -> None:
        """Drop a connection from every list."""
        del (self._closed if c.closed else self._open)[c.key]
        for d in c.d:
            if d.pending:
                self._pending(d, -d.pending)
            elif d in self._waiting:
                self._pending(d, 0)
        self.on_free(c)

    def close_every(self) -> None:
        while self._open:
            self.close(next(iter(self._open.values())))

    # -- packets -----------------------------------------------------------
    def segment(self, ts, family: int, src: bytes, sport: int, dst: bytes, dport: int, seq: int, ack: int,
                flags: int, payload, length: int) -> None:
        """One TCP segment (addresses: 4 or 16 raw bytes; ``payload``: its
        captured bytes of the ``length`` on the wire)."""
        a, b = (src, sport), (dst, dport)
        s = 0 if a <= b else 1
        o = 0 if a == b else 1 - s  # a socket connected to itself: one direction
        key = (family, *a, *b) if s == 0 else (family, *b, *a)
        c = self._open.get(key)
        if c is None:
            c = self._closed.get(key)
        syn_only = flags & (SYN | ACK) == SYN
        if c is not None and syn_only and (c.closed or (c.d[s].base is not None and
                                                        c.d[s].base != (seq + 1) & _MASK)):
            # the 4-tuple is reused by a new connection
            self.close(c)
            self.forget(c)
            c = None
        if c is None:
            c = self._new(key, ts)
        if c.closed:
            self._dup(len(payload))
            return
        if flags & SYN:
            d = c.d[s]
            if d.base is None:
                d.base = (seq + 1) & _MASK
                d.from_start = True
            if syn_only and c.client < 0:
                c.client = s
        if length:
            # data on a SYN (TCP Fast Open) starts after the SYN's sequence number
            self._half(c, s, ts, (seq + 1) & _MASK if flags & SYN else seq, payload, length)
        if flags & ACK:
            self._acked(c, o, ack)
        if flags & RST:
            self.close(c)
        elif flags & FIN:
            c.fins |= 1 << s
            if c.fins == 3:
                self.close(c)

    # -- one direction -----------------------------------------------------
    def _half(self, c: Conn, side: int, ts, seq: int, payload, length: int) -> None:
        d = c.d[side]
        if d.ended:
            self._dup(len(payload))
            return
        if d.base is None:
            d.base = seq
        off = d.offset(seq)
        if off == d.next and not d.heap:
            self._deliver(c, side, ts, off, payload, length)
            return
        if off + length <= d.next:
            self._dup(len(payload))
            return
        if off < d.next:
            # a retransmission that overlaps the stream's end: keep the new tail
            cut = d.next - off
            self._dup(min(cut, len(payload)))
            payload = payload[cut:]
            length -= cut
            off = d.next
        heapq.heappush(d.heap, (off, self._serial, ts, length, bytes(payload)))
        self._serial += 1
        self._pending(d, len(payload))
        self._drain(c, side)
        while d.pending > self.max_pending_bytes and d.heap:
            self._force_gap(c, side, True)
        if self._pool > self.max_pending_total:
            self._shrink()

    def _dup(self, n: int) -> None:
        """``n`` bytes of a copy of what the stream already has (perhaps none captured)."""
        self._n["duplicate"] += n
        self._dup_seen = True

    def _pending(self, d: Dir, n: int) -> None:
        """``n`` more bytes waiting in ``d`` (negative: fewer)."""
        d.pending += n
        self._pool += n
        if d.pending:
            if d not in self._waiting:
                self._waiting[d] = None
        else:
            self._waiting.pop(d, None)

    def _deliver(self, c: Conn, side: int, ts, off: int, payload, length: int) -> None:
        if payload:
            self.on_data(c, side, ts, payload)
        c.d[side].next = off + len(payload)
        if len(payload) < length:
            # the snap length cut this segment: no copy of the rest can come
            self._gap(c, side, length - len(payload))

    def _gap(self, c: Conn, side: int, n: int) -> None:
        self._n["gaps"] += 1
        self._n["missing"] += n
        c.d[side].next += n
        self.on_gap(c, side, n)

    def _drain(self, c: Conn, side: int) -> None:
        d = c.d[side]
        heap = d.heap
        while heap and heap[0][0] <= d.next:
            off, _serial, ts, length, payload = heapq.heappop(heap)
            self._pending(d, -len(payload))
            if off + length <= d.next:
                self._dup(len(payload))
                continue
            cut = d.next - off
            if cut > 0:
                self._dup(min(cut, len(payload)))
            self._deliver(c, side, ts, d.next, payload[cut:], length - cut)

    def _force_gap(self, c: Conn, side: int, forced: bool) -> None:
        """Give up waiting for the hole before the first waiting segment
        (``forced``: because too many bytes wait, counted as ``gaps_forced``)."""
        d = c.d[side]
        if d.heap:
            if forced:
                self._n["gaps_forced"] += 1
            self._gap(c, side, d.heap[0][0] - d.next)
            self._drain(c, side)

    def _acked(self, c: Conn, side: int, ack: int) -> None:
        """The other side acknowledged up to ``ack``: bytes before it that were
        not captured will never be (the receiver has them)."""
        d = c.d[side]
        if d.base is None or not d.heap:
            return
        upto = d.offset(ack)
        while d.heap and upto > d.next:
            self._gap(c, side, min(upto, d.heap[0][0]) - d.next)
            self._drain(c, side)

    def _half_close(self, c: Conn, side: int) -> None:
        d = c.d[side]
        if d.ended:
            return
        while d.heap:
            self._force_gap(c, side, False)
        d.ended = True
        self.on_end(c, side)

    def _shrink(self) -> None:
        """More bytes wait than ``max_pending_total``: the directions that have
        waited longest give up their first holes."""
        waiting = self._waiting
        while self._pool > self.max_pending_total and waiting:
            d = next(iter(waiting))
            if d.heap:
                self._force_gap(d.conn, d.side, True)
            else:
                self._pending(d, 0)
