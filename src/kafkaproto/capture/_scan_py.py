"""The pure-Python twin of kafkaproto.capture._scan: the same names, the same
frame rows and the same accounting, without a fast path.

The compiled scanner takes the common case (the next in-order segment of a
settled connection) in C and hands every other packet to the Python capture
layer; this one hands it every packet.  Its state classes are the plain
counterparts of the compiled ones, held by tcp.HalfStream and
streams.KafkaHalf as ``state``; its FrameSink gathers the same rows.
"""

from __future__ import annotations

import re
import struct
from collections import deque

import numpy as np

from .._codec_py import FRAME_BAD_SIZE, FRAME_COMPLETE, frame_at, uvarint_status

__all__ = ["COMPILED", "FLAGS", "NO_TS", "OFFSET_BITS", "POS_DTYPE", "POS_FIELDS", "ROW_DTYPE", "ROW_FIELDS", "STATUS",
           "BodyCheck", "CaptureScanner", "FrameSink", "HalfState", "KafkaState", "Pairing", "connection_key",
           "find_frame_start", "index_pcap", "pcap_boundary"]

COMPILED = False

_MAX_RECORD = 256 * 1024 * 1024  # larger captured lengths mean a damaged file
_READ_STEP = 1 << 20

FL_HEADER, FL_RESYNC, FL_REUSED, FL_EVICTED = 1, 2, 4, 8
FLAGS = {"header": FL_HEADER, "resync": FL_RESYNC, "reused_correlation_id": FL_REUSED,
         "evicted_oldest": FL_EVICTED}
ST_FRAMED, ST_UNPAIRED = 0, 1
STATUS = ("framed", "unpaired")
ROW_FIELDS = (("ts", "<i8"), ("offset", "<i8"), ("seq", "<i8"), ("request_seq", "<i8"), ("request_ts", "<i8"),
              ("end", "<i8"), ("conn", "<i4"), ("correlation_id", "<i4"), ("client", "<i4"),
              ("header_size", "<i4"), ("api_key", "<i2"), ("api_version", "<i2"), ("direction", "u1"),
              ("status", "u1"), ("flags", "u1"), ("pad", "u1"))
ROW_DTYPE = np.dtype(list(ROW_FIELDS))
NO_TS = -(1 << 63)

_h16 = struct.Struct(">h")
_h32 = struct.Struct(">i")


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


class Pairing:
    """See the compiled module: the requests waiting on one connection, paired
    in order per correlation id, and its frame count."""

    __slots__ = ("conn", "index", "frames", "waiting", "pending")

    def __init__(self, conn, index: int) -> None:
        self.conn = conn
        self.index = index
        self.frames = 0
        self.waiting = 0
        #: correlation id -> its waiting requests, oldest first: (ts, seq, client, corr, key, version)
        self.pending: dict[int, deque] = {}

    def push(self, req: tuple) -> bool:
        self.waiting += 1
        got = self.pending.get(req[3])
        if got is None:
            self.pending[req[3]] = deque((req,))
            return False
        got.append(req)
        return True

    def pop(self, corr: int):
        got = self.pending.get(corr)
        if got is None:
            return None
        req = got.popleft()
        if not got:
            del self.pending[corr]
        self.waiting -= 1
        return req

    def drop_oldest(self) -> None:
        for corr in self.pending:
            self.pop(corr)
            return

    def request_of(self, corr: int):
        got = self.pending.get(corr)
        return None if got is None else (got[0][4], got[0][5])

    def take_waiting(self) -> list:
        out = [(corr, key, version, None if ts == NO_TS else ts, seq, client)
               for reqs in self.pending.values() for ts, seq, client, corr, key, version in reqs]
        self.pending.clear()
        self.waiting = 0
        return out


def _skip_tags(f, pos: int, n: int) -> int:
    """The end of the tagged section at ``pos`` (cur_skip_tags), or -1."""
    st, count, pos2 = uvarint_status(f, pos, n, 5, 32)
    if st or count > n - pos2:
        return -1
    pos = pos2
    for _ in range(count):
        st, _tag, pos = uvarint_status(f, pos, n, 5, 32)
        if st:
            return -1
        st, size, pos = uvarint_status(f, pos, n, 5, 32)
        if st or size > n - pos:
            return -1
        pos += size
    return pos


