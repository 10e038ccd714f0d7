# cython: language_level=3
# The compiled fast path of the capture layer (kafkaproto.capture: pcap
# reading, TCP reassembly, Kafka framing).
#
# The common case -- a packet of an established, settled connection whose
# segment is exactly the next expected one, with no SYN/FIN/RST and nothing
# waiting out of order -- is handled here in C.  Everything else goes to the
# Python code (Extractor.packet) unchanged, so behaviour and accounting stay
# those of the pure twin.  The state both paths work on is shared: the Python
# classes tcp.HalfStream and streams.KafkaHalf derive from the two core
# classes below when the compiled core is in use, so there is nothing to copy
# back and forth.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from kafkaproto._wire cimport kp_ld16, kp_ld32, kp_st16
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_DelItem, PyDict_Size, PyDict_Next
from cpython.object cimport PyObject

COMPILED = True

cdef enum:
    _FIN = 0x01
    _SYN = 0x02
    _RST = 0x04
    _ACK = 0x10

cdef Py_ssize_t _CAP_BLOCK = 1 << 20
cdef uint64_t _CAP_MAX_RECORD = 256 * 1024 * 1024
cdef Py_ssize_t _CAP_MAX_DIRS = 1 << 18


cdef class HalfStreamCore:
    """State of tcp.HalfStream (which derives from this class)."""
    cdef public object consumer, acc, base
    cdef public dict pending
    cdef public list heap
    cdef public int64_t next, pending_bytes, max_pending_bytes
    cdef public bint from_start, ended, fin


cdef class KafkaHalfCore:
    """State of streams.KafkaHalf (which derives from this class)."""
    cdef public object conn, sink, acc, skip_reason, ts
    cdef public bint is_request, synced
    cdef public bytearray buf
    cdef public Py_ssize_t pos
    cdef public int64_t base, max_frame_size


cdef class _FastDir:
    """One direction of a settled connection, as the fast path sees it."""
    cdef HalfStreamCore hs, ohs
    cdef KafkaHalfCore kh  # None: the connection is not Kafka


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


