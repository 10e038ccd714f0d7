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
# Frames land in a FrameSink (_sink): one fixed-size row per frame (time, connection,
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
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_GetItem, PyDict_DelItem, PyDict_Size
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from kafkaproto._wire cimport kp_st16, _frame_at, FRAME_COMPLETE, FRAME_BAD_SIZE
from kafkaproto.capture.walker._packets cimport (
    _Seg, _cap_parse, pcap_record, _FIN, _SYN, _RST, _ACK, N_REASONS,
)
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState

import numpy as np

COMPILED = True

cdef Py_ssize_t _CAP_BLOCK = 1 << 20
cdef Py_ssize_t _CAP_MAX_DIRS = 1 << 18

_REASONS = (None, "malformed", "not_ip", "not_tcp", "ip_fragment", "unsupported_link")


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


cdef class _FastDir:
    """One direction of a settled connection, as the fast path sees it."""
    cdef HalfState hs, ohs
    cdef KafkaState kh  # None: the connection is not Kafka


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
            self._packet(ts, self.linktype, h + 16, incl, None)
            if sink.nrows >= sink.batch_rows or sink.dlen >= sink.batch_bytes:
                self.flush()
                return True
        self.flush()
        return False