class FrameSink:
    """See the compiled module: a row per frame (:data:`ROW_DTYPE`) and the
    frames' bytes back to back."""

    __slots__ = ("hq", "hr", "acc", "max_outstanding", "batch_rows", "batch_bytes", "conns", "clients",
                 "_client_index", "unanswered", "_rows", "_data", "_n", "_kafka", "_evicted")

    def __init__(self, acc, request_headers, response_headers, max_outstanding: int, batch_rows: int = 65536,
                 batch_bytes: int = 32 << 20) -> None:
        self.hq, self.hr = request_headers, response_headers
        self.acc = acc
        self.max_outstanding = max_outstanding
        self.batch_rows, self.batch_bytes = batch_rows, batch_bytes
        self.conns: list = []
        self.clients: list[str] = []
        self._client_index: dict[bytes, int] = {}
        self.unanswered: list = []
        self._rows: list = []
        self._data = bytearray()
        self._n = {"framed": [0, 0], "unpaired": [0, 0]}
        self._kafka = 0
        self._evicted = 0

    def connection(self, conn) -> Pairing:
        p = Pairing(conn, len(self.conns))
        self.conns.append(conn)
        return p

    def close(self, p: Pairing) -> None:
        waiting = p.take_waiting()
        if waiting:
            self.acc.unanswered_requests += len(waiting)
            for corr, key, version, ts, seq, client in waiting:
                self.unanswered.append((p.index, corr, key, version, ts, seq, client))

    @property
    def size(self) -> int:
        return len(self._rows)

    @property
    def nbytes(self) -> int:
        return len(self._data)

    def full(self) -> bool:
        return len(self._rows) >= self.batch_rows or len(self._data) >= self.batch_bytes

    def _client(self, kh, raw: bytes) -> int:
        if kh._client_raw == raw:
            return kh._client
        ix = self._client_index.get(raw)
        if ix is None:
            ix = self._client_index[raw] = len(self.clients)
            self.clients.append(raw.decode("utf-8"))
        kh._client_raw, kh._client = raw, ix
        return ix

    def _request_head(self, kh, f, n: int, hv: int) -> tuple[int, int]:
        """(client index, header size) by the header rule (cur_request_head)."""
        pos = 8
        client = -1
        if hv >= 1:
            if n - pos < 2:
                return -1, -1
            ln = _h16.unpack_from(f, pos)[0]
            pos += 2
            if ln < -1:
                return -1, -1
            if ln >= 0:
                if n - pos < ln:
                    return -1, -1
                raw = bytes(f[pos:pos + ln])
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return -1, -1
                client = self._client(kh, raw)
                pos += ln
        if hv >= 2:
            pos = _skip_tags(f, pos, n)
        return client, pos

    def emit(self, kh, frame, offset: int, request_ts: int | None = None) -> None:
        request_ts_given = request_ts
        f = bytes(frame)
        n = len(f)
        pr = kh.pairing
        ts = NO_TS if kh.ts is None else kh.ts
        if pr.frames == 0:
            self._kafka += 1
        seq = pr.frames
        pr.frames += 1
        flags = kh.flags
        kh.flags = 0
        request_seq, request_ts, corr, client, header_size, key, version = -1, NO_TS, 0, -1, -1, 0, 0
        status = ST_FRAMED
        if kh.is_request:
            direction = 0
            if n >= 8:
                flags |= FL_HEADER
                key, version, corr = _h16.unpack_from(f, 0)[0], _h16.unpack_from(f, 2)[0], _h32.unpack_from(f, 4)[0]
                hv = -1
                if 0 <= key < self.hq.shape[0] and 0 <= version < 64:
                    hv = int(self.hq[key, version])
                if hv >= 0:
                    client, header_size = self._request_head(kh, f, n, hv)
                if pr.push((ts, seq, client, corr, key, version)):
                    flags |= FL_REUSED
                if pr.waiting > self.max_outstanding:
                    pr.drop_oldest()
                    flags |= FL_EVICTED
                    self._evicted += 1
            self._n["framed"][0] += 1
            self._n["framed"][1] += n + 4
        else:
            direction = 1
            corr = _h32.unpack_from(f, 0)[0]
            req = pr.pop(corr)
            if req is not None:
                flags |= FL_HEADER
                request_ts, request_seq, client, _corr, key, version = req
                if request_ts_given is not None:
                    request_ts = request_ts_given
                hv = -1
                if 0 <= key < self.hr.shape[0] and 0 <= version < 64:
                    hv = int(self.hr[key, version])
                if hv == 0:
                    header_size = 4
                elif hv == 1:
                    header_size = _skip_tags(f, 4, n)
                self._n["framed"][0] += 1
                self._n["framed"][1] += n + 4
            else:
                status = ST_UNPAIRED
                self._n["unpaired"][0] += 1
                self._n["unpaired"][1] += n + 4
        self._data += f
        self._rows.append((ts, offset, seq, request_seq, request_ts, len(self._data), pr.index, corr, client,
                           header_size, key, version, direction, status, flags, 0))

    def flush(self) -> None:
        acc = self.acc
        for reason, (frames, nbytes) in self._n.items():
            if frames:
                acc.frames[reason] += frames
                acc.bytes[reason] += nbytes
        self._n = {"framed": [0, 0], "unpaired": [0, 0]}
        if self._kafka:
            acc.kafka_connections += self._kafka
            self._kafka = 0
        if self._evicted:
            acc.unanswered_requests += self._evicted
            self._evicted = 0

    def take(self):
        self.flush()
        rows = np.array(self._rows, dtype=ROW_DTYPE) if self._rows else np.zeros(0, dtype=ROW_DTYPE)
        data = self._data
        self._rows, self._data = [], bytearray()
        return rows, data


