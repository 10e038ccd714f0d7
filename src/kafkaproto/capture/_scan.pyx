# cython: language_level=3
# The capture walker: packets in, Kafka frames out as columns (one pass).
#
# It reads classic pcap files in large blocks, reassembles the common case --
# a packet of an established, settled connection whose segment is exactly the
# next expected one, with no SYN/FIN/RST and nothing waiting out of order --
# frames it, pairs each response with its request and numbers the frames, all
# in C.  Everything else goes to the Python capture layer (the ``packet``
# callback, Extractor.packet: connection set-up and tear-down, reordering,
# detection, resynchronization) unchanged, and the frames that layer makes
# come back here (FrameSink.emit), so there is one framing-and-pairing rule
# and one place frames land.
#
# Frames land in a FrameSink: one fixed-size row per frame (time, connection,
# direction, stream offset, api key and version, correlation id, client id,
# frame number, the request a response answers, header size, flags) and
# the frames' bytes back to back in one data buffer.  The capture layer turns
# a sink's contents into an Arrow record batch (kafkaproto.capture.frames)
# without a Python object per frame.
#
# This module sits below the Python capture layer and imports nothing from
# it: the connection objects, the callbacks, the accounting object and the
# header-version tables are handed to it.  The state both paths work on lives
# in the small state classes below, which the Python classes hold
# (tcp.HalfStream.state, streams.KafkaHalf.state) and the fast path reads and
# advances directly.  The twin (_scan_py.py) has the same classes in plain
# Python.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.mem cimport PyMem_Realloc, PyMem_Free
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.string cimport memcmp, memcpy, memmove, memset

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_st16, kp_u64_to_f64, kp_utf8_ok, MAX_STR, Cur, Step, RequestHead, cur_init,
    cur_fail, cur_step, cur_take, cur_uv32, cur_length, cur_count, cur_tags_begin, cur_tag_next, cur_skip_tags,
    cur_request_head, _frame_at, FRAME_COMPLETE, FRAME_BAD_SIZE, F_OK, F_NEED, F_COUNT, F_LIMIT, F_UTF8, F_TAG_SIZE,
    P_FIELD, P_INDEX, W_INT8, W_INT16, W_INT32, W_INT64, W_UINT16, W_UINT32, W_FLOAT64, W_BOOL, W_UUID, W_STRING,
    W_COMPACT_STRING, W_BYTES, W_COMPACT_BYTES, W_ARRAY_LENGTH, W_COMPACT_ARRAY_LENGTH, W_UVARINT, W_TAGGED_FIELD,
)
from kafkaproto.messages._engine cimport (
    Node, Op, Plan, K_BOOL, K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64, K_UUID, K_STRING,
    K_BYTES, K_RECORDS, K_STRUCT, K_ARRAY,
)
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_DelItem, PyDict_Size, PyDict_Next
from cpython.object cimport PyObject

import numpy as np

COMPILED = True

cdef enum:
    _FIN = 0x01
    _SYN = 0x02
    _RST = 0x04
    _ACK = 0x10

cdef Py_ssize_t _CAP_BLOCK = 1 << 20
cdef uint64_t _CAP_MAX_RECORD = 256 * 1024 * 1024
cdef Py_ssize_t _CAP_MAX_DIRS = 1 << 18

# frame flags (FrameSink rows; kafkaproto.capture.frames names them)
cdef enum:
    FL_HEADER = 1        # api key, version and correlation id were read (requests: 8 bytes or more)
    FL_RESYNC = 2        # the first frame after its direction resynchronized (a gap, or bytes that did not frame)
    FL_REUSED = 4        # a request whose correlation id was already waiting on its connection
    FL_EVICTED = 8       # a request after which the oldest waiting one was given up (too many waiting)

# frame status (rows)
cdef enum:
    ST_FRAMED = 0
    ST_UNPAIRED = 1

FLAGS = {"header": FL_HEADER, "resync": FL_RESYNC, "reused_correlation_id": FL_REUSED,
         "evicted_oldest": FL_EVICTED}
STATUS = ("framed", "unpaired")


cdef class HalfState:
    """Reassembly state of one TCP direction (held by tcp.HalfStream as ``state``).

    ``base``: sequence number of stream offset 0 (None until known); ``next``:
    the next expected stream offset; ``pending``/``heap``: segments waiting
    behind a hole, by offset; ``ended``: the stream is over."""
    cdef public object base
    cdef public int64_t next
    cdef public dict pending
    cdef public list heap
    cdef public bint ended

    def __init__(self):
        self.base = None
        self.next = 0
        self.pending = {}
        self.heap = []
        self.ended = False


# ---------------------------------------------------------------------------
# Frame rows

cdef struct Row:
    # 72 bytes, no padding (widest first): ROW_FIELDS below names them in order
    int64_t ts              # nanoseconds since the epoch; INT64_MIN: no time
    int64_t offset          # stream offset of the frame's size prefix in its direction
    int64_t seq             # the frame's number in its connection (both directions)
    int64_t request_seq     # a paired response: its request's number; else -1
    int64_t request_ts      # a paired response: its request's time; else INT64_MIN
    int64_t end             # where the frame's bytes end in the data buffer
    int32_t conn            # the sink's connection index
    int32_t correlation_id
    int32_t client          # index of the client id in FrameSink.clients; -1: none
    int32_t header_size     # bytes of the header (where the body starts); -1: unknown
    int16_t api_key         # a request's own; a paired response's request's; else 0
    int16_t api_version
    uint8_t direction       # 0 request, 1 response
    uint8_t status          # ST_FRAMED / ST_UNPAIRED
    uint8_t flags           # FL_*
    uint8_t pad

#: the fields of a row, in order, as (name, numpy type): FrameSink.take's array has this dtype
ROW_FIELDS = (("ts", "<i8"), ("offset", "<i8"), ("seq", "<i8"), ("request_seq", "<i8"), ("request_ts", "<i8"),
              ("end", "<i8"), ("conn", "<i4"), ("correlation_id", "<i4"), ("client", "<i4"),
              ("header_size", "<i4"), ("api_key", "<i2"), ("api_version", "<i2"), ("direction", "u1"),
              ("status", "u1"), ("flags", "u1"), ("pad", "u1"))
ROW_DTYPE = np.dtype(list(ROW_FIELDS))
assert ROW_DTYPE.itemsize == sizeof(Row)
NO_TS = INT64_MIN


# ---------------------------------------------------------------------------
# Pairing: the requests waiting on one connection

cdef struct Pend:
    int64_t ts
    int64_t seq
    int32_t client
    int32_t next            # the next slot waiting with the same correlation id (in order), -1: none
    int32_t last            # (the first slot of an id) the last slot waiting with it
    int32_t correlation_id
    int16_t api_key
    int16_t api_version


