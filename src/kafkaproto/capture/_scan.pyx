# cython: language_level=3
# The compiled fast path of the capture layer (kafkaproto.capture: pcap
# reading, TCP reassembly, Kafka framing).
#
# The common case -- a packet of an established, settled connection whose
# segment is exactly the next expected one, with no SYN/FIN/RST and nothing
# waiting out of order -- is handled here in C.  Everything else goes to the
# Python code (the ``packet`` callback, Extractor.packet) unchanged, so
# behaviour and accounting stay those of the pure twin.
#
# This module sits below the Python capture layer and imports nothing from
# it: the frame record type, the direction names, the callbacks and the
# accounting object are handed to CaptureScanner when it is made.  The state
# both paths work on lives in the two small state classes below, which the
# Python classes hold (tcp.HalfStream.state, streams.KafkaHalf.state) and
# the fast path reads and advances directly, so there is nothing to copy back
# and forth.  The twin (_scan_py.py) has the same classes in plain Python.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_st16, Cur, RequestHead, cur_init, cur_request_head, _frame_at, FRAME_COMPLETE, FRAME_BAD_SIZE,
)
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


cdef class KafkaState:
    """Framing state of one direction of a Kafka connection (held by
    streams.KafkaHalf as ``state``).

    ``buf[pos:]`` holds the bytes not framed yet, ``base`` is the stream
    offset of ``buf[0]``, ``ts`` the time of the latest bytes; ``outstanding``
    is the connection's ``{correlation id: RequestInfo}``, shared by its two
    directions; ``sink`` takes each frame made."""
    cdef public object conn, sink, ts
    cdef public dict outstanding
    cdef public bint is_request, synced
    cdef public bytearray buf
    cdef public Py_ssize_t pos
    cdef public int64_t base, max_frame_size
    # the last client id seen on this direction: its bytes and its str (a
    # connection rarely changes it, so the str is made once)
    cdef bytes client_raw
    cdef object client_id

    def __init__(self, conn, dict outstanding, sink, bint is_request, bint synced, int64_t max_frame_size):
        self.conn = conn
        self.outstanding = outstanding
        self.sink = sink
        self.is_request = is_request
        self.synced = synced
        self.max_frame_size = max_frame_size
        self.buf = bytearray()
        self.pos = 0
        self.base = 0
        self.ts = None


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
    """Feeds packets to the Python capture layer, taking the common case in C.

    ``packet(ts, linktype, data)`` takes one packet; ``read_pcap(...)`` then
    ``run()`` read the records of a classic pcap file in large blocks.
    Counters of the fast path are kept here and added to the Accounting by
    :meth:`flush` (``run`` flushes before it returns with frames to yield).

    What the scanner needs from the layer above is handed to it here:

    ``packet(ts, linktype, data)``
        takes a packet the fast path does not (Extractor.packet);
    ``lookup(family, src, sport, dst, dport)``
        the state of a settled connection's direction (addresses as 4 or 16
        raw bytes): ``(half, other_half, kafka)`` -- the two HalfStates and
        the sending direction's KafkaState, None when the connection is not
        Kafka -- or None while the Python code must see its packets;
    ``acc``, ``out``
        the Accounting, and the list frames land in (the Extractor's);
    ``frame_type``, ``request``, ``response``, ``max_outstanding``
        the frame record (called as ``frame_type(ts, conn, direction,
        offset, frame, api_key, api_version, correlation_id, request_ts,
        status, client_id, request)``), the two direction values, and how
        many requests a connection may have waiting before the oldest counts
        as unanswered;
    ``request_type``, ``header_table``
        what a waiting request is kept as (``request_type(api_key,
        api_version, ts, client_id)``, RequestInfo), and the request header
        versions (kafkaproto.protocol.header_table: int8[api keys, 64]) that
        say where a request's client id is.
    """
    cdef object acc, out, sink_packet, lookup
    cdef dict dirs
    cdef object frame_type, REQUEST, RESPONSE, s_framed, s_unpaired, s_tcp, s_not_kafka, request_type
    cdef Py_ssize_t max_outstanding
    cdef object headers        # keeps the header table alive
    cdef const int8_t* hv
    cdef int nkeys
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

    def __init__(self, packet, lookup, acc, list out, frame_type, request, response, Py_ssize_t max_outstanding,
                 request_type, header_table):
        cdef const int8_t[:, ::1] hv = header_table
        self.headers = header_table
        self.hv = &hv[0, 0]
        self.nkeys = hv.shape[0]
        self.request_type = request_type
        self.sink_packet = packet
        self.lookup = lookup
        self.acc = acc
        self.out = out
        self.frame_type = frame_type
        self.REQUEST = request
        self.RESPONSE = response
        self.max_outstanding = max_outstanding
        self.dirs = {}
        # the Accounting's ledger keys (kafkaproto.capture.accounting)
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
        """One packet (``data``: bytes); frames land in ``out``."""
        cdef const unsigned char[::1] view = data
        if view.shape[0] == 0:
            self.sink_packet(ts, linktype, data)
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
        if not _cap_parse(linktype, d, n, &s) or not self._fast(ts, &s, d + s.src_at, d + s.dst_at, d + s.payload_at):
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

    def segments(self, ts, src, dst, sport, dport, seq, ack, flags, length, payload_offsets, payload, slow):
        """TCP segments decoded elsewhere (a batch of the segment path's rows):
        the fast path takes what it can, ``slow(i)`` gets row ``i`` otherwise
        (Extractor.tcp).  Columns: ``ts`` int64 (no nulls), ``src``/``dst``
        raw addresses (bytes objects, 4 or 16 long), ports, ``seq``/``ack``
        int64, ``flags`` int16, ``length`` int64 (bytes on the wire),
        ``payload_offsets`` int32/int64 offsets (n + 1) into ``payload``."""
        cdef const int64_t[::1] t = ts
        cdef const int32_t[::1] sp = sport
        cdef const int32_t[::1] dp = dport
        cdef const int64_t[::1] sq = seq
        cdef const int64_t[::1] ak = ack
        cdef const int16_t[::1] fl = flags
        cdef const int64_t[::1] ln = length
        cdef const int64_t[::1] po = payload_offsets
        cdef const unsigned char[::1] data = payload
        cdef Py_ssize_t i, n = t.shape[0]
        cdef _Seg s
        cdef bytes a, b
        cdef const unsigned char* pd = &data[0] if data.shape[0] else NULL
        for i in range(n):
            a = src[i]
            b = dst[i]
            if PyBytes_GET_SIZE(a) == 4 and PyBytes_GET_SIZE(b) == 4:
                s.family = 4
            elif PyBytes_GET_SIZE(a) == 16 and PyBytes_GET_SIZE(b) == 16:
                s.family = 6
            else:
                slow(i)
                continue
            s.sport = <uint16_t>sp[i]
            s.dport = <uint16_t>dp[i]
            s.seq = <uint32_t>sq[i]
            s.ack = <uint32_t>ak[i]
            s.flags = <uint8_t>fl[i]
            s.caplen = po[i + 1] - po[i]
            s.length = ln[i]
            if not self._fast(t[i], &s, <const unsigned char*>PyBytes_AS_STRING(a),
                              <const unsigned char*>PyBytes_AS_STRING(b), pd + po[i] if pd != NULL else pd):
                slow(i)
        self.flush()

    cdef int _slow(self, ts, int linktype, const unsigned char* d, Py_ssize_t n, data) except -1:
        if data is None:
            data = PyBytes_FromStringAndSize(<const char*>d, n)
        self.sink_packet(ts, linktype, data)
        return 0

    # -- Kafka framing (KafkaHalf.data / _run / _emit) ----------------------
    cdef int _kafka_data(self, KafkaState kh, ts, const unsigned char* p, Py_ssize_t n) except -1:
        """Frame ``p[:n]``, the next bytes of ``kh``'s stream: 1, or 0 when
        the Python code must take the packet (``kh`` is then as it was)."""
        cdef bytearray buf = kh.buf
        cdef Py_ssize_t old = PyByteArray_GET_SIZE(buf), pos, end
        cdef int32_t size
        cdef int64_t minimum = 8 if kh.is_request else 4
        cdef int st
        if not kh.synced:
            return 0  # resynchronizing is the Python code's business
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
        while True:
            pos = kh.pos
            # buf's storage may move while a frame is emitted (Python code runs): take it again each time
            if _frame_at(<const unsigned char*>PyByteArray_AS_STRING(buf), pos, end, minimum, kh.max_frame_size,
                         &size) != FRAME_COMPLETE:
                break
            self._emit(kh, PyBytes_FromStringAndSize(PyByteArray_AS_STRING(buf) + pos + 4, size))
            kh.pos = pos + 4 + size
        pos = kh.pos
        if pos > 65536 or pos == end:
            del buf[:pos]
            kh.base += pos
            kh.pos = 0
        return 1

    cdef object _client_id(self, KafkaState kh, const unsigned char* f, Py_ssize_t n):
        """The client id of a request frame (None where request_client_id says None)."""
        cdef Cur c
        cdef RequestHead h
        cdef int key = <int16_t>kp_ld16(f), version = <int16_t>kp_ld16(f + 2), hv
        if key < 0 or key >= self.nkeys or version < 0 or version > 63:
            return None
        hv = self.hv[64 * key + version]
        if hv < 1:
            return None
        cur_init(&c, f, 0, n)
        if cur_request_head(&c, hv, &h) or h.client_id_len < 0:
            return None
        raw = kh.client_raw
        if raw is not None and PyBytes_GET_SIZE(raw) == h.client_id_len and \
                memcmp(PyBytes_AS_STRING(raw), f + h.client_id_at, h.client_id_len) == 0:
            return kh.client_id
        kh.client_raw = PyBytes_FromStringAndSize(<const char*>(f + h.client_id_at), h.client_id_len)
        kh.client_id = kh.client_raw.decode("utf-8")
        return kh.client_id

    cdef int _emit(self, KafkaState kh, bytes frame) except -1:
        # streams.request_frame / response_frame, the pairing's one rule, for the fast path
        cdef const unsigned char* f = <const unsigned char*>PyBytes_AS_STRING(frame)
        cdef Py_ssize_t n = len(frame)
        cdef dict out
        cdef PyObject* k
        cdef PyObject* v
        cdef Py_ssize_t it = 0
        conn = kh.conn
        offset = kh.base + kh.pos
        if kh.is_request:
            if n < 8:
                fr = self.frame_type(kh.ts, conn, self.REQUEST, offset, frame)
            else:
                key = <int16_t>kp_ld16(f)
                version = <int16_t>kp_ld16(f + 2)
                corr = <int32_t>kp_ld32(f + 4)
                cid = self._client_id(kh, f, n) if n >= 10 else None
                info = self.request_type(key, version, kh.ts, cid)
                out = kh.outstanding
                out.pop(corr, None)
                out[corr] = info
                if PyDict_Size(out) > self.max_outstanding:
                    PyDict_Next(out, &it, &k, &v)
                    oldest = <object>k
                    del out[oldest]
                    self.acc.unanswered_requests += 1
                fr = self.frame_type(kh.ts, conn, self.REQUEST, offset, frame, key, version, corr, None,
                                     self.s_framed, cid, info)
            self.n_framed += 1
            self.b_framed += n + 4
        else:
            corr = <int32_t>kp_ld32(f)
            info = kh.outstanding.pop(corr, None)
            if info is None:
                fr = self.frame_type(kh.ts, conn, self.RESPONSE, offset, frame, None, None, corr, None,
                                     self.s_unpaired)
                self.n_unpaired += 1
                self.b_unpaired += n + 4
            else:
                fr = self.frame_type(kh.ts, conn, self.RESPONSE, offset, frame, info.api_key, info.api_version, corr,
                                     info.ts, self.s_framed, info.client_id, info)
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


