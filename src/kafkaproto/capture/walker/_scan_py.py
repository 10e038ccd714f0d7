"""The pure-Python twin of kafkaproto.capture.walker._scan: the capture
walker, packets in, frames out into the sink -- the same rule as the
compiled module (whose text says it in full), over the framing twin
(_framing_py, itself over the reassembly twin _tcp_py): single packets, the
records of a classic pcap file, segments as columns, a raw stream of
requests, a whole state saved and loaded.
"""

from __future__ import annotations

import struct

from . import _resume_py as _resume
from . import snapshot
from ._framing_py import DETECT_BYTES, KAFKA, TO_KAFKA, Framer, _Half
from ._tcp_py import MAX_OPEN_CONNECTIONS, MAX_PENDING_BYTES, MAX_PENDING_TOTAL, Conn, Tcp
from .packets import parse_tcp

__all__ = ["COMPILED", "DETECT_BYTES", "Walker"]

COMPILED = False


class Walker(Framer):
    """See the compiled module: packets in, frames out into ``sink``."""

    def __init__(self, acc, sink, connection_factory, check, versions: bytes, ports=None, *,
                 max_frame_size: int = 104857600, max_open_connections: int = MAX_OPEN_CONNECTIONS,
                 max_pending_bytes: int = MAX_PENDING_BYTES, max_pending_total: int = MAX_PENDING_TOTAL) -> None:
        super().__init__(acc, sink, connection_factory, check, versions, ports, max_frame_size=max_frame_size,
                         max_open_connections=max_open_connections, max_pending_bytes=max_pending_bytes,
                         max_pending_total=max_pending_total)
        self._raw: Conn | None = None
        self._w.update(packets=0, tcp=0, payload=0)
        self._reasons: dict[str, int] = {}
        self._records = None
        self.error: str | None = None
        self.unread_bytes = 0
        self.records = 0

    # -- accounting --------------------------------------------------------
    def flush(self) -> None:
        acc, w = self.acc, self._w
        self.flush_counts()
        if w["packets"]:
            acc.packets_total += w["packets"]
            acc.payload_bytes_total += w["payload"]
            if w["tcp"]:
                acc.packets["tcp"] += w["tcp"]
            for reason, n in self._reasons.items():
                acc.packets[reason] += n
            self._reasons = {}
            w["packets"] = w["tcp"] = w["payload"] = 0
        self.sink.flush()

    # -- packets -----------------------------------------------------------
    def packet(self, ts, linktype: int, data) -> None:
        w = self._w
        w["packets"] += 1
        got = parse_tcp(linktype, data)
        if isinstance(got, str):
            self._reasons[got] = self._reasons.get(got, 0) + 1
            return
        family, src_at, dst_at, sport, dport, seq, ack, flags, start, length = got
        alen = 4 if family == 4 else 16
        payload = data[start:start + length]
        w["tcp"] += 1
        w["payload"] += len(payload)
        self.segment(ts, family, bytes(data[src_at:src_at + alen]), sport, bytes(data[dst_at:dst_at + alen]),
                     dport, seq, ack, flags, payload, length)

    def segments(self, ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, payload,
                 keys=None, stop_bytes: int = -1) -> int:
        """See the compiled module."""
        n = len(ts)
        if any(len(col) != n for col in (family, src, dst, sport, dport, seq, ack, flags, length, at, caplen)) or \
                (n and (len(src[0]) != 16 or len(dst[0]) != 16)) or (keys is not None and len(keys) != n):
            raise ValueError("segment columns of different lengths, or addresses not of 16 bytes")
        cols = (ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, payload)
        if keys is None:
            self._segments(*cols, 0, n)
            self.flush()
            return n
        a = fed = 0
        while a < n:
            b = a + 1
            while b < n and keys[b] == keys[a]:
                b += 1
            if a:  # a new connection: the previous one had its last segment
                Tcp.close_all(self)
                if self.sink.full() or 0 <= stop_bytes < fed:
                    self.flush()
                    return a
            self._segments(*cols, a, b)
            fed += sum(int(c) for c in caplen[a:b])
            a = b
        self.flush()
        return n

    def _segments(self, ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, payload,
                  lo: int, hi: int) -> None:
        w = self._w
        size = len(payload)
        no_ts = -(1 << 63)
        for i in range(lo, hi):
            w["packets"] += 1
            fam, a, c = int(family[i]), int(at[i]), int(caplen[i])
            if fam not in (4, 6) or a < 0 or c < 0 or a + c > size or c > int(length[i]):
                self._reasons["malformed"] = self._reasons.get("malformed", 0) + 1
                continue
            w["tcp"] += 1
            w["payload"] += c
            alen = 4 if fam == 4 else 16
            t = int(ts[i])
            self.segment(None if t == no_ts else t, fam, bytes(src[i][:alen]), int(sport[i]) & 0xFFFF,
                         bytes(dst[i][:alen]), int(dport[i]) & 0xFFFF, int(seq[i]) & 0xFFFFFFFF,
                         int(ack[i]) & 0xFFFFFFFF, int(flags[i]) & 0xFF, bytes(payload[a:a + c]), int(length[i]))
    # -- its whole state (walker/snapshot.py, the _resume unit) -------------
    def pairings(self) -> list:
        """See the compiled module."""
        return [c.pairing for c in self._open.values() if c.pairing is not None]

    def save(self) -> bytes:
        """See the compiled module."""
        if self._raw is not None:
            raise ValueError("the state of a raw stream is not saved")
        self.flush()
        return snapshot.dump(self.limits(), _resume.save_tcp(self, self.sink.clients))

    def load(self, data) -> None:
        """See the compiled module."""
        if self._open or self._closed or self._raw is not None:
            raise ValueError("a walker loads a state before it takes its first packet")
        st = snapshot.load(data, self.limits())
        self._held = _resume.load_tcp(self, st, self.sink, self._factory, self.max_frame_size)

    # -- a raw stream of requests ------------------------------------------
    def stream(self, conn, data) -> None:
        """See the compiled module."""
        c = self._raw
        if data is None:
            if c is not None:
                self._drop_rest(c.h[0])
                c.pairing.take_waiting()
                self._raw = None
            return
        if c is None:
            c = self._raw = Conn((4, b"", 0, b"", 0), 0, None)
            c.h = [_Half(), _Half()]
            c.state = KAFKA
            c.conn, c.pairing = conn, self.sink.connection(conn)
            h = c.h[0]
            h.kh = self._state(conn, c.pairing, self.sink, True, True, self.max_frame_size)
            h.target, h.synced, h.unsure = TO_KAFKA, True, True
        if len(data):
            self._kafka_data(c.h[0], None, data)

    # -- classic pcap files ------------------------------------------------
    def read_pcap(self, fh, big_endian: bool, ticks: int, linktype: int) -> None:
        """See the compiled module."""
        self._records = self._pcap(fh, _rec[big_endian], 1_000_000_000 // ticks, linktype)

    def _pcap(self, fh, rec, scale: int, linktype: int):
        while True:
            rh = _read(fh, 16)
            if not rh:
                return
            if len(rh) < 16:
                self._stop(fh, f"record header cut short after {self.records} records", len(rh))
                return
            sec, frac, incl, _orig = rec.unpack(rh)
            if incl > _MAX_RECORD:
                self._stop(fh, f"record {self.records + 1}: implausible captured length {incl}", 16)
                return
            data = _read(fh, incl)
            if len(data) < incl:
                self._stop(fh, f"record {self.records + 1} cut short: {len(data)} of {incl} bytes", 16 + len(data))
                return
            self.records += 1
            yield sec * 1_000_000_000 + frac * scale, linktype, data

    def _stop(self, fh, why: str, partial: int) -> None:
        self.error = why
        rest = 0
        while chunk := fh.read(1 << 20):
            rest += len(chunk)
        self.unread_bytes = partial + rest

    def run(self) -> bool:
        """Read records until the sink is full (True) or the file ends (False)."""
        if self._records is None:
            return False
        for ts, linktype, data in self._records:
            self.packet(ts, linktype, data)
            if self.sink.full():
                self.flush()
                return True
        self._records = None
        self.flush()
        return False

    def finish(self) -> None:
        self.close_every()
        self.flush()

    def close_all(self) -> None:
        super().close_all()
        self.flush()


_rec = {True: struct.Struct(">IIII"), False: struct.Struct("<IIII")}
_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file
_READ_STEP = 1 << 20


def _read(fh, n: int) -> bytes:
    if n <= _READ_STEP:
        return fh.read(n)
    # A length the file claims is read in steps: a record that claims more
    # than the file holds costs what the file holds (read(n) would
    # allocate all n bytes first).
    parts = []
    while n > 0:
        chunk = fh.read(min(n, _READ_STEP))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)