cdef class Pairing:
    """The requests waiting for their responses on one connection, and its
    frame count.  A response pairs with the oldest waiting request of its
    correlation id (Kafka answers a connection's requests in order, so a
    correlation id a client reuses is paired in order too).

    ``pending`` maps a correlation id to the slot of its oldest waiting
    request, in the order the ids were first sent; ``waiting`` counts the
    requests waiting; ``frames`` the connection's frames so far."""
    cdef public object conn
    cdef public int32_t index
    cdef public int64_t frames
    cdef public int64_t waiting
    cdef public dict pending
    cdef Pend* slots
    cdef int32_t cap, used, free

    def __cinit__(self):
        self.slots = NULL
        self.cap = self.used = 0
        self.free = -1

    def __init__(self, conn, int32_t index):
        self.conn = conn
        self.index = index
        self.frames = 0
        self.waiting = 0
        self.pending = {}

    def __dealloc__(self):
        PyMem_Free(self.slots)

    cdef int32_t _alloc(self) except -2:
        cdef int32_t s
        cdef Pend* p
        if self.free >= 0:
            s = self.free
            self.free = self.slots[s].next
            return s
        if self.used == self.cap:
            p = <Pend*>PyMem_Realloc(self.slots, (self.cap * 2 + 8) * sizeof(Pend))
            if p == NULL:
                raise MemoryError()
            self.slots = p
            self.cap = self.cap * 2 + 8
        s = self.used
        self.used += 1
        return s

    cdef int push(self, const Pend* req) except -1:
        """Note a request as waiting: 1 if its correlation id was already waiting, else 0."""
        cdef int32_t s = self._alloc(), t
        cdef PyObject* hit
        self.slots[s] = req[0]
        self.slots[s].next = -1
        self.slots[s].last = s
        self.waiting += 1
        key = req.correlation_id
        hit = PyDict_GetItem(self.pending, key)
        if hit == NULL:
            self.pending[key] = s
            return 0
        t = <object>hit
        self.slots[self.slots[t].last].next = s
        self.slots[t].last = s
        return 1

    cdef int pop(self, int32_t corr, Pend* out) except -1:
        """The oldest request waiting with ``corr``, taken: 1, or 0 when none waits."""
        cdef PyObject* hit = PyDict_GetItem(self.pending, corr)
        cdef int32_t s
        if hit == NULL:
            return 0
        s = <object>hit
        out[0] = self.slots[s]
        if out.next >= 0:
            self.slots[out.next].last = out.last
            self.pending[corr] = out.next
        else:
            del self.pending[corr]
        self.slots[s].next = self.free
        self.free = s
        self.waiting -= 1
        return 1

    cdef int drop_oldest(self) except -1:
        """Give up the request waiting longest (of the id sent first)."""
        cdef Py_ssize_t it = 0
        cdef PyObject* k
        cdef PyObject* v
        cdef Pend gone
        if PyDict_Next(self.pending, &it, &k, &v):
            self.pop(<object>k, &gone)
        return 0

    def request_of(self, int32_t corr):
        """``(api_key, api_version)`` of the oldest request waiting with ``corr``, or None."""
        cdef PyObject* hit = PyDict_GetItem(self.pending, corr)
        cdef int32_t s
        if hit == NULL:
            return None
        s = <object>hit
        return self.slots[s].api_key, self.slots[s].api_version

    def take_waiting(self):
        """Every request still waiting, oldest id first: ``[(correlation id,
        api key, api version, ts or None, frame number, client index)]``; none wait after."""
        cdef int32_t s
        cdef Pend* p
        out = []
        for corr, first in self.pending.items():
            s = first
            while s >= 0:
                p = &self.slots[s]
                out.append((p.correlation_id, p.api_key, p.api_version, None if p.ts == INT64_MIN else p.ts,
                            p.seq, p.client))
                s = p.next
        self.pending.clear()
        self.free = -1
        self.used = 0
        self.waiting = 0
        return out


# ---------------------------------------------------------------------------
# The sink: where every frame lands, as a row and its bytes