cdef int _cap_parse(int linktype, const unsigned char* d, Py_ssize_t n, _Seg* s) noexcept nogil:
    """1: a TCP segment the fast path may take (decoded exactly as decode_tcp
    would); 0: anything else (decode_tcp decides)."""
    cdef Py_ssize_t pos = 0, at, ihl, l4, doff, start
    cdef int etype
    cdef uint32_t fam, le, be
    cdef int64_t total, l4_len
    if linktype == 1:  # Ethernet
        if n < 14:
            return 0
        etype = kp_ld16(d + 12)
        pos = 14
        while etype == 0x8100 or etype == 0x88A8 or etype == 0x9100:
            if n < pos + 4:
                return 0
            etype = kp_ld16(d + pos + 2)
            pos += 4
    elif linktype == 113 or linktype == 276:  # Linux cooked SLL, SLL2
        if linktype == 113:
            pos, at = 16, 14
        else:
            pos, at = 20, 0
        if n < pos:
            return 0
        etype = kp_ld16(d + at)
    elif linktype == 0 or linktype == 108:  # BSD loopback
        if n < 4:
            return 0
        be = kp_ld32(d)
        le = _cap_ld32(d, False)
        fam = be if linktype == 108 else (le if le < 256 else be)
        etype = 0x0800 if fam == 2 else (0x86DD if fam == 24 or fam == 28 or fam == 30 else -1)
        pos = 4
    elif linktype == 101 or linktype == 12 or linktype == 14 or linktype == 228 or linktype == 229:
        if n < 1:
            return 0
        etype = 0x0800 if d[0] >> 4 == 4 else (0x86DD if d[0] >> 4 == 6 else -1)
    else:
        return 0
    if etype == 0x0800:
        if n < pos + 20:
            return 0
        ihl = (d[pos] & 0x0F) * 4
        if d[pos] >> 4 != 4 or ihl < 20 or n < pos + ihl:
            return 0
        total = kp_ld16(d + pos + 2)
        if total < ihl:
            return 0  # offload captures: decode_tcp's business
        if d[pos + 9] != 6 or (kp_ld16(d + pos + 6) & 0x3FFF):
            return 0
        s.family = 4
        s.src_at = pos + 12
        s.dst_at = pos + 16
        l4 = pos + ihl
        l4_len = total - ihl
    elif etype == 0x86DD:
        if n < pos + 40 or d[pos] >> 4 != 6:
            return 0
        l4_len = kp_ld16(d + pos + 4)
        if l4_len == 0 or d[pos + 6] != 6:
            return 0  # jumbograms, extension headers: decode_tcp's business
        s.family = 6
        s.src_at = pos + 8
        s.dst_at = pos + 24
        l4 = pos + 40
    else:
        return 0
    if l4_len < 20 or n < l4 + 20:
        return 0
    doff = (d[l4 + 12] >> 4) * 4
    if doff < 20 or doff > l4_len or n < l4 + doff:
        return 0
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
    """Feeds packets to a streams.Extractor, taking the common case in C.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file in large blocks.
    Counters of the fast path are kept here and added to the Accounting by
    :meth:`flush` (``run`` flushes before it returns with frames to yield).
    """
    cdef object ext, acc, out, flows, sink_packet
    cdef dict dirs
    cdef object CapturedFrame, NotKafka, REQUEST, RESPONSE, addr4, addr6, s_framed, s_unpaired, s_tcp, s_not_kafka
    cdef Py_ssize_t max_outstanding
    # deferred counters
    cdef int64_t n_packets, n_tcp, n_payload, n_framed, b_framed, n_unpaired, b_unpaired, b_not_kafka
    # pcap reading
    cdef object fh
    cdef bytearray blk
    cdef Py_ssize_t start, end
    cdef bint eof, big
    cdef uint64_t scale
    cdef int linktype
    cdef public object error
    cdef public int64_t unread_bytes, records

    def __init__(self, ext):
        from kafkaproto.capture import pcap, streams
        self.ext = ext
        self.acc = ext.acc
        self.out = ext.out
        self.flows = ext.flows
        self.sink_packet = ext.packet
        self.dirs = {}
        self.CapturedFrame = streams.CapturedFrame
        self.NotKafka = streams._NotKafka
        self.REQUEST = streams.REQUEST
        self.RESPONSE = streams.RESPONSE
        self.max_outstanding = streams.MAX_OUTSTANDING
        self.addr4 = pcap._addr4
        self.addr6 = pcap._addr6
        self.s_framed, self.s_unpaired, self.s_tcp, self.s_not_kafka = "framed", "unpaired", "tcp", "not_kafka"
        self.error = None

    # -- accounting --------------------------------------------------------
    def flush(self):
        """Add the fast path's counts to the Accounting."""
        acc = self.acc
        if self.n_packets:
            acc.packets_total += self.n_packets
            acc.payload_bytes_total += self.n_payload
            acc.packets[self.s_tcp] += self.n_tcp
            self.n_packets = self.n_tcp = self.n_payload = 0
        if self.n_framed:
            acc.frames[self.s_framed] += self.n_framed
            acc.bytes[self.s_framed] += self.b_framed
            self.n_framed = self.b_framed = 0
        if self.n_unpaired:
            acc.frames[self.s_unpaired] += self.n_unpaired
            acc.bytes[self.s_unpaired] += self.b_unpaired
            self.n_unpaired = self.b_unpaired = 0
        if self.b_not_kafka:
            acc.bytes[self.s_not_kafka] += self.b_not_kafka
            self.b_not_kafka = 0

    # -- packets -----------------------------------------------------------
    def packet(self, ts, int linktype, data):
        """One packet (``data``: bytes); frames land in the extractor's ``out``."""
        cdef const unsigned char[::1] view = data
        if view.shape[0] == 0:
            self.sink_packet(ts, linktype, data)
            return
        self._packet(ts, linktype, &view[0], view.shape[0], data)

    cdef _FastDir _lookup(self, _Seg* s, const unsigned char* d, bytes key):
        """The settled connection this segment belongs to, or None."""
        cdef _FastDir fd
        cdef Py_ssize_t alen = 4 if s.family == 4 else 16
        conv = self.addr4 if s.family == 4 else self.addr6
        src = (conv(PyBytes_FromStringAndSize(<const char*>d + s.src_at, alen)), s.sport)
        dst = (conv(PyBytes_FromStringAndSize(<const char*>d + s.dst_at, alen)), s.dport)
        flow = self.flows.get((src, dst) if src < dst else (dst, src))
        if flow is None or flow.closed or flow.state == "undecided":
            return None
        hs = flow.halves[src]
        ohs = flow.halves[dst]
        if not isinstance(hs, HalfStreamCore) or not isinstance(ohs, HalfStreamCore):
            return None
        target = flow.held[src].target
        fd = _FastDir()
        fd.hs = hs
        fd.ohs = ohs
        if isinstance(target, KafkaHalfCore):
            fd.kh = target
        elif type(target) is not self.NotKafka:
            return None
        if PyDict_Size(self.dirs) >= _CAP_MAX_DIRS:
            self.dirs.clear()  # only a cache: closed connections are dropped from it when seen again
        self.dirs[key] = fd
        return fd

    cdef int _packet(self, ts, int linktype, const unsigned char* d, Py_ssize_t n, data) except -1:
        cdef _Seg s
        cdef unsigned char kb[37]
        cdef Py_ssize_t alen
        cdef _FastDir fd
        cdef HalfStreamCore hs, ohs
        cdef PyObject* hit
        cdef uint32_t base
        if not _cap_parse(linktype, d, n, &s):
            return self._slow(ts, linktype, d, n, data)
        alen = 4 if s.family == 4 else 16
        kb[0] = <unsigned char>s.family
        memcpy(kb + 1, d + s.src_at, alen)
        memcpy(kb + 1 + alen, d + s.dst_at, alen)
        kp_st16(kb + 1 + 2 * alen, s.sport)
        kp_st16(kb + 3 + 2 * alen, s.dport)
        key = PyBytes_FromStringAndSize(<const char*>kb, 5 + 2 * alen)
        hit = PyDict_GetItem(self.dirs, key)
        if hit != NULL:
            fd = <_FastDir>hit
        else:
            if s.flags & (_SYN | _FIN | _RST):
                return self._slow(ts, linktype, d, n, data)
            fd = self._lookup(&s, d, key)
            if fd is None:
                return self._slow(ts, linktype, d, n, data)
        hs = fd.hs
        ohs = fd.ohs
        if hs.ended or ohs.ended:
            PyDict_DelItem(self.dirs, key)  # a closed connection: maybe replaced
            return self._slow(ts, linktype, d, n, data)
        if s.flags & (_SYN | _FIN | _RST):
            return self._slow(ts, linktype, d, n, data)
        if s.length:
            if hs.base is None or PyDict_Size(hs.pending) or s.caplen != s.length:
                return self._slow(ts, linktype, d, n, data)
            base = <uint32_t>hs.base
            if <uint32_t>(s.seq - base - <uint32_t>hs.next) != 0:
                return self._slow(ts, linktype, d, n, data)
        if (s.flags & _ACK) and ohs.base is not None and len(ohs.heap):
            return self._slow(ts, linktype, d, n, data)
        # the fast path: what Extractor.packet/segment and HalfStream.segment do here
        self.n_packets += 1
        self.n_tcp += 1
        self.n_payload += s.caplen
        if s.length:
            if fd.kh is None:
                self.b_not_kafka += s.caplen
            else:
                self._kafka_data(fd.kh, ts, d + s.payload_at, s.caplen)
            hs.next += s.caplen
        return 0

    cdef int _slow(self, ts, int linktype, const unsigned char* d, Py_ssize_t n, data) except -1:
        if data is None:
            data = PyBytes_FromStringAndSize(<const char*>d, n)
        self.sink_packet(ts, linktype, data)
        return 0

    # -- Kafka framing (KafkaHalf.data / _run / _emit) ----------------------
    cdef int _kafka_data(self, KafkaHalfCore kh, ts, const unsigned char* p, Py_ssize_t n) except -1:
        cdef bytearray buf = kh.buf
        cdef Py_ssize_t old = PyByteArray_GET_SIZE(buf), avail, pos
        cdef int32_t size, minimum
        cdef const unsigned char* b
        if ts is not None:
            kh.ts = ts
        PyByteArray_Resize(buf, old + n)
        memcpy(PyByteArray_AS_STRING(buf) + old, p, n)
        if not kh.synced:
            kh._run()
            return 0
        minimum = 8 if kh.is_request else 4
        while True:
            pos = kh.pos
            avail = PyByteArray_GET_SIZE(buf) - pos
            if avail < 4:
                break
            b = <const unsigned char*>PyByteArray_AS_STRING(buf) + pos
            size = <int32_t>kp_ld32(b)
            if size < minimum or size > kh.max_frame_size:
                kh._run()  # out of step: the Python code resynchronizes
                return 0
            if avail < 4 + <Py_ssize_t>size:
                break
            self._emit(kh, PyBytes_FromStringAndSize(<const char*>b + 4, size))
            kh.pos = pos + 4 + size
        pos = kh.pos
        if pos > 65536 or pos == PyByteArray_GET_SIZE(buf):
            del buf[:pos]
            kh.base += pos
            kh.pos = 0
        return 0

    cdef int _emit(self, KafkaHalfCore kh, bytes frame) except -1:
        cdef const unsigned char* f = <const unsigned char*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t n = len(frame)
        cdef dict out
        cdef PyObject* k
        cdef PyObject* v
        cdef Py_ssize_t it = 0
        conn = kh.conn
        offset = kh.base + kh.pos
        if kh.is_request:
            key = version = corr = None
            if n >= 8:
                key = <int16_t>kp_ld16(f)
                version = <int16_t>kp_ld16(f + 2)
                corr = <int32_t>kp_ld32(f + 4)
                out = conn.outstanding
                out.pop(corr, None)
                out[corr] = (key, version, kh.ts)
                if PyDict_Size(out) > self.max_outstanding:
                    PyDict_Next(out, &it, &k, &v)
                    oldest = <object>k
                    del out[oldest]
                    self.acc.unanswered_requests += 1
            fr = self.CapturedFrame(kh.ts, conn, self.REQUEST, offset, frame, key, version, corr)
            self.n_framed += 1
            self.b_framed += n + 4
        else:
            corr = <int32_t>kp_ld32(f)
            pending = conn.outstanding.pop(corr, None)
            if pending is None:
                fr = self.CapturedFrame(kh.ts, conn, self.RESPONSE, offset, frame, None, None, corr, None,
                                        "unpaired")
                self.n_unpaired += 1
                self.b_unpaired += n + 4
            else:
                fr = self.CapturedFrame(kh.ts, conn, self.RESPONSE, offset, frame, pending[0], pending[1], corr,
                                        pending[2])
                self.n_framed += 1
                self.b_framed += n + 4
        kh.sink(fr)
        return 0

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
        """Read records until some frames are ready (True) or the file ends (False)."""
        cdef Py_ssize_t avail
        cdef const unsigned char* h
        cdef uint32_t sec, frac, incl
        cdef uint64_t ts
        out = self.out
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
            if incl == 0:
                self.sink_packet(ts, self.linktype, b"")
            else:
                self._packet(ts, self.linktype, h + 16, incl, None)
            if out:
                self.flush()
                return True
        self.flush()
        return False
