"""TCP reassembly of one direction of a connection.

:class:`HalfStream` turns segments (in capture order: possibly out of order,
retransmitted, overlapping, cut by the snap length) into an in-order byte
stream for a consumer with three methods::

    data(ts_ns, chunk)     # the next bytes of the stream
    gap(nbytes)            # nbytes are missing from the capture here
    end()                  # the stream is over

Sequence numbers are unwrapped to 64-bit stream offsets (offset 0 is the byte
after the SYN, or the first byte seen for a connection caught mid-stream).
The first copy of a byte wins; later copies count as ``duplicate``.  Segments
ahead of a hole wait, at most ``max_pending_bytes`` per direction and, with a
:class:`PendingPool`, at most its ``limit`` over all directions; a hole is
declared a gap when a limit is passed (counted in ``acc.gaps_forced``), when
the other side acknowledges data past it (the receiver had the bytes, so the
capture lost them), or at the end.
"""

from __future__ import annotations

import heapq

from ..._impl import load as _load

__all__ = ["HalfStream", "PendingPool"]

_MASK = 0xFFFFFFFF
_HALF = 0x80000000

# HalfState: compiled (a cdef class of capture.walker._scan, read and advanced by the
# capture fast path in C) or the twin's plain class.
_HalfState = _load("capture.walker._scan").HalfState


class PendingPool:
    """The bytes waiting out of order in every direction of a capture, bounded:
    past ``limit`` the direction that has waited longest gives up its first
    hole (a gap), and the next, until the total is back under the limit."""

    __slots__ = ("limit", "bytes", "waiting")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.bytes = 0
        #: the directions with bytes waiting, oldest first (a dict as an ordered set)
        self.waiting: dict[HalfStream, None] = {}

    def shrink(self) -> None:
        waiting = self.waiting
        while self.bytes > self.limit and waiting:
            half = next(iter(waiting))
            if half.state.heap:
                half.force_gap(forced=True)
            else:
                del waiting[half]


class HalfStream:
    """One direction of a TCP connection; its reassembly state is ``state``
    (base, next, pending, heap, ended), which the compiled fast path of
    capture.walker._scan also reads and advances for in-order segments."""

    __slots__ = ("state", "consumer", "acc", "pending_bytes", "max_pending_bytes", "from_start", "pool")

    def __init__(self, consumer, acc, max_pending_bytes: int = 8 << 20, pool: PendingPool | None = None) -> None:
        # state.base: sequence number of stream offset 0 (None until known);
        # state.next: next expected stream offset; state.pending: offset ->
        # [(ts, payload, length)] waiting behind a hole, state.heap: their offsets
        self.state = _HalfState()
        self.consumer = consumer
        self.acc = acc
        self.pending_bytes = 0
        self.max_pending_bytes = max_pending_bytes
        self.from_start = False  # True when the SYN was seen
        self.pool = pool

    def offset(self, seq: int) -> int:
        st = self.state
        delta = ((seq - st.base - st.next + _HALF) & _MASK) - _HALF
        return st.next + delta

    def syn(self, seq: int) -> None:
        st = self.state
        if st.base is None:
            st.base = (seq + 1) & _MASK
            self.from_start = True

    def segment(self, ts: int | None, seq: int, payload: bytes, length: int) -> None:
        """One segment's payload (``length`` is its size on the wire, which
        may exceed the captured ``payload``)."""
        st = self.state
        if st.ended:
            self.acc.bytes["duplicate"] += len(payload)
            return
        if st.base is None:
            st.base = seq
        off = self.offset(seq)
        if off == st.next and not st.pending:
            self._deliver(ts, off, payload, length)
            return
        if off + length <= st.next:
            self.acc.bytes["duplicate"] += len(payload)
            return
        if off < st.next:
            # a retransmission that overlaps the stream's end: keep the new tail
            cut = st.next - off
            self.acc.bytes["duplicate"] += min(cut, len(payload))
            payload = payload[cut:]
            length -= cut
            off = st.next
        if off not in st.pending:
            heapq.heappush(st.heap, off)
            st.pending[off] = []
        st.pending[off].append((ts, payload, length))
        self._pending(len(payload))
        self._drain()
        while self.pending_bytes > self.max_pending_bytes and st.heap:
            self.force_gap(forced=True)
        pool = self.pool
        if pool is not None and pool.bytes > pool.limit:
            pool.shrink()

    def _pending(self, n: int) -> None:
        """``n`` more bytes waiting (negative: fewer)."""
        self.pending_bytes += n
        pool = self.pool
        if pool is not None:
            pool.bytes += n
            if self.pending_bytes:
                if self not in pool.waiting:
                    pool.waiting[self] = None
            else:
                pool.waiting.pop(self, None)

    def _deliver(self, ts, off, payload, length) -> None:
        if payload:
            self.consumer.data(ts, payload)
        self.state.next = off + len(payload)
        if len(payload) < length:
            # the snap length cut this segment: no copy of the rest can come
            self._gap(length - len(payload))

    def _gap(self, n: int) -> None:
        self.acc.gaps += 1
        self.acc.missing_bytes += n
        self.state.next += n
        self.consumer.gap(n)

    def _drain(self) -> None:
        st = self.state
        heap, pending = st.heap, st.pending
        while heap and heap[0] <= st.next:
            off = heapq.heappop(heap)
            for ts, payload, length in pending.pop(off):
                self._pending(-len(payload))
                if off + length <= st.next:
                    self.acc.bytes["duplicate"] += len(payload)
                    continue
                cut = st.next - off
                if cut > 0:
                    self.acc.bytes["duplicate"] += min(cut, len(payload))
                self._deliver(ts, st.next, payload[cut:], length - cut)

    def force_gap(self, forced: bool = False) -> None:
        """Give up waiting for the hole before the first waiting segment
        (``forced``: because too many bytes wait, counted as ``gaps_forced``)."""
        st = self.state
        if st.heap:
            if forced:
                self.acc.gaps_forced += 1
            self._gap(st.heap[0] - st.next)
            self._drain()

    def acked(self, ack: int) -> None:
        """The other side acknowledged up to ``ack``: bytes before it that were
        not captured will never be (the receiver has them)."""
        st = self.state
        if st.base is None or not st.heap:
            return
        upto = self.offset(ack)
        while st.heap and upto > st.next:
            first = st.heap[0]
            self._gap(min(upto, first) - st.next)
            self._drain()

    def close(self) -> None:
        """End of the stream (end of capture, or the connection's 4-tuple is reused)."""
        st = self.state
        if st.ended:
            return
        while st.heap:
            self.force_gap()
        st.ended = True
        self.consumer.end()
