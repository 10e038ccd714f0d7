# cython: language_level=3
# The walker's middle: what the reassembly (_tcp.Tcp, which Framer extends)
# tells of each connection becomes Kafka frames.  Detection holds a
# direction's first bytes until the connection is known to be Kafka or not
# (the brokers' ports, or the first bytes of each connection on its own),
# then replays them; framing takes each frame (the frame rule of _wire.pxd)
# and hands it to the FrameSink (_sink), resynchronizing after a gap or a
# size prefix that makes no sense (_judge).  The walker (_scan.Walker)
# extends Framer with what feeds it: packets, pcap records, segments as
# columns, a raw stream of requests, a saved state.  Its twin
# (_framing_py.py, over _tcp_py.py) is the same rule in Python.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, INT64_MIN
from libc.string cimport memcmp, memcpy, memmove, memset

from kafkaproto._wire cimport _frame_at, FRAME_BAD_SIZE, FRAME_COMPLETE
from kafkaproto.capture.walker._packets cimport endpoint_text
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState, Pairing, FL_RESYNC
from kafkaproto.capture.walker._judge cimport BodyCheck, find_start, judge_claim
from kafkaproto.capture.walker._tcp cimport (
    Tcp, Conn, Half, Held, TO_HELD, TO_KAFKA, TO_OTHER, SKIP_GAP, SKIP_NOT_KAFKA, UNDECIDED, KAFKA, OTHER,
)
from kafkaproto.capture.walker._tcp import MAX_OPEN_CONNECTIONS, MAX_PENDING_BYTES, MAX_PENDING_TOTAL

COMPILED = True

#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES = 64 * 1024
cdef int64_t _DETECT = DETECT_BYTES
cdef int64_t NO_TS = INT64_MIN
cdef Py_ssize_t _COMPACT = 1 << 16

cdef dict _NO_REQUESTS = {}


cdef int _grow(unsigned char** buf, Py_ssize_t* cap, Py_ssize_t need) except -1:
    """``buf`` holds ``need`` bytes at least."""
    cdef Py_ssize_t c = cap[0]
    cdef unsigned char* b
    if need <= c:
        return 0
    c = c * 2 if c else 256
    while c < need:
        c *= 2
    b = <unsigned char*>PyMem_Realloc(buf[0], c)
    if b == NULL:
        raise MemoryError()
    buf[0] = b
    cap[0] = c
    return 0


