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
ahead of a hole wait, at most ``max_pending_bytes``; a hole is declared a gap
when that limit is passed, when the other side acknowledges data past it
(the receiver had the bytes, so the capture lost them), or at the end.
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Optional, Tuple

from .._impl import COMPILED as _COMPILED, load as _load

_core = _load("capture._scan") if _COMPILED else None

__all__ = ["HalfStream"]

_MASK = 0xFFFFFFFF
_HALF = 0x80000000


# With the compiled core the state lives in a C struct (HalfStreamCore), which
# the capture fast path reads and advances directly; the methods are these.
class HalfStream(_core.HalfStreamCore if _core is not None else object):
    __slots__ = () if _core is not None else (
        "consumer", "acc", "base", "next", "pending", "heap", "pending_bytes", "max_pending_bytes",
        "from_start", "ended", "fin")

    def __init__(self, consumer, acc, max_pending_bytes: int = 8 << 20) -> None:
        self.consumer = consumer
        self.acc = acc
        self.base: Optional[int] = None  # sequence number of stream offset 0
        self.next = 0  # next expected stream offset
        self.pending: Dict[int, List[Tuple[Optional[int], bytes, int]]] = {}
        self.heap: List[int] = []
        self.pending_bytes = 0
        self.max_pending_bytes = max_pending_bytes
        self.from_start = False  # True when the SYN was seen
        self.ended = False
        self.fin = False

    def offset(self, seq: int) -> int:
        delta = ((seq - self.base - self.next + _HALF) & _MASK) - _HALF
        return self.next + delta

    def syn(self, seq: int) -> None:
        if self.base is None:
            self.base = (seq + 1) & _MASK
            self.from_start = True

    def segment(self, ts: Optional[int], seq: int, payload: bytes, length: int) -> None:
        """One segment's payload (``length`` is its size on the wire, which
        may exceed the captured ``payload``)."""
        if self.ended:
            self.acc.bytes["duplicate"] += len(payload)
            return
        if self.base is None:
            self.base = seq
        off = self.offset(seq)
        if off == self.next and not self.pending:
            self._deliver(ts, off, payload, length)
            return
        if off + length <= self.next:
            self.acc.bytes["duplicate"] += len(payload)
            return
        if off < self.next:
            # a retransmission that overlaps the stream's end: keep the new tail
            cut = self.next - off
            self.acc.bytes["duplicate"] += min(cut, len(payload))
            payload = payload[cut:]
            length -= cut
            off = self.next
        if off not in self.pending:
            heapq.heappush(self.heap, off)
            self.pending[off] = []
        self.pending[off].append((ts, payload, length))
        self.pending_bytes += len(payload)
        self._drain()
        while self.pending_bytes > self.max_pending_bytes and self.heap:
            self.force_gap()

    def _deliver(self, ts, off, payload, length) -> None:
        if payload:
            self.consumer.data(ts, payload)
        self.next = off + len(payload)
        if len(payload) < length:
            # the snap length cut this segment: no copy of the rest can come
            self._gap(length - len(payload))

    def _gap(self, n: int) -> None:
        self.acc.gaps += 1
        self.acc.missing_bytes += n
        self.next += n
        self.consumer.gap(n)

    def _drain(self) -> None:
        heap, pending = self.heap, self.pending
        while heap and heap[0] <= self.next:
            off = heapq.heappop(heap)
            for ts, payload, length in pending.pop(off):
                self.pending_bytes -= len(payload)
                if off + length <= self.next:
                    self.acc.bytes["duplicate"] += len(payload)
                    continue
                cut = self.next - off
                if cut > 0:
                    self.acc.bytes["duplicate"] += min(cut, len(payload))
                self._deliver(ts, self.next, payload[cut:], length - cut)

    def force_gap(self) -> None:
        """Give up waiting for the hole before the first waiting segment."""
        if self.heap:
            self._gap(self.heap[0] - self.next)
            self._drain()

    def acked(self, ack: int) -> None:
        """The other side acknowledged up to ``ack``: bytes before it that were
        not captured will never be (the receiver has them)."""
        if self.base is None or not self.heap:
            return
        upto = self.offset(ack)
        while self.heap and upto > self.next:
            first = self.heap[0]
            self._gap(min(upto, first) - self.next)
            self._drain()

    def close(self) -> None:
        """End of the stream (end of capture, or the connection's 4-tuple is reused)."""
        if self.ended:
            return
        while self.heap:
            self.force_gap()
        self.ended = True
        self.consumer.end()
