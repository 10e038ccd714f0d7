# cython: language_level=3
# The walker's sink: where every frame lands, as a fixed-size row and its
# bytes, and the pairing of each response with its request (Pairing, one per
# connection).  One rule for every frame, whichever reader made it: the
# compiled scanner (_scan), the pure-Python capture layer, the tap's tables
# and raw request streams all hand their frames to FrameSink.add/emit.
#
# Rows and their bytes become an Arrow record batch in the capture layer
# above (kafkaproto.capture.frames) without a Python object per frame.  This
# module imports nothing from that layer: the connection objects, the
# accounting object and the header-version tables are handed to it.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, INT64_MIN
from libc.string cimport memcmp, memcpy

from kafkaproto._pairing cimport Pairing as _Pairing, Pend
from kafkaproto.arrow._columns cimport cmem, mem_put, mem_resize
from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, Cur, RequestHead, cur_init, cur_skip_tags, cur_request_head, _frame_at, FRAME_COMPLETE,
    FRAME_BAD_SIZE,
)

import numpy as np

COMPILED = True

FLAGS = {"header": FL_HEADER, "resync": FL_RESYNC, "reused_correlation_id": FL_REUSED,
         "evicted_oldest": FL_EVICTED}
STATUS = ("framed", "unpaired")

#: the fields of a row, in order, as (name, numpy type): FrameSink.take's array has this dtype
ROW_FIELDS = (("ts", "<i8"), ("offset", "<i8"), ("seq", "<i8"), ("request_seq", "<i8"), ("request_ts", "<i8"),
              ("end", "<i8"), ("conn", "<i4"), ("correlation_id", "<i4"), ("client", "<i4"),
              ("header_size", "<i4"), ("api_key", "<i2"), ("api_version", "<i2"), ("direction", "u1"),
              ("status", "u1"), ("flags", "u1"), ("pad", "u1"))
ROW_DTYPE = np.dtype(list(ROW_FIELDS))
assert ROW_DTYPE.itemsize == sizeof(Row)
NO_TS = INT64_MIN


# ---------------------------------------------------------------------------
# Pairing: the requests waiting on one connection (kafkaproto._pairing's rule), and its frames

cdef class Pairing(_Pairing):
    """The requests waiting for their responses on one connection (the pairing
    rule of :mod:`kafkaproto._pairing`), the connection (``conn``) and its
    frame count (``frames``)."""

    def __init__(self, conn):
        self.conn = conn
        self.frames = 0
        self.named = 0
        self.slot = -1


# ---------------------------------------------------------------------------
# The sink: where every frame lands, as a row and its bytes