cdef class KafkaState


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
    cdef bytearray rows
    cdef Py_ssize_t nrows, rows_cap
    cdef bytearray data
    cdef Py_ssize_t dlen, dcap
    cdef public list conns
    cdef public list clients
    cdef dict client_index
    cdef object hq, hr
    cdef const int8_t* hvq
    cdef const int8_t* hvr
    cdef int nq, nr
    cdef public object acc
    cdef public Py_ssize_t max_outstanding, batch_rows, batch_bytes
    #: requests left waiting when their connection closed: (conn index, corr, key, version, ts, seq, client index)
    cdef public list unanswered
    cdef int64_t n_framed, b_framed, n_unpaired, b_unpaired, n_kafka, n_evicted

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
        self.clients = []
        self.client_index = {}
        self.unanswered = []
        self._fresh()

    cdef _fresh(self):
        self.rows = bytearray(0)
        self.nrows = self.rows_cap = 0
        self.data = bytearray(0)
        self.dlen = self.dcap = 0

    # -- connections -----------------------------------------------------------
    def connection(self, conn):
        """A new connection's Pairing (its frames are numbered from 0)."""
        p = Pairing(conn, len(self.conns))
        self.conns.append(conn)
        return p

    def close(self, Pairing p):
        """The connection is over: its waiting requests become unanswered rows."""
        waiting = p.take_waiting()
        if waiting:
            self.acc.unanswered_requests += len(waiting)
            for corr, key, version, ts, seq, client in waiting:
                self.unanswered.append((p.index, corr, key, version, ts, seq, client))

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
        cdef Py_ssize_t cap
        if self.dlen + n > self.dcap:
            cap = self.dcap * 2 if self.dcap else 1 << 16
            while cap < self.dlen + n:
                cap *= 2
            PyByteArray_Resize(self.data, cap)
            self.dcap = cap
        if n:
            memcpy(PyByteArray_AS_STRING(self.data) + self.dlen, f, n)
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
        prefix is at stream ``offset``: paired, numbered, counted, stored.  The
        one rule for every frame, from the fast path and the Python code alike.
        ``request_ts``: a paired response's request time when the reader knows
        it better than the request's row does (the tap's own clock)."""
        cdef Pairing pr = kh.pairing
        cdef Row* row
        cdef Cur c
        cdef RequestHead h
        cdef Pend req
        cdef int hv
        cdef int64_t ts = INT64_MIN if kh.ts is None else <int64_t>kh.ts
        if pr.frames == 0:
            self.n_kafka += 1
        row = self._row()
        row.ts = ts
        row.offset = offset
        row.seq = pr.frames
        row.request_seq = -1
        row.request_ts = INT64_MIN
        row.conn = pr.index
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
        """``(rows, data)``: the rows gathered (a numpy array of :data:`ROW_DTYPE`)
        and their bytes (a bytearray; row i's are ``data[rows.end[i-1]:rows.end[i]]``);
        the sink starts afresh.  Counts are flushed first."""
        self.flush()
        PyByteArray_Resize(self.rows, self.nrows * sizeof(Row))
        PyByteArray_Resize(self.data, self.dlen)
        rows = np.frombuffer(self.rows, dtype=ROW_DTYPE) if self.nrows else np.zeros(0, dtype=ROW_DTYPE)
        data = self.data
        self._fresh()
        return rows, data


cdef class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``).

    ``buf[pos:]`` holds the bytes not framed yet, ``base`` is the stream
    offset of ``buf[0]``, ``ts`` the time of the latest bytes; ``pairing`` is
    the connection's (shared by its two directions); ``sink`` takes each
    frame; ``flags`` are given to the next frame (FL_RESYNC after a resync)."""
    cdef public object conn, ts
    cdef public Pairing pairing
    cdef public FrameSink sink
    cdef public bint is_request, synced
    cdef public bytearray buf
    cdef public Py_ssize_t pos
    cdef public int64_t base, max_frame_size
    cdef public uint8_t flags
    # the last client id seen on this direction: its bytes and its index
    cdef bytes client_raw
    cdef int32_t client

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


cdef class _FastDir:
    """One direction of a settled connection, as the fast path sees it."""
    cdef HalfState hs, ohs
    cdef KafkaState kh  # None: the connection is not Kafka


cdef inline uint32_t _cap_ld32(const unsigned char* p, bint big) noexcept nogil:
    if big:
        return kp_ld32(p)
    return (<uint32_t>p[3] << 24) | (<uint32_t>p[2] << 16) | (<uint32_t>p[1] << 8) | <uint32_t>p[0]


cdef struct _Seg:
    int family          # 4 or 6
    Py_ssize_t src_at   # offsets of the addresses in the packet
    Py_ssize_t dst_at
    uint16_t sport, dport
    uint32_t seq, ack
    uint8_t flags
    Py_ssize_t payload_at
    Py_ssize_t caplen   # payload bytes present
    int64_t length      # payload bytes on the wire


# packets that are not TCP segments, by the reason decode_tcp gives (Accounting.packets)
cdef enum:
    R_MALFORMED = 1
    R_NOT_IP = 2
    R_NOT_TCP = 3
    R_FRAGMENT = 4
    R_LINK = 5
    N_REASONS = 6

_REASONS = (None, "malformed", "not_ip", "not_tcp", "ip_fragment", "unsupported_link")


cdef int _cap_parse(int linktype, const unsigned char* d, Py_ssize_t n, _Seg* s) noexcept nogil:
    """1: a TCP segment the fast path may take (decoded exactly as decode_tcp
    would); -R_*: not a TCP segment, for the reason decode_tcp gives; 0:
    anything else (decode_tcp decides)."""
    cdef Py_ssize_t pos = 0, at, ihl, l4, doff, start
    cdef int etype
    cdef uint32_t fam, le, be
    cdef int64_t total, l4_len
    if linktype == 1:  # Ethernet
        if n < 14:
            return -R_MALFORMED
        etype = kp_ld16(d + 12)
        pos = 14
        while etype == 0x8100 or etype == 0x88A8 or etype == 0x9100:
            if n < pos + 4:
                return -R_MALFORMED
            etype = kp_ld16(d + pos + 2)
            pos += 4
    elif linktype == 113 or linktype == 276:  # Linux cooked SLL, SLL2
        if linktype == 113:
            pos, at = 16, 14
        else:
            pos, at = 20, 0
        if n < pos:
            return -R_MALFORMED
        etype = kp_ld16(d + at)
    elif linktype == 0 or linktype == 108:  # BSD loopback
        if n < 4:
            return -R_MALFORMED
        be = kp_ld32(d)
        le = _cap_ld32(d, False)
        fam = be if linktype == 108 else (le if le < 256 else be)
        etype = 0x0800 if fam == 2 else (0x86DD if fam == 24 or fam == 28 or fam == 30 else -1)
        pos = 4
    elif linktype == 101 or linktype == 12 or linktype == 14 or linktype == 228 or linktype == 229:
        if n < 1:
            return -R_MALFORMED
        etype = 0x0800 if d[0] >> 4 == 4 else (0x86DD if d[0] >> 4 == 6 else -1)
    else:
        return -R_LINK
    if etype == 0x0800:
        if n < pos + 20:
            return -R_MALFORMED
        ihl = (d[pos] & 0x0F) * 4
        if d[pos] >> 4 != 4 or ihl < 20 or n < pos + ihl:
            return -R_MALFORMED
        total = kp_ld16(d + pos + 2)
        if total < ihl:
            return 0  # offload captures: decode_tcp's business
        if d[pos + 9] != 6:
            return -R_NOT_TCP
        if kp_ld16(d + pos + 6) & 0x3FFF:
            return -R_FRAGMENT
        s.family = 4
        s.src_at = pos + 12
        s.dst_at = pos + 16
        l4 = pos + ihl
        l4_len = total - ihl
    elif etype == 0x86DD:
        if n < pos + 40 or d[pos] >> 4 != 6:
            return -R_MALFORMED
        l4_len = kp_ld16(d + pos + 4)
        if l4_len == 0 or d[pos + 6] != 6:
            return 0  # jumbograms, extension headers: decode_tcp's business
        s.family = 6
        s.src_at = pos + 8
        s.dst_at = pos + 24
        l4 = pos + 40
    else:
        return -R_NOT_IP
    if l4_len < 20 or n < l4 + 20:
        return -R_MALFORMED
    doff = (d[l4 + 12] >> 4) * 4
    if doff < 20 or doff > l4_len or n < l4 + doff:
        return -R_MALFORMED
    s.sport = kp_ld16(d + l4)
    s.dport = kp_ld16(d + l4 + 2)
    s.seq = kp_ld32(d + l4 + 4)
    s.ack = kp_ld32(d + l4 + 8)
    s.flags = d[l4 + 13]
    start = l4 + doff
    s.length = l4_len - doff
    s.payload_at = start
    s.caplen = n - start if n - start < s.length else s.length
    return 1


cdef class CaptureScanner:
    """Packets in, frames out (into the FrameSink), taking the common case in C.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file in large blocks;
    ``segments(...)`` takes TCP segments decoded elsewhere (the byte-range
    path).  Counts of the fast path are kept here and added to the
    Accounting by :meth:`flush` (``run`` flushes before it returns).

    What the scanner needs from the layer above is handed to it here:

    ``packet(ts, linktype, data)``
        takes a packet the fast path does not (Extractor.packet);
    ``lookup(family, src, sport, dst, dport)``
        the state of a settled connection's direction (addresses as 4 or 16
        raw bytes): ``(half, other_half, kafka)`` -- the two HalfStates and
        the sending direction's KafkaState, None when the connection is not
        Kafka -- or None while the Python code must see its packets;
    ``acc``, ``sink``
        the Accounting, and the FrameSink every frame lands in.
    """
    cdef object acc, sink_packet, lookup
    cdef FrameSink sink
    cdef dict dirs
    # deferred counters
    cdef int64_t n_packets, n_tcp, n_payload, b_not_kafka
    cdef int64_t reasons[N_REASONS]
    # pcap reading
    cdef object fh
    cdef bytearray blk
    cdef Py_ssize_t start, end
    cdef bint eof, big
    cdef uint64_t scale
    cdef int linktype
    cdef public object error
    cdef public int64_t unread_bytes, records

    def __init__(self, packet, lookup, acc, FrameSink sink):
        self.sink_packet = packet
        self.lookup = lookup
        self.acc = acc
        self.sink = sink
        self.dirs = {}
        self.error = None

    # -- accounting --------------------------------------------------------
    def flush(self):
        """Add the fast path's counts (and the sink's) to the Accounting."""
        cdef int k
        acc = self.acc
        if self.n_packets:
            acc.packets_total += self.n_packets
            acc.payload_bytes_total += self.n_payload
            if self.n_tcp:
                acc.packets["tcp"] += self.n_tcp
            for k in range(1, N_REASONS):
                if self.reasons[k]:
                    acc.packets[_REASONS[k]] += self.reasons[k]
                    self.reasons[k] = 0
            self.n_packets = self.n_tcp = self.n_payload = 0
        if self.b_not_kafka:
            acc.bytes["not_kafka"] += self.b_not_kafka
            self.b_not_kafka = 0
        self.sink.flush()

    # -- packets -----------------------------------------------------------
    def packet(self, ts, int linktype, data):
        """One packet (``data``: bytes); its frames land in the sink."""
        cdef const unsigned char[::1] view = data
        if view.shape[0] == 0:
            self._packet(ts, linktype, <const unsigned char*>b"", 0, data)
            return
        self._packet(ts, linktype, &view[0], view.shape[0], data)

    cdef _FastDir _lookup(self, _Seg* s, const unsigned char* src, const unsigned char* dst, bytes key):
        """The settled connection this segment belongs to, or None."""
        cdef _FastDir fd
        cdef Py_ssize_t alen = 4 if s.family == 4 else 16
        found = self.lookup(s.family, PyBytes_FromStringAndSize(<const char*>src, alen), s.sport,
                            PyBytes_FromStringAndSize(<const char*>dst, alen), s.dport)
        if found is None:
            return None
        hs, ohs, kh = found
        if type(hs) is not HalfState or type(ohs) is not HalfState:
            return None
        if kh is not None and type(kh) is not KafkaState:
            return None
        fd = _FastDir()
        fd.hs = hs
        fd.ohs = ohs
        fd.kh = kh
        if PyDict_Size(self.dirs) >= _CAP_MAX_DIRS:
            self.dirs.clear()  # only a cache: closed connections are dropped from it when seen again
        self.dirs[key] = fd
        return fd

    cdef int _packet(self, ts, int linktype, const unsigned char* d, Py_ssize_t n, data) except -1:
        cdef _Seg s
        cdef int r = _cap_parse(linktype, d, n, &s)
        if r < 0:
            # not a TCP segment: counted here as Extractor.packet would count it
            self.n_packets += 1
            self.reasons[-r] += 1
            return 0
        if r == 0 or not self._fast(ts, &s, d + s.src_at, d + s.dst_at, d + s.payload_at):
            return self._slow(ts, linktype, d, n, data)
        return 0

    cdef int _fast(self, ts, _Seg* s, const unsigned char* src, const unsigned char* dst,
                   const unsigned char* payload) except -1:
        """Take one parsed segment on the fast path: 1, or 0 when the Python
        code must (nothing was changed then).  ``src``/``dst``: the raw
        addresses (4 or 16 bytes, by ``s.family``); ``payload``: its bytes."""
        cdef unsigned char kb[37]
        cdef Py_ssize_t alen
        cdef _FastDir fd
        cdef HalfState hs, ohs
        cdef PyObject* hit
        cdef uint32_t base
        alen = 4 if s.family == 4 else 16
        kb[0] = <unsigned char>s.family
        memcpy(kb + 1, src, alen)
        memcpy(kb + 1 + alen, dst, alen)
        kp_st16(kb + 1 + 2 * alen, s.sport)
        kp_st16(kb + 3 + 2 * alen, s.dport)
        key = PyBytes_FromStringAndSize(<const char*>kb, 5 + 2 * alen)
        hit = PyDict_GetItem(self.dirs, key)
        if hit != NULL:
            fd = <_FastDir>hit
        else:
            if s.flags & (_SYN | _FIN | _RST):
                return 0
            fd = self._lookup(s, src, dst, key)
            if fd is None:
                return 0
        hs = fd.hs
        ohs = fd.ohs
        if hs.ended or ohs.ended:
            PyDict_DelItem(self.dirs, key)  # a closed connection: maybe replaced
            return 0
        if s.flags & (_SYN | _FIN | _RST):
            return 0
        if s.length:
            if hs.base is None or PyDict_Size(hs.pending) or s.caplen != s.length:
                return 0
            base = <uint32_t>hs.base
            if <uint32_t>(s.seq - base - <uint32_t>hs.next) != 0:
                return 0
        if (s.flags & _ACK) and ohs.base is not None and len(ohs.heap):
            return 0
        # the fast path: what Extractor.packet/segment and HalfStream.segment do here
        if s.length:
            if fd.kh is None:
                self.b_not_kafka += s.caplen
            elif not self._kafka_data(fd.kh, ts, payload, s.caplen):
                return 0
            hs.next += s.caplen
        self.n_packets += 1
        self.n_tcp += 1
        self.n_payload += s.caplen
        return 1

    def segments(self, ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, payload, slow):
        """TCP segments indexed elsewhere (a connection's rows of the byte-range
        path): the fast path takes what it can, ``slow(i)`` gets row ``i``
        otherwise (Extractor.tcp).  Columns (numpy): ``ts`` int64 (no nulls),
        ``family`` int8 (4 or 6), ``src``/``dst`` uint8[n, 16] raw addresses,
        ports (any int), ``seq``/``ack`` int64, ``flags`` int16, ``length``
        int64 (bytes on the wire), ``at`` int64 and ``caplen`` int32: where
        each payload lies in ``payload`` (any buffer: a capture file mapped in
        memory)."""
        cdef const int64_t[::1] t = np.ascontiguousarray(ts, dtype=np.int64)
        cdef const int8_t[::1] fam = np.ascontiguousarray(family, dtype=np.int8)
        cdef const uint8_t[:, ::1] sa = np.ascontiguousarray(src, dtype=np.uint8)
        cdef const uint8_t[:, ::1] da = np.ascontiguousarray(dst, dtype=np.uint8)
        cdef const int32_t[::1] sp = np.ascontiguousarray(sport, dtype=np.int32)
        cdef const int32_t[::1] dp = np.ascontiguousarray(dport, dtype=np.int32)
        cdef const int64_t[::1] sq = np.ascontiguousarray(seq, dtype=np.int64)
        cdef const int64_t[::1] ak = np.ascontiguousarray(ack, dtype=np.int64)
        cdef const int16_t[::1] fl = np.ascontiguousarray(flags, dtype=np.int16)
        cdef const int64_t[::1] ln = np.ascontiguousarray(length, dtype=np.int64)
        cdef const int64_t[::1] pa_ = np.ascontiguousarray(at, dtype=np.int64)
        cdef const int32_t[::1] cl = np.ascontiguousarray(caplen, dtype=np.int32)
        cdef const unsigned char[::1] data = payload
        cdef Py_ssize_t i, n = t.shape[0], size = data.shape[0]
        cdef _Seg s
        cdef const unsigned char* pd = &data[0] if size else NULL
        for i in range(n):
            if (fam[i] != 4 and fam[i] != 6) or pa_[i] < 0 or cl[i] < 0 or pa_[i] + cl[i] > size:
                slow(i)
                continue
            s.family = fam[i]
            s.sport = <uint16_t>sp[i]
            s.dport = <uint16_t>dp[i]
            s.seq = <uint32_t>sq[i]
            s.ack = <uint32_t>ak[i]
            s.flags = <uint8_t>fl[i]
            s.caplen = cl[i]
            s.length = ln[i]
            if not self._fast(t[i], &s, &sa[i, 0], &da[i, 0], pd + pa_[i] if pd != NULL else pd):
                slow(i)
        self.flush()

    cdef int _slow(self, ts, int linktype, const unsigned char* d, Py_ssize_t n, data) except -1:
        if data is None:
            data = PyBytes_FromStringAndSize(<const char*>d, n)
        self.sink_packet(ts, linktype, data)
        return 0

    # -- Kafka framing (KafkaHalf.data / _run) ------------------------------
    cdef int _kafka_data(self, KafkaState kh, ts, const unsigned char* p, Py_ssize_t n) except -1:
        """Frame ``p[:n]``, the next bytes of ``kh``'s stream: 1, or 0 when
        the Python code must take the packet (``kh`` is then as it was)."""
        cdef bytearray buf = kh.buf
        cdef Py_ssize_t old = PyByteArray_GET_SIZE(buf), pos, end, q
        cdef int32_t size
        cdef int64_t minimum = 8 if kh.is_request else 4
        cdef int st
        if not kh.synced:
            return 0  # resynchronizing is the Python code's business
        if kh.pos == old:
            # nothing buffered: frame straight from the packet, keep only its tail
            q = 0
            while True:
                st = _frame_at(p, q, n, minimum, kh.max_frame_size, &size)
                if st == FRAME_BAD_SIZE:
                    return 0
                if st != FRAME_COMPLETE:
                    break
                q += 4 + size
            if ts is not None:
                kh.ts = ts
            if old:
                del buf[:old]
                kh.base += old
                kh.pos = 0
            q = 0
            while _frame_at(p, q, n, minimum, kh.max_frame_size, &size) == FRAME_COMPLETE:
                self.sink.add(kh, p + q + 4, size, kh.base + q)
                q += 4 + size
            kh.base += q
            if q < n:
                PyByteArray_Resize(buf, n - q)
                memcpy(PyByteArray_AS_STRING(buf), p + q, n - q)
            return 1
        PyByteArray_Resize(buf, old + n)
        memcpy(PyByteArray_AS_STRING(buf) + old, p, n)
        end = old + n
        # Every size prefix now buffered must be a frame's before anything is
        # emitted: a bad one means the stream is out of step from there, and
        # the Python code frames the packet instead (and resynchronizes).
        pos = kh.pos
        while True:
            st = _frame_at(<const unsigned char*>PyByteArray_AS_STRING(buf), pos, end, minimum, kh.max_frame_size,
                           &size)
            if st == FRAME_BAD_SIZE:
                PyByteArray_Resize(buf, old)
                return 0
            if st != FRAME_COMPLETE:
                break
            pos += 4 + size
        if ts is not None:
            kh.ts = ts
        kh.drain()
        kh.compact()
        return 1

    # -- classic pcap files ------------------------------------------------
    def read_pcap(self, fh, bint big_endian, uint64_t ticks, int linktype):
        """Read the records of a pcap file whose 24-byte header ``fh`` is past."""
        self.fh = fh
        self.big = big_endian
        self.scale = 1000000000 // ticks
        self.linktype = linktype
        self.blk = bytearray(_CAP_BLOCK)
        self.start = self.end = 0
        self.eof = False

    cdef int _fill(self, Py_ssize_t need) except -1:
        """At least ``need`` bytes buffered, unless the file ends first."""
        cdef Py_ssize_t have, cap, got
        while self.end - self.start < need and not self.eof:
            have = self.end - self.start
            if self.start:
                if have:
                    memmove(PyByteArray_AS_STRING(self.blk), PyByteArray_AS_STRING(self.blk) + self.start, have)
                self.start, self.end = 0, have
            cap = PyByteArray_GET_SIZE(self.blk)
            if self.end == cap:
                # a long record: grow as its bytes arrive, so a claimed length costs what the file holds
                PyByteArray_Resize(self.blk, min(need, 2 * cap))
                cap = PyByteArray_GET_SIZE(self.blk)
            mv = memoryview(self.blk)[self.end:cap]
            r = self.fh.readinto(mv)
            mv.release()
            got = r or 0
            if got <= 0:
                self.eof = True
            else:
                self.end += got
        return 0

    cdef int64_t _rest_of_file(self) except -1:
        """Read to the end of the file (into the block, whose bytes are done with)."""
        cdef int64_t rest = 0
        mv = memoryview(self.blk)
        try:
            while True:
                r = self.fh.readinto(mv)
                if not r:
                    return rest
                rest += r
        finally:
            mv.release()

    cdef _stop(self, why):
        self.error = why
        self.unread_bytes = self.end - self.start + self._rest_of_file()
        self.start = self.end
        self.eof = True

    def run(self):
        """Read records until the sink is full (True) or the file ends (False)."""
        cdef Py_ssize_t avail
        cdef const unsigned char* h
        cdef uint32_t sec, frac, incl
        cdef uint64_t ts
        cdef FrameSink sink = self.sink
        while True:
            self._fill(16)
            avail = self.end - self.start
            if avail == 0:
                break
            if avail < 16:
                self._stop(f"record header cut short after {self.records} records")
                break
            h = <const unsigned char*>PyByteArray_AS_STRING(self.blk) + self.start
            sec = _cap_ld32(h, self.big)
            frac = _cap_ld32(h + 4, self.big)
            incl = _cap_ld32(h + 8, self.big)
            if incl > _CAP_MAX_RECORD:
                self._stop(f"record {self.records + 1}: implausible captured length {incl}")
                break
            self._fill(16 + <Py_ssize_t>incl)
            avail = self.end - self.start
            if avail < 16 + <Py_ssize_t>incl:
                self._stop(f"record {self.records + 1} cut short: {avail - 16} of {incl} bytes")
                break
            self.records += 1
            ts = <uint64_t>sec * 1000000000 + <uint64_t>frac * self.scale
            h = <const unsigned char*>PyByteArray_AS_STRING(self.blk) + self.start
            self.start += 16 + incl
            self._packet(ts, self.linktype, h + 16, incl, None)
            if sink.nrows >= sink.batch_rows or sink.dlen >= sink.batch_bytes:
                self.flush()
                return True
        self.flush()
        return False


# -- the byte-range index ---------------------------------------------------
# The first stage of reading a capture in byte ranges: every TCP segment of
# the pcap records that start in a range, as a fixed-size row of positions
# (where its payload lies in the file, not the payload itself), so that what
# crosses between the stages is small; the second stage reads the payloads
# again, from the file mapped in memory, connection by connection.

cdef struct Pos:
    # 104 bytes (widest first): POS_FIELDS names them in order
    int64_t order           # the file's rank << 40 | the record's offset: capture order across files
    int64_t ts              # nanoseconds since the epoch
    int64_t key             # the connection (4-tuple, either direction) hashed; never 0
    int64_t seq
    int64_t ack
    int64_t length          # payload bytes on the wire
    int64_t at              # file offset of the payload's first byte
    int32_t caplen          # payload bytes captured (at most length)
    uint16_t sport
    uint16_t dport
    int16_t flags
    uint8_t family          # 4 or 6
    uint8_t pad
    uint8_t src[16]         # IPv4: the first 4 bytes
    uint8_t dst[16]
    uint8_t pad2[4]

POS_FIELDS = (("order", "<i8"), ("ts", "<i8"), ("key", "<i8"), ("seq", "<i8"), ("ack", "<i8"), ("length", "<i8"),
              ("at", "<i8"), ("caplen", "<i4"), ("sport", "<u2"), ("dport", "<u2"), ("flags", "<i2"),
              ("family", "u1"), ("pad", "u1"), ("src", "V16"), ("dst", "V16"), ("pad2", "V4"))
POS_DTYPE = np.dtype(list(POS_FIELDS))
assert POS_DTYPE.itemsize == sizeof(Pos)
OFFSET_BITS = 40


cdef int64_t _conn_key(int family, const unsigned char* a, uint16_t ap, const unsigned char* b,
                       uint16_t bp) noexcept nogil:
    """The same 63-bit key for both directions of a 4-tuple, in every process
    (FNV-1a over the family and the two endpoints, lower first); never 0."""
    cdef int alen = 4 if family == 4 else 16
    cdef int c = memcmp(a, b, alen)
    cdef const unsigned char* lo
    cdef const unsigned char* hi
    cdef uint16_t lp, hp
    cdef uint64_t h = 14695981039346656037ULL
    cdef int i
    if c < 0 or (c == 0 and ap <= bp):
        lo, lp, hi, hp = a, ap, b, bp
    else:
        lo, lp, hi, hp = b, bp, a, ap
    h = (h ^ <uint64_t>family) * 1099511628211ULL
    for i in range(alen):
        h = (h ^ lo[i]) * 1099511628211ULL
    h = (h ^ (lp >> 8)) * 1099511628211ULL
    h = (h ^ (lp & 0xFF)) * 1099511628211ULL
    for i in range(alen):
        h = (h ^ hi[i]) * 1099511628211ULL
    h = (h ^ (hp >> 8)) * 1099511628211ULL
    h = (h ^ (hp & 0xFF)) * 1099511628211ULL
    return <int64_t>((h >> 1) | 1)


def connection_key(int family, bytes a, int ap, bytes b, int bp):
    """The byte-range index's key of a 4-tuple (raw addresses of 4 or 16 bytes)."""
    return _conn_key(family, <const unsigned char*>PyBytes_AS_STRING(a), <uint16_t>ap,
                     <const unsigned char*>PyBytes_AS_STRING(b), <uint16_t>bp)


def index_pcap(buf, Py_ssize_t start, Py_ssize_t end, bint big_endian, uint64_t ticks, int linktype, int64_t rank):
    """The records of a classic pcap file (``buf``: all of it, e.g. mapped in
    memory) that start at ``start`` (a record boundary) and before ``end``.

    Returns ``(rows, others, reasons, stop, records, error)``: ``rows`` the
    TCP segments as :data:`POS_DTYPE`; ``others`` ``[(record offset, ts, data
    offset, length)]`` of the records the Python code must decode; ``reasons``
    counts of the records that are no TCP segment (decode_tcp's words);
    ``stop`` where reading stopped (the first record at or past ``end``, the
    end of the file, or damage); ``error`` what stopped it early, or None."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b = &view[0] if view.shape[0] else <const unsigned char*>b""
    cdef Py_ssize_t n = view.shape[0], p = start
    cdef uint32_t sec, frac, incl
    cdef uint64_t scale = 1000000000 // ticks
    cdef int64_t counts[N_REASONS]
    cdef int r, k
    cdef _Seg s
    cdef Pos* row
    cdef Py_ssize_t nrows = 0, cap = 0
    cdef int64_t records = 0
    cdef bytearray out = bytearray()
    error = None
    others = []
    for k in range(N_REASONS):
        counts[k] = 0
    while p < end:
        if n - p < 16:
            if n - p:
                error = f"record header cut short at byte {p}"
            break
        sec = _cap_ld32(b + p, big_endian)
        frac = _cap_ld32(b + p + 4, big_endian)
        incl = _cap_ld32(b + p + 8, big_endian)
        if incl > _CAP_MAX_RECORD:
            error = f"record at byte {p}: implausible captured length {incl}"
            break
        if n - p - 16 < <Py_ssize_t>incl:
            error = f"record at byte {p} cut short: {n - p - 16} of {incl} bytes"
            break
        records += 1
        r = _cap_parse(linktype, b + p + 16, incl, &s)
        if r < 0:
            counts[-r] += 1
        elif r == 0:
            others.append((p, sec * 1000000000 + frac * scale, p + 16, incl))
        else:
            if nrows == cap:
                cap = cap * 2 if cap else 4096
                PyByteArray_Resize(out, cap * sizeof(Pos))
            row = (<Pos*>PyByteArray_AS_STRING(out)) + nrows
            nrows += 1
            memset(row, 0, sizeof(Pos))
            row.order = (rank << 40) | p
            row.ts = <int64_t>(<uint64_t>sec * 1000000000 + <uint64_t>frac * scale)
            row.family = <uint8_t>s.family
            memcpy(row.src, b + p + 16 + s.src_at, 4 if s.family == 4 else 16)
            memcpy(row.dst, b + p + 16 + s.dst_at, 4 if s.family == 4 else 16)
            row.sport = s.sport
            row.dport = s.dport
            row.seq = s.seq
            row.ack = s.ack
            row.flags = s.flags
            row.length = s.length
            row.caplen = <int32_t>s.caplen
            row.at = p + 16 + s.payload_at
            row.key = _conn_key(s.family, row.src, s.sport, row.dst, s.dport)
        p += 16 + incl
    PyByteArray_Resize(out, nrows * sizeof(Pos))
    rows = np.frombuffer(out, dtype=POS_DTYPE) if nrows else np.zeros(0, dtype=POS_DTYPE)
    reasons = {_REASONS[k]: counts[k] for k in range(1, N_REASONS) if counts[k]}
    return rows, others, reasons, p, records, error


def pcap_boundary(buf, Py_ssize_t start, Py_ssize_t end, bint big_endian, uint64_t ticks, int64_t max_incl,
                  int64_t ref_sec, int confirm):
    """The first position in ``[start, end)`` of a pcap file (``buf``: all of
    it) where a record header is plausible (captured length at most
    ``max_incl`` and not above the original length, sub-second part below
    one tick second, time within a day of ``ref_sec`` when it is not
    negative) and the next ``confirm`` headers follow on from it (or the
    file ends exactly, or inside the last of them); -1 when none is."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b = &view[0] if view.shape[0] else <const unsigned char*>b""
    cdef Py_ssize_t n = view.shape[0], p, q
    cdef int i
    cdef int64_t sec, near
    cdef bint ok
    for p in range(start, min(end, n)):
        q = p
        near = ref_sec
        ok = True
        for i in range(confirm + 1):
            if q == n or (i > 0 and q > n):
                break  # the file ends exactly after a record, or inside the last one: confirmed
            if q > n - 16:
                ok = False
                break
            sec = _cap_ld32(b + q, big_endian)
            if _cap_ld32(b + q + 8, big_endian) > <uint64_t>max_incl or \
                    _cap_ld32(b + q + 12, big_endian) < _cap_ld32(b + q + 8, big_endian) or \
                    _cap_ld32(b + q + 12, big_endian) > _CAP_MAX_RECORD or \
                    _cap_ld32(b + q + 4, big_endian) >= ticks or \
                    (near >= 0 and (sec - near > 86400 or near - sec > 86400)):
                ok = False
                break
            near = sec
            q += 16 + <Py_ssize_t>_cap_ld32(b + q + 8, big_endian)
        if ok:
            return p
    return -1


# -- judging a candidate frame ----------------------------------------------
# The one walker of message bodies (messages/_walk.pxi) with a sink that keeps
# nothing: it only checks.  Resynchronization and detection judge a position
# by walking the candidate frame's header and the first bytes of its body, in
# C, a bounded amount of work per position.

ctypedef void* Dst

cdef inline Dst sk_field(Dst me, Op* op) noexcept nogil:
    return NULL

cdef inline Dst sk_item(Dst arr, int64_t i) noexcept nogil:
    return NULL

cdef inline int sk_int(Cur* c, Dst d, int kind, int64_t v) noexcept nogil:
    return 0

cdef inline int sk_float(Cur* c, Dst d, double v) noexcept nogil:
    return 0

cdef inline int sk_uuid(Cur* c, Dst d, const uint8_t* p) noexcept nogil:
    return 0

cdef inline int sk_str(Cur* c, Dst d, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_bytes(Cur* c, Dst d, Op* op, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_null(Cur* c, Dst d) noexcept nogil:
    return 0

cdef inline int sk_struct_begin(Cur* c, Dst d, Node* nd, Dst* me) noexcept nogil:
    me[0] = NULL
    return 0

cdef inline int sk_unknown_tag(Cur* c, Dst me, void** unknown, uint32_t tag, const uint8_t* p,
                               Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_wire_tag(Cur* c, Dst me, void** wire, uint32_t i, uint32_t count, uint32_t tag) noexcept nogil:
    return 0

cdef inline int sk_struct_end(Cur* c, Dst d, Dst me, Node* nd, void* unknown, void* wire) noexcept nogil:
    return 0

cdef inline void sk_struct_fail(Dst me, void* unknown, void* wire) noexcept nogil:
    pass

cdef inline int sk_array_begin(Cur* c, Dst d, Op* op, int64_t n, Dst* arr) noexcept nogil:
    arr[0] = NULL
    return 0

cdef inline int sk_int32s(Cur* c, Dst arr, const uint8_t* p, int64_t n) noexcept nogil:
    return 0

cdef inline int sk_array_end(Cur* c, Dst d, Dst arr, int64_t n) noexcept nogil:
    return 0

cdef inline void sk_array_fail(Dst arr, int64_t i, int64_t n) noexcept nogil:
    pass

cdef inline int sk_absent(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0

cdef inline int sk_default(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0

cdef inline int sk_retag(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0


include "kafkaproto/messages/_walk.pxi"


cdef class BodyCheck:
    """Judges a candidate frame by walking its header and body with the
    message programs, keeping nothing: the frame whole when it is at most
    ``limit`` bytes; a larger one as far as its first ``limit`` bytes go (a
    body cut there counts as reading), and only when the next frame's header
    right after it is plausible too, or nothing follows it yet.

    ``plan_of(is_request, api_key, version)`` gives the program of a message
    (a Plan of the compiled engine, or None); asked once per (kind, key,
    version).  ``header_tables``: the request and response header versions."""
    cdef object plan_of
    cdef dict plans
    cdef object hq, hr
    cdef const int8_t* hvq
    cdef const int8_t* hvr
    cdef int nq, nr
    cdef public Py_ssize_t limit

    def __init__(self, plan_of, request_headers, response_headers, Py_ssize_t limit=512):
        cdef const int8_t[:, ::1] q = request_headers
        cdef const int8_t[:, ::1] r = response_headers
        self.plan_of = plan_of
        self.plans = {}
        self.hq, self.hr = request_headers, response_headers
        self.hvq, self.hvr = &q[0, 0], &r[0, 0]
        self.nq, self.nr = q.shape[0], r.shape[0]
        self.limit = limit

    cdef Node* _node(self, bint req, int key, int version) except? NULL:
        cdef PyObject* hit
        k = (req << 24) | (key << 8) | version
        hit = PyDict_GetItem(self.plans, k)
        if hit == NULL:
            plan = self.plan_of(bool(req), key, version)
            if plan is not None and type(plan) is not Plan:
                plan = None
            self.plans[k] = plan
        else:
            plan = <object>hit
        if plan is None:
            return NULL
        return (<Plan>plan).node()

    cdef int judge(self, const unsigned char* b, Py_ssize_t p, Py_ssize_t n, bint is_request, Pairing pr,
                   int64_t max_frame_size, const unsigned char* versions, dict outstanding) except -2:
        """1: the frame at ``p`` reads; 0: it does not; -1: too few bytes yet."""
        cdef int64_t size = <int32_t>kp_ld32(b + p)
        cdef Py_ssize_t end = p + 4 + size, stop
        cdef Cur c
        cdef RequestHead h
        cdef int hv, key, version, r
        cdef Node* nd
        cdef PyObject* hit
        cdef int32_t slot
        if n < end:
            return -1
        if size > self.limit and n > end:
            r = _plausible(b, end, n, is_request, max_frame_size, versions, outstanding)
            if r != 1:
                return r
        stop = end if size <= self.limit else p + 4 + self.limit
        cur_init(&c, b, p + 4, stop)
        if is_request:
            key = <int16_t>kp_ld16(b + p + 4)
            version = <int16_t>kp_ld16(b + p + 6)
            if key < 0 or key >= self.nq or version < 0 or version > 63:
                return 0
            hv = self.hvq[64 * key + version]
            if hv < 0:
                return 0
            if cur_request_head(&c, hv, &h) or (hv >= 2 and cur_skip_tags(&c)):
                return _cut(&c, stop, end)
        else:
            if pr is None:
                return 0
            hit = PyDict_GetItem(pr.pending, <int32_t>kp_ld32(b + p + 4))
            if hit == NULL:
                return 0
            slot = <object>hit
            key = pr.slots[slot].api_key
            version = pr.slots[slot].api_version
            if key < 0 or key >= self.nr or version < 0 or version > 63:
                return 0
            hv = self.hvr[64 * key + version]
            if hv < 0:
                return 0
            c.pos += 4
            if hv >= 1 and cur_skip_tags(&c):
                return _cut(&c, stop, end)
        nd = self._node(is_request, key, version)
        if nd == NULL:
            return 0
        if _w_struct(&c, nd, NULL) == 0:
            return 1
        return _cut(&c, stop, end)


cdef inline int _cut(Cur* c, Py_ssize_t stop, Py_ssize_t end) noexcept nogil:
    """After a failed walk: 1 when only the end of the look cut it (the bytes
    or the elements it needed lie inside the frame), else 0."""
    if stop >= end or (c.fail != F_NEED and c.fail != F_COUNT):
        return 0
    # F_NEED: x bytes needed, y left before the look's end; F_COUNT: x elements, y bytes left
    return 1 if c.x - c.y <= end - stop else 0


cdef inline int _plausible(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, bint is_request,
                           int64_t max_frame_size, const unsigned char* v, dict outstanding) noexcept:
    """Could a frame start at ``p`` (its header bytes alone)?  1, 0, or -1: too few bytes to say."""
    cdef int64_t size
    cdef int16_t clen
    cdef int key, ver
    cdef Py_ssize_t i
    if is_request:
        if n - p < 8:
            return -1
        if b[p] > 6 or b[p + 4] != 0 or b[p + 6] != 0:
            return 0
        if n - p < 14:
            return -1
        size = <int32_t>kp_ld32(b + p)
        key = b[p + 5]
        ver = b[p + 7]
        clen = <int16_t>kp_ld16(b + p + 12)
        if size < 10 or (max_frame_size >= 0 and size > max_frame_size) or not (v[2 * key] <= ver <= v[2 * key + 1]) \
                or clen < -1 or 10 + (clen if clen > 0 else 0) > size:
            return 0
        if clen > 0:
            if n - p < 14 + clen:
                return -1
            for i in range(p + 14, p + 14 + clen):
                if b[i] < 0x20 or b[i] == 0x7F:
                    return 0
        return 1
    if n - p < 1:
        return -1
    if b[p] > 6:
        return 0
    if n - p < 8:
        return -1
    size = <int32_t>kp_ld32(b + p)
    if size < 4 or (max_frame_size >= 0 and size > max_frame_size):
        return 0
    if PyDict_GetItem(outstanding, <int32_t>kp_ld32(b + p + 4)) == NULL:
        return 0
    return 1


# -- resynchronization ------------------------------------------------------
# Where the next frame of an out-of-step direction could start
# (streams.KafkaHalf._resync, and detection's scan for a request).  Every
# position is judged in constant time on the header bytes; with a BodyCheck,
# the few positions that pass are judged by their frame too, still a bounded
# amount of work each, so a resynchronization costs time linear in the bytes
# it passes over, whatever they hold.

def find_frame_start(buf, Py_ssize_t pos, bint is_request, int64_t max_frame_size, bytes versions,
                     dict outstanding, BodyCheck check=None, Pairing pairing=None):
    """``(p, verdict)``: the first position ``p >= pos`` of ``buf`` where a
    frame could start -- ``verdict`` True: its header is plausible (requests:
    size in 10..max_frame_size, a key and version of ``versions``, a client id
    length inside the frame and a printable client id; responses: size in
    4..max_frame_size and a correlation id waiting in ``outstanding``) and,
    with ``check``, its frame reads (:class:`BodyCheck`; ``pairing``: the
    connection's, for a response's request); None: too few bytes yet to judge
    it -- or ``(-1, None)`` when no position can (for requests, the last 7
    bytes are never judged).  ``versions``: 512 bytes, the lowest and highest
    request version of each api key below 256 (highest below lowest: not
    known)."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b
    cdef const unsigned char* v = <const unsigned char*>PyBytes_AS_STRING(versions)
    cdef Py_ssize_t n = view.shape[0], p = pos, q
    cdef int r
    if PyBytes_GET_SIZE(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if n == 0 or p >= n:
        return -1, None
    b = &view[0]
    while p < n:
        if is_request:
            if p + 8 > n:
                return -1, None
            if b[p] > 6 or b[p + 4] != 0 or b[p + 6] != 0:
                p += 1
                continue
        elif b[p] > 6:
            p += 1
            continue
        r = _plausible(b, p, n, is_request, max_frame_size, v, outstanding)
        if r < 0:
            return p, None
        if r == 1 and check is not None:
            r = check.judge(b, p, n, is_request, pairing, max_frame_size, v, outstanding)
            if r < 0:
                return p, None
        if r == 1:
            return p, True
        if b[p] == 0 and p + 4 <= n and b[p + 1] == 0 and b[p + 2] == 0 and b[p + 3] == 0:
            # a run of zero bytes cannot hold a size prefix (size 0) until its last 3 bytes: skip it whole
            q = p
            while q < n and b[q] == 0:
                q += 1
            p = max(p + 1, q - 3)
            continue
        p += 1
    return -1, None
