"""The pure-Python twin of kafkaproto.capture.walker._scan: the same names
and the same accounting, without a fast path.

The compiled scanner takes the common case (the next in-order segment of a
settled connection) in C and hands every other packet to the Python capture
layer; this one hands it every packet.  Its state class is the plain
counterpart of the compiled one, held by tcp.HalfStream as ``state``.
"""

from __future__ import annotations

import struct

from ._sink_py import FrameSink

__all__ = ["COMPILED", "CaptureScanner", "HalfState"]

COMPILED = False

_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file
_READ_STEP = 1 << 20


class HalfState:
    """Reassembly state of one TCP direction (held by tcp.HalfStream as ``state``).

    ``base``: sequence number of stream offset 0 (None until known); ``next``:
    the next expected stream offset; ``pending``/``heap``: segments waiting
    behind a hole, by offset; ``ended``: the stream is over."""

    __slots__ = ("base", "next", "pending", "heap", "ended")

    def __init__(self) -> None:
        self.base: int | None = None
        self.next = 0
        self.pending: dict = {}
        self.heap: list = []
        self.ended = False


class CaptureScanner:
    """Feeds packets to the Python capture layer.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file.  The arguments are
    those of the compiled scanner (see capture.walker._scan); this one only needs
    ``packet`` (every packet goes there) and ``sink`` (where frames land),
    and has no counts of its own to :meth:`flush`.
    """

    def __init__(self, packet, lookup, acc, sink: FrameSink) -> None:
        self._sink_packet = packet
        self._sink = sink
        self._fh = None
        self.error: str | None = None
        self.unread_bytes = 0
        self.records = 0

    def flush(self) -> None:
        """Only the sink's counts: every packet was counted by the Python code."""
        self._sink.flush()

    def packet(self, ts: int | None, linktype: int, data: bytes) -> None:
        """One packet (``data``: bytes); frames land in ``out``."""
        self._sink_packet(ts, linktype, data)

    def segments(self, ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, payload,
                 slow) -> None:
        """TCP segments decoded elsewhere: every row goes to ``slow(i)`` (Extractor.tcp)."""
        for i in range(len(ts)):
            slow(i)
        self.flush()

    # -- classic pcap files ------------------------------------------------
    def read_pcap(self, fh, big_endian: bool, ticks: int, linktype: int) -> None:
        """Read the records of a pcap file whose 24-byte header ``fh`` is past."""
        self._fh = fh
        self._rec = struct.Struct((">" if big_endian else "<") + "IIII")
        self._scale = 1_000_000_000 // ticks
        self._linktype = linktype

    def _read(self, n: int) -> bytes:
        if n <= _READ_STEP:
            return self._fh.read(n)
        # A length the file claims is read in steps: a record that claims more
        # than the file holds costs what the file holds (read(n) would
        # allocate all n bytes first).
        parts = []
        while n > 0:
            chunk = self._fh.read(min(n, _READ_STEP))
            if not chunk:
                break
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def _stop(self, why: str, partial: int) -> None:
        self.error = why
        rest = 0
        while chunk := self._fh.read(1 << 20):
            rest += len(chunk)
        self.unread_bytes = partial + rest
        self._fh = None

    def run(self) -> bool:
        """Read records until the sink is full (True) or the file ends (False)."""
        out, sink = self._sink, self._sink_packet
        while self._fh is not None:
            rh = self._read(16)
            if not rh:
                self._fh = None
                break
            if len(rh) < 16:
                self._stop(f"record header cut short after {self.records} records", len(rh))
                break
            sec, frac, incl, _orig = self._rec.unpack(rh)
            if incl > _MAX_RECORD:
                self._stop(f"record {self.records + 1}: implausible captured length {incl}", 16)
                break
            data = self._read(incl)
            if len(data) < incl:
                self._stop(f"record {self.records + 1} cut short: {len(data)} of {incl} bytes", 16 + len(data))
                break
            self.records += 1
            sink(sec * 1_000_000_000 + frac * self._scale, self._linktype, data)
            if out.full():
                self.flush()
                return True
        self.flush()
        return False
