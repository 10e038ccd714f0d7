# cython: language_level=3
# The capture walker: packets in, Kafka frames out as columns (one pass).
#
# Every packet is taken here, in C: its link, IP and TCP headers parsed in
# place (_packets), its segment reassembled (_tcp.Tcp), the bytes of each
# direction held until the connection is known to be Kafka or not, then
# framed and every frame handed to the FrameSink (_sink), which pairs and
# numbers it (_framing.Framer, which Walker extends).  What this unit adds
# is what feeds it: single packets, the records of a classic pcap file read
# in large blocks, TCP segments indexed elsewhere as columns, a raw stream
# of requests, and a whole state saved and loaded (_resume).  No Python
# object is made per packet, segment or frame; a Kafka connection costs one
# Connection (made by the factory the layer above hands in), its Pairing
# and the KafkaState of each direction (the sink's).
#
# This module imports nothing from the layers above it: the connection
# factory, the accounting object, the sink and the judge (whose message
# programs come from above) are handed to it.  Its twin (_scan_py.py, over
# _framing_py.py and _tcp_py.py) is the same rule in Python.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.string cimport memmove, memset

from kafkaproto.capture.walker._packets cimport _Seg, _cap_parse, pcap_record, N_REASONS
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState, Pairing
from kafkaproto.capture.walker._tcp cimport Tcp, Conn, TO_KAFKA, KAFKA
from kafkaproto.capture.walker._framing cimport Framer
from kafkaproto.capture.walker._tcp import MAX_OPEN_CONNECTIONS, MAX_PENDING_BYTES, MAX_PENDING_TOTAL
from kafkaproto.capture.walker._framing import DETECT_BYTES
from kafkaproto.capture.walker import _resume, snapshot

cdef extern from "Python.h":
    # the cyclic collector, paused while the walker runs (Python >= 3.10)
    int PyGC_Enable()
    int PyGC_Disable()

COMPILED = True

cdef int64_t NO_TS = INT64_MIN
cdef Py_ssize_t _BLOCK = 1 << 16  # stays in the core's cache (1 MiB blocks: the reads were a fifth of a bulk decode)

_REASONS = (None, "malformed", "not_ip", "not_tcp", "ip_fragment", "unsupported_link")


cdef class Walker(Framer):
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
    cdef Conn* raw  # the connection of stream()
    # counts not added to the Accounting yet
    cdef int64_t n_packets, n_tcp, n_payload
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