cdef class FrameSink:
    """Frames as columns: a row per frame (:data:`ROW_DTYPE`) and the frames'
    bytes (size prefix removed) back to back.  :meth:`take` hands out what
    was gathered and starts afresh; the capture layer turns it into an Arrow
    record batch.

    ``acc`` (an Accounting) gets the frame counts (:meth:`flush`) and the
    connections that gave a frame (``kafka_connections``);
    ``header_tables``: the request and response header versions
    (kafkaproto.protocol.header_table(True/False): int8[api keys, 64]), which
    say where a request's client id is and how long each header is;
    ``max_outstanding``: requests a connection may have waiting before the
    oldest counts as unanswered.  :meth:`full` says when ``batch_rows`` rows
    or ``batch_bytes`` bytes are gathered."""

    def __init__(self, acc, request_headers, response_headers, Py_ssize_t max_outstanding,
                 Py_ssize_t batch_rows=65536, Py_ssize_t batch_bytes=32 << 20):
        cdef const int8_t[:, ::1] q = request_headers
        cdef const int8_t[:, ::1] r = response_headers
        self.hq, self.hr = request_headers, response_headers
        self.hvq, self.hvr = &q[0, 0], &r[0, 0]
        self.nq, self.nr = q.shape[0], r.shape[0]
        self.acc = acc
        self.max_outstanding = max_outstanding
        self.batch_rows, self.batch_bytes = batch_rows, batch_bytes
        self.conns = []
        self.batch = 1
        self.clients = []
        self.client_index = {}
        self.unanswered = []
        self._fresh()

    cdef _fresh(self):
        self.rows = bytearray(0)
        self.nrows = self.rows_cap = 0
        self.data = NULL
        self.dlen = self.dcap = 0

    def __dealloc__(self):
        mem_put(self.data, self.dcap)

    # -- connections -----------------------------------------------------------
    def connection(self, conn):
        """A new connection's Pairing (its frames are numbered from 0).  The
        sink keeps no connection: :attr:`conns` holds those the rows gathered
        since the last :meth:`take` name, so a long run keeps only the
        connections its reader keeps."""
        return Pairing(conn)

    def client_of(self, str text):
        """The index of client id ``text`` in :attr:`clients` (added if new)."""
        raw = text.encode("utf-8", "surrogatepass")
        ix = self.client_index.get(raw)
        if ix is None:
            ix = self.client_index[raw] = len(self.clients)
            self.clients.append(text)
        return ix

    def close(self, Pairing p):
        """The connection is over: its waiting requests become unanswered rows."""
        waiting = p.take_waiting()
        if waiting:
            self.acc.unanswered_requests += len(waiting)
            for corr, key, version, ts, seq, client in waiting:
                self.unanswered.append((p.conn, corr, key, version, ts, seq, client))

    # -- rows ------------------------------------------------------------------
    @property
    def size(self):
        """Frames gathered (since the last take)."""
        return self.nrows

    @property
    def nbytes(self):
        return self.dlen

    cpdef bint full(self):
        return self.nrows >= self.batch_rows or self.dlen >= self.batch_bytes

    cdef Row* _row(self) except NULL:
        cdef Py_ssize_t cap
        if self.nrows == self.rows_cap:
            cap = self.rows_cap * 2 if self.rows_cap else 1024
            PyByteArray_Resize(self.rows, cap * sizeof(Row))
            self.rows_cap = cap
        self.nrows += 1
        return (<Row*>PyByteArray_AS_STRING(self.rows)) + self.nrows - 1

    cdef int _bytes(self, const unsigned char* f, Py_ssize_t n) except -1:
        # The frames' bytes go to a block of the Arrow columns' cache: a batch
        # reuses the pages an earlier one gave back (a fresh block per batch
        # costs a page fault per 4 KiB written, a sixth of a bulk decode), and
        # starts with room for a whole batch (and an eighth, for the frame that
        # ends it; at most 64 MiB: the pages are touched only as bytes come), or
        # what the batch before it took, up to twice that (one huge frame does
        # not set the size of every batch after it): doubling from 64 KiB copied
        # every byte of a bulk batch once more.
        cdef Py_ssize_t cap, start
        cdef char* grown
        if self.dlen + n > self.dcap:
            if self.dcap:
                cap = self.dcap * 2
            else:
                start = min(self.batch_bytes + self.batch_bytes // 8, 64 << 20)
                cap = max(min(self.dnext, 2 * start), start, 1 << 16)
            while cap < self.dlen + n:
                cap *= 2
            grown = <char*>mem_resize(self.data, self.dlen, self.dcap, cap)
            if grown == NULL:
                raise MemoryError()
            self.data = grown
            self.dcap = cap
        if n:
            memcpy(self.data + self.dlen, f, n)
        self.dlen += n
        return 0

    cdef int32_t _client(self, KafkaState kh, const unsigned char* f, Py_ssize_t at, Py_ssize_t n) except -2:
        """The index of a client id (its bytes ``f[at:at + n]``, checked UTF-8)."""
        cdef PyObject* hit
        cdef int32_t ix
        raw = kh.client_raw
        if raw is not None and PyBytes_GET_SIZE(raw) == n and memcmp(PyBytes_AS_STRING(raw), f + at, n) == 0:
            return kh.client
        raw = PyBytes_FromStringAndSize(<const char*>(f + at), n)
        hit = PyDict_GetItem(self.client_index, raw)
        if hit == NULL:
            ix = len(self.clients)
            self.clients.append(raw.decode("utf-8"))
            self.client_index[raw] = ix
        else:
            ix = <object>hit
        kh.client_raw = raw
        kh.client = ix
        return ix

    cdef int add(self, KafkaState kh, const unsigned char* f, Py_ssize_t n, int64_t offset,
                 int64_t request_ts=INT64_MIN) except -1:
        """One frame ``f[:n]`` (size prefix removed) of ``kh``'s direction, whose
        prefix is at stream ``offset``, at ``kh.ts``: see :meth:`add_at`."""
        return self.add_at(kh, f, n, offset, INT64_MIN if kh.ts is None else <int64_t>kh.ts, request_ts)

    cdef int add_at(self, KafkaState kh, const unsigned char* f, Py_ssize_t n, int64_t offset, int64_t ts,
                    int64_t request_ts) except -1:
        """One frame ``f[:n]`` (size prefix removed) of ``kh``'s direction, whose
        prefix is at stream ``offset``, seen at ``ts`` (INT64_MIN: no time):
        paired, numbered, counted, stored.  The one rule for every frame, from
        every reader alike.  ``request_ts``: a paired response's request time
        when the reader knows it better than the request's row does (the
        tap's own clock)."""
        cdef Pairing pr = kh.pairing
        cdef Row* row
        cdef Cur c
        cdef RequestHead h
        cdef Pend req
        cdef int hv
        if pr.frames == 0:
            self.n_kafka += 1
        row = self._row()
        row.ts = ts
        row.offset = offset
        row.seq = pr.frames
        row.request_seq = -1
        row.request_ts = INT64_MIN
        if pr.named != self.batch:
            pr.named = self.batch
            pr.slot = len(self.conns)
            self.conns.append(pr.conn)
        row.conn = pr.slot
        row.correlation_id = 0
        row.client = -1
        row.header_size = -1
        row.api_key = 0
        row.api_version = 0
        row.status = ST_FRAMED
        row.flags = kh.flags
        row.pad = 0
        kh.flags = 0
        pr.frames += 1
        if kh.is_request:
            row.direction = 0
            if n >= 8:
                row.flags |= FL_HEADER
                row.api_key = <int16_t>kp_ld16(f)
                row.api_version = <int16_t>kp_ld16(f + 2)
                row.correlation_id = <int32_t>kp_ld32(f + 4)
                hv = -1
                if 0 <= row.api_key < self.nq and 0 <= row.api_version < 64:
                    hv = self.hvq[64 * row.api_key + row.api_version]
                if hv >= 0:
                    cur_init(&c, f, 0, n)
                    if not cur_request_head(&c, hv, &h):
                        if h.client_id_len >= 0:
                            row.client = self._client(kh, f, h.client_id_at, h.client_id_len)
                            # the row may have moved: _client only touches dicts and lists, not the rows
                        if hv < 2 or not cur_skip_tags(&c):
                            row.header_size = <int32_t>c.pos
                req.ts = ts
                req.seq = row.seq
                req.client = row.client
                req.correlation_id = row.correlation_id
                req.api_key = row.api_key
                req.api_version = row.api_version
                if pr.push(&req):
                    row.flags |= FL_REUSED
                if pr.waiting > self.max_outstanding:
                    pr.drop_oldest()
                    row.flags |= FL_EVICTED
                    self.n_evicted += 1
            self.n_framed += 1
            self.b_framed += n + 4
        else:
            row.direction = 1
            row.correlation_id = <int32_t>kp_ld32(f)
            if pr.pop(row.correlation_id, &req):
                row.flags |= FL_HEADER
                row.api_key = req.api_key
                row.api_version = req.api_version
                row.client = req.client
                row.request_seq = req.seq
                row.request_ts = req.ts if request_ts == INT64_MIN else request_ts
                hv = -1
                if 0 <= row.api_key < self.nr and 0 <= row.api_version < 64:
                    hv = self.hvr[64 * row.api_key + row.api_version]
                if hv == 0:
                    row.header_size = 4
                elif hv == 1:
                    cur_init(&c, f, 4, n)
                    if not cur_skip_tags(&c):
                        row.header_size = <int32_t>c.pos
                self.n_framed += 1
                self.b_framed += n + 4
            else:
                row.status = ST_UNPAIRED
                self.n_unpaired += 1
                self.b_unpaired += n + 4
        self._bytes(f, n)
        row = (<Row*>PyByteArray_AS_STRING(self.rows)) + self.nrows - 1
        row.end = self.dlen
        return 0

    def emit(self, KafkaState kh, frame, int64_t offset, request_ts=None):
        """A frame the Python code made (any contiguous buffer of its bytes, size prefix removed)."""
        cdef Py_buffer view
        PyObject_GetBuffer(frame, &view, PyBUF_SIMPLE)
        try:
            self.add(kh, <const unsigned char*>view.buf, view.len, offset,
                     INT64_MIN if request_ts is None else <int64_t>request_ts)
        finally:
            PyBuffer_Release(&view)

    def add_rows(self, list states, const int32_t[::1] state, const int64_t[::1] ts, const int64_t[::1] offset,
                 const int64_t[::1] request_ts, const int64_t[::1] starts, const int64_t[::1] ends, data,
                 Py_ssize_t first=0):
        """Frames given as columns (the tap's tables), from row ``first`` until
        the sink is :meth:`full` or the rows end; returns the row it stopped
        at.  Row ``i`` is ``data[starts[i]:ends[i]]`` (size prefix removed) of
        the direction ``states[state[i]]`` (a KafkaState), at stream
        ``offset[i]``, seen at ``ts[i]``; ``request_ts[i]``: its request's
        time, when the reader knows it (NO_TS otherwise)."""
        cdef Py_buffer view
        cdef Py_ssize_t i = first, n = state.shape[0], size, nstates = len(states)
        cdef const unsigned char* base
        cdef KafkaState kh
        if ts.shape[0] < n or offset.shape[0] < n or request_ts.shape[0] < n or starts.shape[0] < n or \
                ends.shape[0] < n:
            raise ValueError("columns of different lengths")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            base = <const unsigned char*>view.buf
            size = view.len
            while i < n:
                if self.nrows >= self.batch_rows or self.dlen >= self.batch_bytes:
                    break
                if state[i] < 0 or state[i] >= nstates or starts[i] < 0 or ends[i] < starts[i] or ends[i] > size:
                    raise ValueError(f"row {i}: no frame at {starts[i]}:{ends[i]} of {size} bytes, "
                                     f"direction {state[i]}")
                kh = <KafkaState>states[state[i]]
                self.add_at(kh, base + starts[i], ends[i] - starts[i], offset[i], ts[i], request_ts[i])
                i += 1
        finally:
            PyBuffer_Release(&view)
        return i

    def flush(self):
        """Add the frame counts to the Accounting."""
        acc = self.acc
        if self.n_framed:
            acc.frames["framed"] += self.n_framed
            acc.bytes["framed"] += self.b_framed
            self.n_framed = self.b_framed = 0
        if self.n_unpaired:
            acc.frames["unpaired"] += self.n_unpaired
            acc.bytes["unpaired"] += self.b_unpaired
            self.n_unpaired = self.b_unpaired = 0
        if self.n_kafka:
            acc.kafka_connections += self.n_kafka
            self.n_kafka = 0
        if self.n_evicted:
            acc.unanswered_requests += self.n_evicted
            self.n_evicted = 0

    def take(self):
        """``(rows, data, conns)``: the rows gathered (a numpy array of
        :data:`ROW_DTYPE`), their bytes (a buffer; row i's are
        ``data[rows.end[i-1]:rows.end[i]]``) and the connections they name (by
        the rows' ``conn``); the sink starts afresh.  Counts are flushed first."""
        self.flush()
        PyByteArray_Resize(self.rows, self.nrows * sizeof(Row))
        rows = np.frombuffer(self.rows, dtype=ROW_DTYPE) if self.nrows else np.zeros(0, dtype=ROW_DTYPE)
        data = cmem(self.data, self.dlen, self.dcap)  # (the block goes back to the cache with it)
        self.dnext = self.dcap
        self.data = NULL
        self.dcap = 0
        conns = self.conns
        self._fresh()
        self.conns = []
        self.batch += 1
        return rows, data, conns


cdef class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``).

    ``buf[pos:]`` holds the bytes not framed yet, ``base`` is the stream
    offset of ``buf[0]``, ``ts`` the time of the latest bytes; ``pairing`` is
    the connection's (shared by its two directions); ``sink`` takes each
    frame; ``flags`` are given to the next frame (FL_RESYNC after a resync)."""

    def __init__(self, conn, Pairing pairing, FrameSink sink, bint is_request, bint synced, int64_t max_frame_size):
        self.conn = conn
        self.pairing = pairing
        self.sink = sink
        self.is_request = is_request
        self.synced = synced
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.ts = None
        self.flags = 0
        self.client = -1

    cpdef int drain(self) except -1:
        """Frame the bytes buffered from ``pos`` on (a synced direction): each
        whole frame goes to the sink.  1: a size prefix that makes no sense
        stopped it (``pos`` is there); 0: the rest is a partial frame."""
        cdef int32_t size
        cdef int st
        cdef int64_t minimum = 8 if self.is_request else 4
        cdef Py_ssize_t end = PyByteArray_GET_SIZE(self.buf)
        while True:
            st = _frame_at(<const unsigned char*>PyByteArray_AS_STRING(self.buf), self.pos, end, minimum,
                           self.max_frame_size, &size)
            if st == FRAME_BAD_SIZE:
                return 1
            if st != FRAME_COMPLETE:
                return 0
            self.sink.add(self, <const unsigned char*>PyByteArray_AS_STRING(self.buf) + self.pos + 4, size,
                          self.base + self.pos)
            self.pos += 4 + size

    cpdef compact(self):
        """Drop the framed bytes from the buffer once they are many, or all of it."""
        if self.pos > 65536 or self.pos == PyByteArray_GET_SIZE(self.buf):
            del self.buf[:self.pos]
            self.base += self.pos
            self.pos = 0