cdef class Framer(Tcp):
    """The reassembly's connections made Kafka frames, into ``sink``: see
    :class:`~kafkaproto.capture.walker._scan.Walker`, which extends it, for
    what is handed in and the bounds kept."""

    def __init__(self, acc, FrameSink sink, connection_factory, BodyCheck check, bytes versions, ports=None, *,
                 int64_t max_frame_size=104857600, Py_ssize_t max_open_connections=MAX_OPEN_CONNECTIONS,
                 int64_t max_pending_bytes=MAX_PENDING_BYTES, int64_t max_pending_total=MAX_PENDING_TOTAL):
        Tcp.__init__(self, acc, max_open_connections=max_open_connections, max_pending_bytes=max_pending_bytes,
                     max_pending_total=max_pending_total)
        if PyBytes_GET_SIZE(versions) != 512:
            raise ValueError("versions must be 512 bytes")
        self.sink = sink
        self.factory = connection_factory
        self.check = check
        self.versions = versions
        self.vt = <const unsigned char*>PyBytes_AS_STRING(versions)
        self.max_frame_size = max_frame_size
        memset(self.ports, 0, sizeof(self.ports))
        self.have_ports = ports is not None
        if ports is not None:
            for p in ports:
                if 0 <= p < 65536:
                    self.ports[p >> 3] |= 1 << (p & 7)

    cdef int flush_counts(self) except -1:
        acc = self.acc
        Tcp.flush_counts(self)
        if self.n_not_kafka:
            acc.bytes["not_kafka"] += self.n_not_kafka
            self.n_not_kafka = 0
        if self.n_gap:
            acc.bytes["gap"] += self.n_gap
            self.n_gap = 0
        if self.n_trunc_bytes:
            acc.bytes["truncated"] += self.n_trunc_bytes
            self.n_trunc_bytes = 0
        if self.n_trunc_frames:
            acc.frames["truncated"] += self.n_trunc_frames
            self.n_trunc_frames = 0
        if self.n_detect_forced:
            acc.detections_forced += self.n_detect_forced
            self.n_detect_forced = 0
        return 0

    def limits(self):
        """What a saved state must have been saved with to load here."""
        cdef int p
        ports = [p for p in range(65536) if self._broker(p)] if self.have_ports else None
        return [self.max_frame_size, self.max_open_connections, self.max_pending_bytes, self.max_pending_total,
                ports, DETECT_BYTES]

    # -- what the reassembly tells ----------------------------------------
    cdef int on_new(self, Conn* c) except -1:
        c.h[0].ts = c.h[1].ts = NO_TS
        c.h[0].target = c.h[1].target = TO_HELD
        c.undecided = True
        c.unext = NULL
        c.uprev = self.und_tail
        if self.und_tail != NULL:
            self.und_tail.unext = c
        else:
            self.und_head = c
        self.und_tail = c
        return 0

    cdef void _unlink_undecided(self, Conn* c) noexcept:
        if not c.undecided:
            return
        c.undecided = False
        if c.uprev != NULL:
            c.uprev.unext = c.unext
        else:
            self.und_head = c.unext
        if c.unext != NULL:
            c.unext.uprev = c.uprev
        else:
            self.und_tail = c.uprev
        c.uprev = c.unext = NULL

    cdef void on_free(self, Conn* c) noexcept:
        cdef int side
        self._unlink_undecided(c)
        for side in range(2):
            if c.h[side].target == TO_HELD:
                self.held_total -= c.h[side].nbytes
            Py_XDECREF(c.h[side].kh)
            c.h[side].kh = NULL
        Py_XDECREF(c.conn)
        Py_XDECREF(c.pairing)
        c.conn = c.pairing = NULL

    cdef int on_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Half* h = &c.h[side]
        if h.target == TO_KAFKA:
            return self._kafka_data(c, side, ts, p, n)
        if h.target == TO_OTHER:
            self.n_not_kafka += n
            return 0
        return self._held_data(c, side, ts, p, n)

    cdef int on_gap(self, Conn* c, int side, int64_t n) except -1:
        cdef Half* h = &c.h[side]
        if h.target == TO_KAFKA:
            return self._kafka_gap(c, side, n)
        if h.target == TO_HELD:
            return self._held_item(h, NO_TS, n, True)
        return 0

    cdef int on_end(self, Conn* c, int side) except -1:
        if c.h[side].target == TO_HELD:
            self._decide(c, True)
        if c.h[side].target == TO_KAFKA:
            self._drop_rest(c, side)
        return 0

    cdef int on_close(self, Conn* c) except -1:
        if c.state == UNDECIDED:
            self._decide(c, True)
        if c.pairing != NULL:
            self.sink.close(<Pairing>c.pairing)
            Py_XDECREF(c.pairing)
            c.pairing = NULL
        return 0

    # -- detection ---------------------------------------------------------
    cdef int _held_item(self, Half* h, int64_t ts, int64_t n, bint gap) except -1:
        cdef Held* items
        if h.nitems == h.items_cap:
            items = <Held*>PyMem_Realloc(h.items, (h.items_cap * 2 + 4) * sizeof(Held))
            if items == NULL:
                raise MemoryError()
            h.items = items
            h.items_cap = h.items_cap * 2 + 4
        h.items[h.nitems].ts = ts
        h.items[h.nitems].n = n
        h.items[h.nitems].gap = gap
        h.nitems += 1
        return 0

    cdef int _held_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Half* h = &c.h[side]
        self._held_item(h, ts, n, False)
        _grow(&h.data, &h.dcap, h.dlen + n)
        memcpy(h.data + h.dlen, p, n)
        h.dlen += n
        h.nbytes += n
        self.held_total += n
        self._decide(c, False)
        if self.held_total > self.max_pending_total:
            self._judge_oldest()
        return 0

    cdef int _judge_oldest(self) except -1:
        """More bytes are held for detection than ``max_pending_total``: judge
        the connections waited on longest with what they sent so far."""
        cdef Conn* c
        while self.held_total > self.max_pending_total and self.und_head != NULL:
            c = self.und_head
            self.n_detect_forced += 1
            self._decide(c, True)
            self._unlink_undecided(c)
        return 0

    cdef inline bint _broker(self, uint16_t port) noexcept:
        return (self.ports[port >> 3] >> (port & 7)) & 1

    cdef int _scan_requests(self, Half* h) except -2:
        """A request frame that reads somewhere in the first DETECT_BYTES held
        (the resynchronization rule)?  1, 0, or -1: maybe, later.  The scan
        resumes where the last one could not decide."""
        cdef Py_ssize_t n = h.dlen if h.dlen < _DETECT else _DETECT, p
        cdef int v
        p = find_start(h.data, h.scanned, n, True, self.max_frame_size, self.vt, _NO_REQUESTS, self.check, None,
                       self.max_pending_bytes, &v)
        if p >= 0 and v == 1:
            return 1
        if p >= 0:
            h.scanned = p
            return -1
        if n - 7 > h.scanned:
            h.scanned = n - 7
        return -1 if n < _DETECT else 0

    cdef int _request_start(self, Half* h) except -2:
        """Could a request start at the first byte held?  1, 0, or -1: not
        enough bytes to say yet (its header alone is judged)."""
        cdef Py_ssize_t n = h.dlen if h.dlen < _DETECT else _DETECT, p
        cdef int v
        p = find_start(h.data, 0, n, True, self.max_frame_size, self.vt, _NO_REQUESTS, None, None, 0, &v)
        if p == 0 and v == 1:
            return 1
        if p == 0 or (p < 0 and n < 14):
            return -1
        return 0

    cdef int _decide(self, Conn* c, bint final) except -1:
        """Settle whether the connection is Kafka, and which end is the client."""
        cdef int cl, sv, v, side
        if c.state != UNDECIDED:
            return 0
        if c.port[0] == c.port[1] and memcmp(c.addr, c.addr + 16, 16) == 0:
            # a socket connected to itself (TCP self-connect): one stream, no client
            # and server to tell apart, so not a Kafka conversation
            return self._settle(c, False)
        if self.have_ports:
            if self._broker(c.port[0]) or self._broker(c.port[1]):
                if c.client < 0:
                    c.client = 1 if self._broker(c.port[0]) and not self._broker(c.port[1]) else 0
                return self._settle(c, True)
            return self._settle(c, False)
        # Each connection is judged on its own packets alone (no endpoint
        # learnt from other connections): that is what lets connections be
        # reassembled in parallel, in any grouping, with the same verdicts.
        if c.client >= 0:
            cl = c.client
            sv = 1 - cl
            if c.h[sv].nbytes and not c.h[cl].nbytes:
                return self._settle(c, False)  # the server spoke first: Kafka clients always do
            v = self._request_start(&c.h[cl]) if c.d[cl].from_start else self._scan_requests(&c.h[cl])
            if v < 0 and (final or c.h[cl].nbytes >= _DETECT):
                v = 0
            if v >= 0:
                self._settle(c, v == 1)
            return 0
        # caught mid-stream: whichever side carries decodable requests is the client
        for side in range(2):
            if self._scan_requests(&c.h[side]) == 1:
                c.client = side
                return self._settle(c, True)
        # give up once both sides sent enough, or one side alone a lot (bounded memory)
        if final or (c.h[0].nbytes >= _DETECT and c.h[1].nbytes >= _DETECT) or c.h[0].nbytes >= 16 * _DETECT \
                or c.h[1].nbytes >= 16 * _DETECT:
            self._settle(c, False)
        return 0

    cdef int _settle(self, Conn* c, bint kafka) except -1:
        cdef int cl, sv, side
        cdef KafkaState kh
        self._unlink_undecided(c)
        if not kafka:
            c.state = OTHER
            self._release(c, 0, TO_OTHER)
            self._release(c, 1, TO_OTHER)
            return 0
        # counted as a Kafka connection (by the sink) once a frame of it is made
        c.state = KAFKA
        cl = c.client
        sv = 1 - cl
        conn = self.factory(c.id, endpoint_text(c.family, c.addr + 16 * cl, c.port[cl]),
                            endpoint_text(c.family, c.addr + 16 * sv, c.port[sv]),
                            None if c.first_ts == NO_TS else c.first_ts)
        pairing = self.sink.connection(conn)
        Py_INCREF(conn)
        c.conn = <PyObject*>conn
        Py_INCREF(pairing)
        c.pairing = <PyObject*>pairing
        for side in (cl, sv):
            kh = KafkaState(conn, pairing, self.sink, side == cl, c.d[side].from_start, self.max_frame_size)
            Py_INCREF(kh)
            c.h[side].kh = <PyObject*>kh
            c.h[side].synced = c.d[side].from_start
            c.h[side].unsure = side == cl and c.d[side].from_start
            c.h[side].skip = SKIP_GAP
            self._release(c, side, TO_KAFKA)
        return 0

    cdef int _release(self, Conn* c, int side, uint8_t target) except -1:
        """The direction's bytes go to ``target`` from now on: those held first."""
        cdef Half* h = &c.h[side]
        cdef Held* items = h.items
        cdef unsigned char* data = h.data
        cdef Py_ssize_t n = h.nitems, i, at = 0
        h.target = target
        self.held_total -= h.nbytes
        h.items = NULL
        h.data = NULL
        h.nitems = h.items_cap = h.dlen = h.dcap = 0
        try:
            for i in range(n):
                if items[i].gap:
                    self.on_gap(c, side, items[i].n)
                else:
                    self.on_data(c, side, items[i].ts, data + at, items[i].n)
                    at += items[i].n
        finally:
            PyMem_Free(items)
            PyMem_Free(data)
        return 0

    # -- framing -----------------------------------------------------------
    # A direction of a Kafka connection: its bytes not framed yet are
    # ``buf[pos:len]`` (``base``: the stream offset of buf[0]).  In step
    # (``synced``), a frame is taken at its word -- except the first request
    # of a connection seen from its start and a request claiming more than
    # the judge's limit, which are judged first (judge_claim): a claimed
    # size never hides the frames behind it.  Out of step (after a gap, or a
    # size prefix that makes no sense), the next plausible frame is looked
    # for (find_start) and the bytes passed over are counted (``skip``).

    cdef int _kafka_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1:
        cdef Half* h = &c.h[side]
        cdef KafkaState kh = <KafkaState>h.kh
        cdef int64_t minimum = 8 if kh.is_request else 4
        cdef Py_ssize_t q = 0
        cdef int32_t size
        if ts != NO_TS:
            h.ts = ts
        if h.synced and not h.unsure and h.pos == h.len:
            # nothing buffered: frame straight from the packet, keep only the rest
            h.base += h.len
            h.pos = h.len = 0
            while _frame_at(p, q, n, minimum, self.max_frame_size, &size) == FRAME_COMPLETE:
                if kh.is_request and size > self.check.limit and h.base + q != h.taken:
                    break  # to be judged first
                self._emit(h, kh, p + q + 4, size, h.base + q)
                q += 4 + size
            h.base += q
            if q == n:
                return 0
        _grow(&h.buf, &h.cap, h.len + n - q)
        memcpy(h.buf + h.len, p + q, n - q)
        h.len += n - q
        return self._run(c, side)

    cdef inline int _emit(self, Half* h, KafkaState kh, const unsigned char* f, Py_ssize_t n,
                          int64_t offset) except -1:
        return self.sink.add_at(kh, f, n, offset, h.ts, NO_TS)

    cdef int _run(self, Conn* c, int side) except -1:
        cdef Half* h = &c.h[side]
        while True:
            if h.synced:
                if self._frames(h):
                    h.synced = False
                    h.unsure = False
                    h.skip = SKIP_NOT_KAFKA
                    continue
                break
            if not self._resync(h):
                break
        # drop the framed bytes once they are all of them, or many and more than what is left
        if h.pos == h.len or (h.pos > _COMPACT and 2 * h.pos > h.len):
            if h.pos < h.len:
                memmove(h.buf, h.buf + h.pos, h.len - h.pos)
            h.base += h.pos
            h.len -= h.pos
            h.pos = 0
        return 0

    cdef int _frames(self, Half* h) except -1:
        """Frame the bytes buffered (a direction in step): each whole frame
        goes to the sink.  1: a size prefix that makes no sense, or a frame
        judged to be none, stopped it (``pos`` is there); 0: the rest is a
        partial frame."""
        cdef KafkaState kh = <KafkaState>h.kh
        cdef int64_t minimum = 8 if kh.is_request else 4
        cdef int32_t size
        cdef int st, v
        cdef Py_ssize_t wait
        while True:
            st = _frame_at(h.buf, h.pos, h.len, minimum, self.max_frame_size, &size)
            if st == FRAME_BAD_SIZE:
                return 1
            if h.len - h.pos < 4:
                return 0
            if kh.is_request and (h.unsure or (size > self.check.limit and h.base + h.pos != h.taken)):
                if h.base + h.len < h.claim_wait:
                    return 0  # too few bytes yet to say more than last time
                v = judge_claim(h.buf, h.pos, h.len, self.max_frame_size, self.vt, self.check,
                                self.max_pending_bytes, &wait)
                if v < 0:
                    h.claim_wait = h.base + wait
                    return 0
                h.claim_wait = 0
                if v == 0:
                    return 1
                h.unsure = False
                h.taken = h.base + h.pos
            if st != FRAME_COMPLETE:
                return 0
            self._emit(h, kh, h.buf + h.pos + 4, size, h.base + h.pos)
            h.pos += 4 + size

    cdef int _resync(self, Half* h) except -1:
        """Look for the next plausible frame; True when found (in step)."""
        cdef KafkaState kh = <KafkaState>h.kh
        cdef Pairing pr = kh.pairing
        cdef Py_ssize_t p, wait = 0
        cdef int v
        if h.base + h.len < h.claim_wait:
            return False  # too few bytes yet to say more than last time
        p = find_start(h.buf, h.pos, h.len, kh.is_request, self.max_frame_size, self.vt, pr.pending, self.check,
                       pr, self.max_pending_bytes, &v, &wait)
        if p < 0:
            p = h.len - (7 if kh.is_request else 0)
            self._skip(h, p if p > h.pos else h.pos)
            return False
        self._skip(h, p)
        if v < 0:  # wait for more bytes before judging this position
            h.claim_wait = h.base + wait
            return False
        h.claim_wait = 0
        h.synced = True
        kh.flags |= FL_RESYNC
        return True

    cdef void _skip(self, Half* h, Py_ssize_t p) noexcept:
        if p > h.pos:
            if h.skip == SKIP_GAP:
                self.n_gap += p - h.pos
            else:
                self.n_not_kafka += p - h.pos
            h.pos = p

    cdef int _drop_rest(self, Conn* c, int side) except -1:
        """The bytes not framed are lost (a gap, or the end): a partial frame
        when in step (``truncated``), else as what skipped bytes count as."""
        cdef Half* h = &c.h[side]
        cdef Py_ssize_t rest = h.len - h.pos
        if rest:
            if h.synced:
                self.n_trunc_bytes += rest
                if rest >= 4:
                    self.n_trunc_frames += 1
            elif h.skip == SKIP_GAP:
                self.n_gap += rest
            else:
                self.n_not_kafka += rest
        h.base += h.len
        h.pos = h.len = 0
        return 0

    cdef int _kafka_gap(self, Conn* c, int side, int64_t n) except -1:
        cdef Half* h = &c.h[side]
        self._drop_rest(c, side)
        h.base += n
        h.synced = False
        h.unsure = False
        h.claim_wait = 0
        h.skip = SKIP_GAP
        return 0
