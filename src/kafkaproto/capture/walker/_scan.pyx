# cython: language_level=3
# The capture walker: packets in, Kafka frames out as columns (one pass).
#
# Every packet is taken here, in C: its link, IP and TCP headers parsed in
# place (_packets), its segment reassembled (_tcp.Tcp, which Walker
# extends), the bytes of each direction held until the connection is known
# to be Kafka or not (detection), then framed (the frame rule of _wire.pxd),
# resynchronized after a gap or a size prefix that makes no sense (_judge),
# and every frame handed to the FrameSink (_sink), which pairs and numbers
# it.  No Python object is made per packet, segment or frame; a Kafka
# connection costs one Connection (made by the factory the layer above
# hands in), its Pairing and the KafkaState of each direction (the sink's).
#
# This module imports nothing from the layers above it: the connection
# factory, the accounting object, the sink and the judge (whose message
# programs come from above) are handed to it.  Its twin (_scan_py.py, over
# _tcp_py.py) is the same rule in Python.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.string cimport memcmp, memcpy, memmove, memset

from kafkaproto._wire cimport _frame_at, FRAME_BAD_SIZE, FRAME_COMPLETE
from kafkaproto.capture.walker._packets cimport _Seg, _cap_parse, endpoint_text, pcap_record, N_REASONS
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState, Pairing, FL_RESYNC
from kafkaproto.capture.walker._judge cimport BodyCheck, find_start, judge_claim
from kafkaproto.capture.walker._tcp cimport (
    Tcp, Conn, Half, Held, TO_HELD, TO_KAFKA, TO_OTHER, SKIP_GAP, SKIP_NOT_KAFKA, UNDECIDED, KAFKA, OTHER,
)
from kafkaproto.capture.walker._tcp import MAX_OPEN_CONNECTIONS, MAX_PENDING_BYTES, MAX_PENDING_TOTAL
from kafkaproto.capture.walker import _resume, snapshot

cdef extern from "Python.h":
    # the cyclic collector, paused while the walker runs (Python >= 3.10)
    int PyGC_Enable()
    int PyGC_Disable()

COMPILED = True

#: bytes per direction looked at to tell whether a connection is Kafka
DETECT_BYTES = 64 * 1024
cdef int64_t _DETECT = DETECT_BYTES
cdef int64_t NO_TS = INT64_MIN
cdef Py_ssize_t _BLOCK = 1 << 20
cdef Py_ssize_t _COMPACT = 1 << 16

_REASONS = (None, "malformed", "not_ip", "not_tcp", "ip_fragment", "unsupported_link")
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