# -- resynchronization ------------------------------------------------------
# Where the next frame of an out-of-step direction could start
# (streams.KafkaHalf._resync, and detection's scan for a request).  Every
# position is judged in constant time on the header bytes alone; the whole
# frame's decode is left to the caller, for the few positions that pass.

def find_frame_start(buf, Py_ssize_t pos, bint is_request, int64_t max_frame_size, bytes versions,
                     dict outstanding):
    """``(p, verdict)``: the first position ``p >= pos`` of ``buf`` where a
    frame could start -- ``verdict`` True: its header is plausible (requests:
    size in 10..max_frame_size, a key and version of ``versions``, a client id
    length inside the frame and a printable client id; responses: size in
    4..max_frame_size and a correlation id waiting in ``outstanding``), None:
    too few bytes yet to judge it -- or ``(-1, None)`` when no position can
    (for requests, the last 7 bytes are never judged).  ``versions``: 512
    bytes, the lowest and highest request version of each api key below 256
    (highest below lowest: not known)."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b
    cdef const unsigned char* v = <const unsigned char*>PyBytes_AS_STRING(versions)
    cdef Py_ssize_t n = view.shape[0], p = pos, i
    cdef int64_t size
    cdef int16_t clen
    cdef int key, ver
    if PyBytes_GET_SIZE(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if n == 0 or p >= n:
        return -1, None
    b = &view[0]
    if is_request:
        while p + 8 <= n:
            if b[p] > 6 or b[p + 4] != 0 or b[p + 6] != 0:
                p += 1
                continue
            if n - p < 14:
                return p, None
            size = <int32_t>kp_ld32(b + p)
            key = b[p + 5]
            ver = b[p + 7]
            clen = <int16_t>kp_ld16(b + p + 12)
            if size < 10 or (max_frame_size >= 0 and size > max_frame_size) or not (v[2 * key] <= ver <= v[2 * key + 1]) or \
                    clen < -1 or 10 + (clen if clen > 0 else 0) > size:
                p += 1
                continue
            if clen > 0:
                if n - p < 14 + clen:
                    return p, None
                for i in range(p + 14, p + 14 + clen):
                    if b[i] < 0x20 or b[i] == 0x7F:
                        break
                else:
                    return p, True
                p += 1
                continue
            return p, True
        return -1, None
    while p < n:
        if b[p] > 6:
            p += 1
            continue
        if n - p < 8:
            return p, None
        size = <int32_t>kp_ld32(b + p)
        if size < 4 or (max_frame_size >= 0 and size > max_frame_size) or PyDict_GetItem(outstanding, <int32_t>kp_ld32(b + p + 4)) == NULL:
            p += 1
            continue
        return p, True
    return -1, None
