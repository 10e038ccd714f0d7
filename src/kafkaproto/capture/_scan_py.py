"""The pure-Python twin of kafkaproto.capture._scan: the same names, the same
frames and the same accounting, without a fast path.

The compiled scanner takes the common case (the next in-order segment of a
settled connection) in C and hands every other packet to the Python capture
layer; this one hands it every packet.  Its state classes are the plain
counterparts of the compiled ones, held by tcp.HalfStream and
streams.KafkaHalf as ``state``; only the Python code uses them here.
"""

from __future__ import annotations

import re
import struct

__all__ = ["COMPILED", "CaptureScanner", "HalfState", "KafkaState", "find_frame_start"]

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


class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``).

    ``buf[pos:]`` holds the bytes not framed yet, ``base`` is the stream
    offset of ``buf[0]``, ``ts`` the time of the latest bytes; ``outstanding``
    is the connection's ``{correlation id: (api key, api version, request
    time)}``, shared by its two directions; ``sink`` takes each frame made."""

    __slots__ = ("conn", "outstanding", "sink", "is_request", "synced", "max_frame_size", "buf", "pos", "base", "ts")

    def __init__(self, conn, outstanding: dict, sink, is_request: bool, synced: bool, max_frame_size: int) -> None:
        self.conn = conn
        self.outstanding = outstanding
        self.sink = sink
        self.is_request = bool(is_request)
        self.synced = bool(synced)
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.ts: int | None = None


class CaptureScanner:
    """Feeds packets to the Python capture layer.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file.  The arguments are
    those of the compiled scanner (see capture._scan); this one only needs
    ``packet`` (every packet goes there) and ``out`` (where frames land), and
    has no counts of its own to :meth:`flush`.
    """

    def __init__(self, packet, lookup, acc, out: list, frame_type, request, response, max_outstanding: int,
                 request_type, header_table) -> None:
        self._sink_packet = packet
        self._out = out
        self._fh = None
        self.error: str | None = None
        self.unread_bytes = 0
        self.records = 0

    def flush(self) -> None:
        """Nothing to add: every packet was counted by the Python code."""

    def packet(self, ts: int | None, linktype: int, data: bytes) -> None:
        """One packet (``data``: bytes); frames land in ``out``."""
        self._sink_packet(ts, linktype, data)

    def segments(self, ts, src, dst, sport, dport, seq, ack, flags, length, payload_offsets, payload, slow) -> None:
        """TCP segments decoded elsewhere: every row goes to ``slow(i)`` (Extractor.tcp)."""
        for i in range(len(ts)):
            slow(i)

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
        """Read records until some frames are ready (True) or the file ends (False)."""
        out, sink = self._out, self._sink_packet
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
            if out:
                return True
        return False


# -- resynchronization ------------------------------------------------------
# A request's size prefix is below 0x07000000 (Kafka's limits are far lower)
# and its api key and version are below 256; a response's size prefix too:
# cheap first filters, run by the regular expression engine.
_REQUEST_START = re.compile(rb"[\x00-\x06]...\x00.\x00", re.S)
_RESPONSE_START = re.compile(rb"[\x00-\x06]", re.S)
_req_head = struct.Struct(">ihhih")
_i32 = struct.Struct(">i")
_ZEROS = bytes(4096)


def _zeros_end(buf, p: int) -> int:
    """The first position at or after ``p`` whose byte is not zero (or the end),
    in steps of 4 kB compared at once."""
    n = len(buf)
    while p + 4096 <= n and buf[p:p + 4096] == _ZEROS:
        p += 4096
    chunk = bytes(buf[p:p + 4096])
    return p + len(chunk) - len(chunk.lstrip(b"\0"))


def find_frame_start(buf, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict) -> tuple[int, bool | None]:
    """See the compiled module: the same positions and verdicts."""
    if len(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    n = len(buf)
    p = pos
    pattern = _REQUEST_START if is_request else _RESPONSE_START
    while True:
        m = pattern.search(buf, p)
        if m is None:
            return -1, None
        p = m.start()
        if is_request:
            if n - p < 14:
                return p, None
            size, key, ver, _corr, clen = _req_head.unpack_from(buf, p)
            ok = size >= 10 and (max_frame_size < 0 or size <= max_frame_size) and \
                versions[2 * key] <= ver <= versions[2 * key + 1] and clen >= -1 and 10 + max(clen, 0) <= size
            if ok and clen > 0:
                if n - p < 14 + clen:
                    return p, None
                ok = not any(c < 0x20 or c == 0x7F for c in buf[p + 14:p + 14 + clen])
        else:
            if n - p < 8:
                return p, None
            size, corr = _i32.unpack_from(buf, p)[0], _i32.unpack_from(buf, p + 4)[0]
            ok = size >= 4 and (max_frame_size < 0 or size <= max_frame_size) and corr in outstanding
        if ok:
            return p, True
        # a run of zero bytes cannot hold a size prefix (size 0) until its last 3
        # bytes: skip it whole, up to the positions too near the end to judge
        if buf[p:p + 4] == _ZEROS[:4]:
            p = max(p + 1, min(_zeros_end(buf, p) - 3, n - (13 if is_request else 7)))
        else:
            p += 1