cdef class Walker(Tcp):
    """Packets in, frames out, into ``sink``; counts in ``acc`` once flushed.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file in large blocks;
    ``segments(...)`` takes the TCP segments of the byte-range path as
    columns; ``stream(conn, data)`` the bytes of a raw stream of requests.

    What it needs from the layers above is handed to it: ``acc`` (an
    Accounting), ``sink`` (the FrameSink every frame lands in),
    ``connection_factory(id, client, server, first_ts)`` making a Kafka
    connection's object (its ends as ``ip:port`` or ``[ip]:port``; the ts
    None when unknown), ``check`` (the judge of a frame, a BodyCheck) and
    ``versions`` (512 bytes: the lowest and highest request version of each
    api key below 256).  ``ports``: the
    brokers' ports (a connection is Kafka when either end uses one); None:
    detect Kafka connections from their first bytes, each on its own.

    The state kept is bounded: ``max_open_connections`` open at once (past
    it the one opened first is closed: ``acc.evicted_connections``), the
    bytes waiting behind holes, ``max_pending_bytes`` per direction and
    ``max_pending_total`` in all (past either a hole is given up on:
    ``acc.gaps_forced``), the bytes held while detection decides whether a
    connection is Kafka count against ``max_pending_total`` too (past it the
    oldest undecided connection is judged on what it sent:
    ``acc.detections_forced``), and a claim a direction judges before it
    takes it holds at most ``max_pending_bytes`` meanwhile."""
    cdef readonly FrameSink sink
    cdef object factory
    cdef BodyCheck check
    cdef bytes versions
    cdef const unsigned char* vt
    cdef readonly int64_t max_frame_size
    cdef bint have_ports
    cdef unsigned char ports[8192]
    cdef Conn* und_head
    cdef Conn* und_tail
    cdef int64_t held_total
    cdef Conn* raw  # the connection of stream()
    # counts not added to the Accounting yet
    cdef int64_t n_packets, n_tcp, n_payload, n_not_kafka, n_gap, n_trunc_bytes, n_trunc_frames, n_detect_forced
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
        self.error = None

    def __dealloc__(self):
        if self.raw != NULL:
            self.on_free(self.raw)
            self._free_raw()

    cdef void _free_raw(self) noexcept:
        PyMem_Free(self.raw.h[0].buf)
        PyMem_Free(self.raw)
        self.raw = NULL

    # -- accounting --------------------------------------------------------
    def flush(self):
        """Add the counts kept here (and the sink's) to the Accounting."""
        cdef int k
        acc = self.acc
        self.flush_counts()
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
        self.sink.flush()

    # -- packets -----------------------------------------------------------
    def packet(self, ts, int linktype, data):
        """One packet (``data``: its bytes; ``ts``: nanoseconds, or None)."""
        cdef const unsigned char[::1] view = data
        cdef int gc = PyGC_Disable()
        try:
            self._packet(NO_TS if ts is None else <int64_t>ts, linktype,
                         &view[0] if view.shape[0] else <const unsigned char*>b"", view.shape[0])
        finally:
            if gc:
                PyGC_Enable()

    cdef int _packet(self, int64_t ts, int linktype, const unsigned char* d, Py_ssize_t n) except -1:
        cdef _Seg s
        cdef int r = _cap_parse(linktype, d, n, &s)
        self.n_packets += 1
        if r < 0:
            self.reasons[-r] += 1
            return 0
        self.n_tcp += 1
        self.n_payload += s.caplen
        return self.segment(ts, s.family, d + s.src_at, s.sport, d + s.dst_at, s.dport, s.seq, s.ack, s.flags,
                            d + s.payload_at, s.caplen, s.length)

    def segments(self, const int64_t[::1] ts, const int8_t[::1] family, const uint8_t[:, ::1] src,
                 const uint8_t[:, ::1] dst, const int32_t[::1] sport, const int32_t[::1] dport,
                 const int64_t[::1] seq, const int64_t[::1] ack, const int16_t[::1] flags,
                 const int64_t[::1] length, const int64_t[::1] at, const int32_t[::1] caplen, payload,
                 const int64_t[::1] keys=None, int64_t stop_bytes=-1):
        """TCP segments decoded elsewhere (the rows of the byte-range path),
        each counted as the packet it came from: columns ``ts`` int64
        (INT64_MIN: no time), ``family`` int8 (4 or 6), ``src``/``dst``
        uint8[n, 16] raw addresses, ports int32, ``seq``/``ack`` int64,
        ``flags`` int16, ``length`` int64 (bytes on the wire), ``at`` int64
        and ``caplen`` int32: where each payload lies in ``payload`` (any
        buffer: a capture file mapped in memory).  A row whose family is
        neither or whose payload lies outside ``payload`` counts as a
        malformed packet.

        ``keys`` (int64, each row's connection; rows grouped by it): where the
        key changes, the previous connection had its last segment and every
        connection closes; the call stops there, before the row, when the
        sink is :meth:`~FrameSink.full` or more than ``stop_bytes`` payload
        bytes were fed (``stop_bytes`` < 0: no such stop).  Returns the rows
        fed: ``n``, or the row it stopped before (the caller takes the
        sink's batch and calls again from there)."""
        cdef const unsigned char[::1] data = payload
        cdef Py_ssize_t n = ts.shape[0], size = data.shape[0]
        cdef const unsigned char* pd = &data[0] if size else <const unsigned char*>b""
        cdef int gc
        if family.shape[0] != n or src.shape[0] != n or dst.shape[0] != n or sport.shape[0] != n or \
                dport.shape[0] != n or seq.shape[0] != n or ack.shape[0] != n or flags.shape[0] != n or \
                length.shape[0] != n or at.shape[0] != n or caplen.shape[0] != n or \
                (n and (src.shape[1] != 16 or dst.shape[1] != 16)):
            raise ValueError("segment columns of different lengths, or addresses not of 16 bytes")
        if keys is not None and keys.shape[0] != n:
            raise ValueError("segment columns of different lengths, or addresses not of 16 bytes")
        cdef Py_ssize_t fed = n
        gc = PyGC_Disable()
        try:
            if keys is None:
                self._segments(ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, pd, size,
                               0, n)
            else:
                fed = self._connections(ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen,
                                        pd, size, keys, stop_bytes)
        finally:
            if gc:
                PyGC_Enable()
        self.flush()
        return fed

    cdef Py_ssize_t _connections(self, const int64_t[::1] ts, const int8_t[::1] family, const uint8_t[:, ::1] src,
                                 const uint8_t[:, ::1] dst, const int32_t[::1] sport, const int32_t[::1] dport,
                                 const int64_t[::1] seq, const int64_t[::1] ack, const int16_t[::1] flags,
                                 const int64_t[::1] length, const int64_t[::1] at, const int32_t[::1] caplen,
                                 const unsigned char* pd, Py_ssize_t size, const int64_t[::1] keys,
                                 int64_t stop_bytes) except -1:
        """:meth:`segments` with ``keys``: connection by connection."""
        cdef Py_ssize_t a = 0, b, i, n = ts.shape[0]
        cdef int64_t fed = 0
        while a < n:
            b = a + 1
            while b < n and keys[b] == keys[a]:
                b += 1
            if a:  # a new connection: the previous one had its last segment
                Tcp.close_all(self)
                if self.sink.full() or (0 <= stop_bytes < fed):
                    return a
            self._segments(ts, family, src, dst, sport, dport, seq, ack, flags, length, at, caplen, pd, size, a, b)
            for i in range(a, b):
                fed += caplen[i]
            a = b
        return n

    cdef int _segments(self, const int64_t[::1] ts, const int8_t[::1] family, const uint8_t[:, ::1] src,
                       const uint8_t[:, ::1] dst, const int32_t[::1] sport, const int32_t[::1] dport,
                       const int64_t[::1] seq, const int64_t[::1] ack, const int16_t[::1] flags,
                       const int64_t[::1] length, const int64_t[::1] at, const int32_t[::1] caplen,
                       const unsigned char* pd, Py_ssize_t size, Py_ssize_t lo, Py_ssize_t hi) except -1:
        cdef Py_ssize_t i
        cdef int64_t a, c
        for i in range(lo, hi):
            self.n_packets += 1
            a, c = at[i], caplen[i]
            if (family[i] != 4 and family[i] != 6) or a < 0 or c < 0 or a + c > size or c > length[i]:
                self.reasons[1] += 1
                continue
            self.n_tcp += 1
            self.n_payload += c
            self.segment(ts[i], family[i], &src[i, 0], <uint16_t>sport[i], &dst[i, 0], <uint16_t>dport[i],
                         <uint32_t>seq[i], <uint32_t>ack[i], <uint8_t>flags[i], pd + a, c, length[i])
        return 0

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

    # -- its whole state (walker/snapshot.py, the _resume unit) -------------
    def pairings(self):
        """The Pairing of each open Kafka connection (its ``conn``: the
        connection's object), oldest first."""
        cdef Conn* c = self.open_head
        out = []
        while c != NULL:
            if c.pairing != NULL:
                out.append(<object>c.pairing)
            c = c.next
        return out

    def limits(self):
        """What a saved state must have been saved with to load here."""
        cdef int p
        ports = [p for p in range(65536) if self._broker(p)] if self.have_ports else None
        return [self.max_frame_size, self.max_open_connections, self.max_pending_bytes, self.max_pending_total,
                ports, DETECT_BYTES]

    def save(self):
        """The walker's whole state as bytes (walker/snapshot.py): a walker made
        alike that loads them (:meth:`load`) goes on as this one would.  The
        counts are flushed to the Accounting first; the frames in the sink are
        not part of it (take them first)."""
        if self.raw != NULL:
            raise ValueError("the state of a raw stream is not saved")
        self.flush()
        return snapshot.dump(self.limits(), _resume.save_tcp(self, self.sink.clients))

    def load(self, data):
        """Take the state :meth:`save` wrote (by a walker with the same limits
        and ports; else WalkerStateError), before the first packet."""
        if self.nopen or self.nclosed or self.raw != NULL:
            raise ValueError("a walker loads a state before it takes its first packet")
        st = snapshot.load(data, self.limits())
        self.held_total = _resume.load_tcp(self, st, self.sink, self.factory, self.max_frame_size)

    # -- a raw stream of requests ------------------------------------------
    def stream(self, conn, data):
        """The next bytes of a raw stream of size-prefixed requests, one
        connection (``conn``, its object; the first call opens it), framed and
        resynchronized as a Kafka connection's requests are.  ``data`` None:
        the stream is over (its requests are never answered, so none counts
        as unanswered); a new one may start."""
        cdef const unsigned char[::1] view
        cdef Conn* c = self.raw
        cdef KafkaState kh
        if data is None:
            if c != NULL:
                self._drop_rest(c, 0)
                (<Pairing>c.pairing).take_waiting()
                self.on_free(c)
                self._free_raw()
            return
        if c == NULL:
            c = self.raw = <Conn*>PyMem_Malloc(sizeof(Conn))
            if c == NULL:
                raise MemoryError()
            memset(c, 0, sizeof(Conn))
            pairing = self.sink.connection(conn)
            kh = KafkaState(conn, pairing, self.sink, True, True, self.max_frame_size)
            Py_INCREF(conn)
            c.conn = <PyObject*>conn
            Py_INCREF(pairing)
            c.pairing = <PyObject*>pairing
            Py_INCREF(kh)
            c.h[0].kh = <PyObject*>kh
            c.h[0].target = TO_KAFKA
            c.h[0].synced = True
            c.h[0].unsure = True
            c.h[0].taken = -1
            c.h[0].ts = NO_TS
            c.state = KAFKA
        view = data
        if view.shape[0]:
            self._kafka_data(c, 0, NO_TS, &view[0], view.shape[0])

    # -- classic pcap files ------------------------------------------------
    def read_pcap(self, fh, bint big_endian, uint64_t ticks, int linktype):
        """Read the records of a pcap file whose 24-byte header ``fh`` is past
        (:meth:`run` reads them)."""
        self.fh = fh
        self.big = big_endian
        self.scale = 1000000000 // ticks
        self.linktype = linktype
        self.blk = bytearray(_BLOCK)
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
        cdef int gc
        if self.fh is None:
            return False
        # No reference cycle is made here, and the collector would scan the
        # connections' objects over and over (a fifth of the time on traffic
        # of short connections): paused, as the message decoder does.
        gc = PyGC_Disable()
        try:
            full = self._records()
        finally:
            if gc:
                PyGC_Enable()
        if not full:
            self.fh = None
            self.blk = None
        self.flush()
        return full

    cdef bint _records(self) except -1:
        cdef Py_ssize_t avail
        cdef const unsigned char* h
        cdef uint32_t incl
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
            if not pcap_record(h, self.big, self.scale, &ts, &incl):
                self._stop(f"record {self.records + 1}: implausible captured length {incl}")
                break
            self._fill(16 + <Py_ssize_t>incl)
            avail = self.end - self.start
            if avail < 16 + <Py_ssize_t>incl:
                self._stop(f"record {self.records + 1} cut short: {avail - 16} of {incl} bytes")
                break
            self.records += 1
            h = <const unsigned char*>PyByteArray_AS_STRING(self.blk) + self.start
            self.start += 16 + incl
            self._packet(<int64_t>ts, self.linktype, h + 16, incl)
            if sink.full():
                return True
        return False

    def finish(self):
        """The end of the capture: every open connection closes (oldest first)."""
        cdef int gc = PyGC_Disable()
        try:
            self.close_every()
        finally:
            if gc:
                PyGC_Enable()
        self.flush()

    def close_all(self):
        """Close every connection and forget them all (the byte-range path
        calls it after the last segment of a connection)."""
        cdef int gc = PyGC_Disable()
        try:
            Tcp.close_all(self)
        finally:
            if gc:
                PyGC_Enable()
        self.flush()
