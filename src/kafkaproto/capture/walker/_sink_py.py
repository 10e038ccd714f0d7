"""The pure-Python twin of kafkaproto.capture.walker._sink: the frame
sink (a row per frame, the frames' bytes back to back) and the pairing of
responses with requests, with the same names, rows and accounting."""

from __future__ import annotations

import struct

import numpy as np

from ..._codec_py import FRAME_BAD_SIZE, FRAME_COMPLETE, frame_at, uvarint_status
from ..._pairing_py import Pairing as _Pairing

__all__ = ["COMPILED", "FLAGS", "NO_TS", "ROW_DTYPE", "ROW_FIELDS", "STATUS", "FrameSink", "KafkaState", "Pairing"]

COMPILED = False

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


class Pairing(_Pairing):
    """See the compiled module: the requests waiting on one connection
    (kafkaproto._pairing's rule), the connection and its frame count."""

    __slots__ = ("conn", "frames", "_named", "_slot")

    def __init__(self, conn) -> None:
        super().__init__()
        self.conn = conn
        self.frames = 0
        self._named = 0
        self._slot = -1


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
                 "_client_index", "unanswered", "_rows", "_data", "_n", "_kafka", "_evicted", "_batch")

    def __init__(self, acc, request_headers, response_headers, max_outstanding: int, batch_rows: int = 65536,
                 batch_bytes: int = 32 << 20) -> None:
        self.hq, self.hr = request_headers, response_headers
        self.acc = acc
        self.max_outstanding = max_outstanding
        self.batch_rows, self.batch_bytes = batch_rows, batch_bytes
        self.conns: list = []
        self._batch = 1
        self.clients: list[str] = []
        self._client_index: dict[bytes, int] = {}
        self.unanswered: list = []
        self._rows: list = []
        self._data = bytearray()
        self._n = {"framed": [0, 0], "unpaired": [0, 0]}
        self._kafka = 0
        self._evicted = 0

    def connection(self, conn) -> Pairing:
        return Pairing(conn)

    def client_of(self, text: str) -> int:
        raw = text.encode("utf-8", "surrogatepass")
        ix = self._client_index.get(raw)
        if ix is None:
            ix = self._client_index[raw] = len(self.clients)
            self.clients.append(text)
        return ix

    def close(self, p: Pairing) -> None:
        waiting = p.take_waiting()
        if waiting:
            self.acc.unanswered_requests += len(waiting)
            for corr, key, version, ts, seq, client in waiting:
                self.unanswered.append((p.conn, corr, key, version, ts, seq, client))

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

    def add_rows(self, states, state, ts, offset, request_ts, starts, ends, data, first: int = 0) -> int:
        """See the compiled module: frames given as columns, until the sink is full."""
        mv = memoryview(data).cast("B")
        size = len(mv)
        n = len(state)
        i = first
        while i < n and not self.full():
            s, a, b = int(state[i]), int(starts[i]), int(ends[i])
            if s < 0 or s >= len(states) or a < 0 or b < a or b > size:
                raise ValueError(f"row {i}: no frame at {a}:{b} of {size} bytes, direction {s}")
            rts = int(request_ts[i])
            self._emit(states[s], mv[a:b], int(offset[i]), int(ts[i]), None if rts == NO_TS else rts)
            i += 1
        return i

    def emit(self, kh, frame, offset: int, request_ts: int | None = None) -> None:
        self._emit(kh, frame, offset, NO_TS if kh.ts is None else kh.ts, request_ts)

    def _emit(self, kh, frame, offset: int, ts: int, request_ts: int | None) -> None:
        request_ts_given = request_ts
        f = bytes(frame)
        n = len(f)
        pr = kh.pairing
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
        if pr._named != self._batch:
            pr._named, pr._slot = self._batch, len(self.conns)
            self.conns.append(pr.conn)
        self._rows.append((ts, offset, seq, request_seq, request_ts, len(self._data), pr._slot, corr, client,
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
        data, conns = self._data, self.conns
        self._rows, self._data, self.conns = [], bytearray(), []
        self._batch += 1
        return rows, data, conns


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