class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``); see the compiled module."""

    __slots__ = ("conn", "pairing", "sink", "is_request", "synced", "max_frame_size", "buf", "pos", "base", "ts",
                 "flags", "_client_raw", "_client")

    def __init__(self, conn, pairing: Pairing, sink: FrameSink, is_request: bool, synced: bool,
                 max_frame_size: int) -> None:
        self.conn = conn
        self.pairing = pairing
        self.sink = sink
        self.is_request = bool(is_request)
        self.synced = bool(synced)
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.ts: int | None = None
        self.flags = 0
        self._client_raw: bytes | None = None
        self._client = -1

    def drain(self) -> int:
        """See the compiled module: 1 when a bad size prefix stopped it at ``pos``, else 0."""
        buf = self.buf
        minimum = 8 if self.is_request else 4
        end = len(buf)
        while True:
            st, size = frame_at(buf, self.pos, end, self.max_frame_size, minimum)
            if st == FRAME_BAD_SIZE:
                return 1
            if st != FRAME_COMPLETE:
                return 0
            self.sink.emit(self, memoryview(buf)[self.pos + 4:self.pos + 4 + size], self.base + self.pos)
            self.pos += 4 + size

    def compact(self) -> None:
        if self.pos > 65536 or self.pos == len(self.buf):
            del self.buf[:self.pos]
            self.base += self.pos
            self.pos = 0


class CaptureScanner:
    """Feeds packets to the Python capture layer.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file.  The arguments are
    those of the compiled scanner (see capture._scan); this one only needs
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


# -- the byte-range index ---------------------------------------------------

POS_FIELDS = (("order", "<i8"), ("ts", "<i8"), ("key", "<i8"), ("seq", "<i8"), ("ack", "<i8"), ("length", "<i8"),
              ("at", "<i8"), ("caplen", "<i4"), ("sport", "<u2"), ("dport", "<u2"), ("flags", "<i2"),
              ("family", "u1"), ("pad", "u1"), ("src", "V16"), ("dst", "V16"), ("pad2", "V4"))
POS_DTYPE = np.dtype(list(POS_FIELDS))
OFFSET_BITS = 40
_FNV, _PRIME, _M64 = 14695981039346656037, 1099511628211, (1 << 64) - 1


def connection_key(family: int, a: bytes, ap: int, b: bytes, bp: int) -> int:
    """See the compiled module: FNV-1a over the family and both endpoints, lower first."""
    n = 4 if family == 4 else 16
    a, b = bytes(a[:n]), bytes(b[:n])
    lo, lp, hi, hp = (a, ap, b, bp) if (a, ap) <= (b, bp) else (b, bp, a, ap)
    h = _FNV
    for x in (family, *lo, lp >> 8, lp & 0xFF, *hi, hp >> 8, hp & 0xFF):
        h = ((h ^ x) * _PRIME) & _M64
    h = (h >> 1) | 1
    return h - (1 << 64) if h >= 1 << 63 else h


def index_pcap(buf, start: int, end: int, big_endian: bool, ticks: int, linktype: int, rank: int):
    """See the compiled module; here every record goes to ``others`` (the Python code decodes it)."""
    rec = struct.Struct((">" if big_endian else "<") + "IIII")
    scale = 1_000_000_000 // ticks
    n = len(buf)
    p = start
    others = []
    records = 0
    error = None
    while p < end:
        if n - p < 16:
            if n - p:
                error = f"record header cut short at byte {p}"
            break
        sec, frac, incl, _orig = rec.unpack_from(buf, p)
        if incl > _MAX_RECORD:
            error = f"record at byte {p}: implausible captured length {incl}"
            break
        if n - p - 16 < incl:
            error = f"record at byte {p} cut short: {n - p - 16} of {incl} bytes"
            break
        records += 1
        others.append((p, sec * 1_000_000_000 + frac * scale, p + 16, incl))
        p += 16 + incl
    return np.zeros(0, dtype=POS_DTYPE), others, {}, p, records, error


def pcap_boundary(buf, start: int, end: int, big_endian: bool, ticks: int, max_incl: int, ref_sec: int,
                  confirm: int) -> int:
    """See the compiled module."""
    rec = struct.Struct((">" if big_endian else "<") + "IIII")
    n = len(buf)

    def plausible(q: int, near: int):
        if q > n - 16:
            return None
        sec, frac, incl, orig = rec.unpack_from(buf, q)
        if incl > max_incl or orig < incl or orig > _MAX_RECORD or frac >= ticks:
            return None
        if near >= 0 and abs(sec - near) > 86400:
            return None
        return sec, q + 16 + incl

    for p in range(start, min(end, n)):
        got = plausible(p, ref_sec)
        if got is None:
            continue
        sec, q = got
        ok = True
        for _ in range(confirm):
            if q >= n:
                break  # the file ends exactly after a record, or inside the last one: confirmed
            got = plausible(q, sec)
            if got is None:
                ok = False
                break
            sec, q = got
        if ok:
            return p
    return -1


# -- judging a candidate frame ----------------------------------------------


def _plausible(buf, p: int, n: int, is_request: bool, max_frame_size: int, versions: bytes, outstanding) -> int:
    """See the compiled module: 1, 0, or -1 (too few bytes to say)."""
    if is_request:
        if n - p < 8:
            return -1
        if buf[p] > 6 or buf[p + 4] != 0 or buf[p + 6] != 0:
            return 0
        if n - p < 14:
            return -1
        size, key, ver, _corr, clen = _req_head.unpack_from(buf, p)
        if size < 10 or (max_frame_size >= 0 and size > max_frame_size) or \
                not versions[2 * key] <= ver <= versions[2 * key + 1] or clen < -1 or 10 + max(clen, 0) > size:
            return 0
        if clen > 0:
            if n - p < 14 + clen:
                return -1
            if any(c < 0x20 or c == 0x7F for c in buf[p + 14:p + 14 + clen]):
                return 0
        return 1
    if n - p < 1:
        return -1
    if buf[p] > 6:
        return 0
    if n - p < 8:
        return -1
    size = _i32.unpack_from(buf, p)[0]
    if size < 4 or (max_frame_size >= 0 and size > max_frame_size):
        return 0
    return 1 if _i32.unpack_from(buf, p + 4)[0] in outstanding else 0


class BodyCheck:
    """See the compiled module: a candidate frame judged by decoding it (whole
    up to ``limit`` bytes, else its first ``limit`` bytes and the next header)."""

    __slots__ = ("plan_of", "hq", "hr", "limit")

    def __init__(self, plan_of, request_headers, response_headers, limit: int = 512) -> None:
        self.plan_of = plan_of
        self.hq, self.hr = request_headers, response_headers
        self.limit = limit

    def judge(self, buf, p: int, n: int, is_request: bool, pairing, max_frame_size: int, versions: bytes,
              outstanding) -> int:
        from ..errors import InvalidValueError, KafkaProtocolError, TruncatedError
        from ..protocol import decode_request, decode_response

        size = _i32.unpack_from(buf, p)[0]
        end = p + 4 + size
        if n < end:
            return -1
        if size > self.limit and n > end:
            r = _plausible(buf, end, n, is_request, max_frame_size, versions, outstanding)
            if r != 1:
                return r
        stop = end if size <= self.limit else p + 4 + self.limit
        view = memoryview(buf)[p + 4:stop]
        if is_request:
            key, version = _h16.unpack_from(buf, p + 4)[0], _h16.unpack_from(buf, p + 6)[0]
            if not (0 <= key < self.hq.shape[0] and 0 <= version < 64) or self.hq[key, version] < 0:
                return 0
        else:
            got = None if pairing is None else pairing.request_of(_i32.unpack_from(buf, p + 4)[0])
            if got is None:
                return 0
            key, version = got
            if not (0 <= key < self.hr.shape[0] and 0 <= version < 64) or self.hr[key, version] < 0:
                return 0
        if self.plan_of(is_request, key, version) is None:
            return 0
        try:
            if is_request:
                decode_request(view)
            else:
                decode_response(view, key, version)
        except (TruncatedError, InvalidValueError) as exc:
            # only the end of the look cut it: what it needed lies inside the frame
            m = _NEED.match(exc.detail) or _COUNT.match(exc.detail)
            return 1 if stop < end and m and int(m.group(1)) - int(m.group(2)) <= end - stop else 0
        except KafkaProtocolError:
            return 0
        return 1


_NEED = re.compile(r"need (\d+) bytes, (\d+) left$")
_COUNT = re.compile(r"count (\d+) larger than the (\d+) bytes left$")


# -- resynchronization ------------------------------------------------------
_req_head = struct.Struct(">ihhih")
_i32 = struct.Struct(">i")


def find_frame_start(buf, pos: int, is_request: bool, max_frame_size: int, versions: bytes,
                     outstanding: dict, check: BodyCheck | None = None, pairing=None) -> tuple[int, bool | None]:
    """See the compiled module: the same positions and verdicts."""
    if len(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    n = len(buf)
    p = pos
    if n == 0 or p >= n:
        return -1, None
    pattern = _REQUEST_START if is_request else _RESPONSE_START
    while p < n:
        m = pattern.search(buf, p)
        if m is None:
            return -1, None
        p = m.start()
        r = _plausible(buf, p, n, is_request, max_frame_size, versions, outstanding)
        if r < 0:
            return p, None
        if r == 1 and check is not None:
            r = check.judge(buf, p, n, is_request, pairing, max_frame_size, versions, outstanding)
            if r < 0:
                return p, None
        if r == 1:
            return p, True
        if buf[p:p + 4] == _ZEROS[:4]:
            p = max(p + 1, _zeros_end(buf, p) - 3)
            continue
        p += 1
    return -1, None


# A request's size prefix is below 0x07000000 (Kafka's limits are far lower)
# and its api key and version are below 256; a response's size prefix too:
# cheap first filters, run by the regular expression engine.
_REQUEST_START = re.compile(rb"[\x00-\x06]...\x00.\x00", re.S)
_RESPONSE_START = re.compile(rb"[\x00-\x06]", re.S)
_ZEROS = bytes(4096)


def _zeros_end(buf, p: int) -> int:
    """The first position at or after ``p`` whose byte is not zero (or the end),
    in steps of 4 kB compared at once."""
    n = len(buf)
    while p + 4096 <= n and buf[p:p + 4096] == _ZEROS:
        p += 4096
    chunk = bytes(buf[p:p + 4096])
    return p + len(chunk) - len(chunk.lstrip(b"\0"))
