# cython: language_level=3
# The walker's reassembly: TCP segments in capture order (possibly out of
# order, retransmitted, overlapping, cut by the snap length) to an in-order
# byte stream per direction, and the life of each connection -- the
# handshake, FIN/RST and the close of both directions, a 4-tuple reused by a
# new connection, eviction of the connection opened first past
# ``max_open_connections``, a bounded memory of closed connections (a late
# packet of one is a duplicate).  Everything lives in C: a connection is a
# struct found by its 4-tuple in a hash table, the segments waiting behind a
# hole are copied into C memory, and no Python object is made per packet or
# per segment.
#
# Sequence numbers are unwrapped to 64-bit stream offsets (offset 0 is the
# byte after the SYN, or the first byte seen for a connection caught
# mid-stream).  The first copy of a byte wins; later copies count as
# ``duplicate``.  Segments ahead of a hole wait, at most
# ``max_pending_bytes`` per direction and ``max_pending_total`` in all (past
# either, the direction that has waited longest gives up its first hole:
# ``gaps_forced``); a hole becomes a gap when a limit is passed, when the
# other side acknowledges data past it (the receiver had the bytes, so the
# capture lost them), or at the end.
#
# What a direction's bytes become is the walker's business (_framing.Framer
# extends Tcp, _scan.Walker extends Framer): it is told of each connection, each chunk of data, each gap,
# the end of each direction and the close of each connection through the
# on_* methods.  The twin (_tcp_py.py) is the same rule in Python.

from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

COMPILED = True

#: connections open at once, at most: past it the one opened first is closed
#: (counted as ``evicted_connections``; its later packets start a new one)
MAX_OPEN_CONNECTIONS = 1 << 17
#: bytes waiting behind holes, per direction and in all
MAX_PENDING_BYTES = 8 << 20
MAX_PENDING_TOTAL = 256 << 20
#: closed connections remembered (their late packets count as duplicate)
MAX_CLOSED = 1 << 16
cdef Py_ssize_t _MAX_CLOSED = MAX_CLOSED


cdef inline int64_t _offset(Dir* d, uint32_t seq) noexcept nogil:
    """The stream offset of ``seq``: the one within 2 GiB of the next expected."""
    return d.next + <int32_t>(<uint32_t>(seq - d.base - <uint32_t>d.next))


cdef inline bint _before(Piece* a, Piece* b) noexcept nogil:
    return a.off < b.off or (a.off == b.off and a.serial < b.serial)


cdef int _heap_push(Dir* d, Piece* p) except -1:
    cdef Piece* h
    cdef Py_ssize_t i, up
    if d.nheap == d.heap_cap:
        h = <Piece*>PyMem_Realloc(d.heap, (d.heap_cap * 2 + 4) * sizeof(Piece))
        if h == NULL:
            raise MemoryError()
        d.heap = h
        d.heap_cap = d.heap_cap * 2 + 4
    i = d.nheap
    d.nheap += 1
    while i > 0:
        up = (i - 1) >> 1
        if not _before(p, &d.heap[up]):
            break
        d.heap[i] = d.heap[up]
        i = up
    d.heap[i] = p[0]
    return 0


cdef void _heap_pop(Dir* d, Piece* out) noexcept nogil:
    cdef Py_ssize_t i = 0, c, n
    cdef Piece last
    out[0] = d.heap[0]
    d.nheap -= 1
    n = d.nheap
    if n == 0:
        return
    last = d.heap[n]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _before(&d.heap[c + 1], &d.heap[c]):
            c += 1
        if not _before(&d.heap[c], &last):
            break
        d.heap[i] = d.heap[c]
        i = c
    d.heap[i] = last


cdef inline uint64_t _hash(Conn* k) noexcept nogil:
    cdef uint64_t h = (<uint64_t>k.family << 32) ^ (<uint64_t>k.port[0] << 16) ^ k.port[1]
    cdef uint64_t w
    cdef int i
    h *= 0x9E3779B97F4A7C15ULL
    for i in range(4):
        memcpy(&w, k.addr + 8 * i, 8)
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 33
    return h | 1


cdef inline bint _same(Conn* a, Conn* b) noexcept nogil:
    return a.hash == b.hash and a.family == b.family and a.port[0] == b.port[0] and a.port[1] == b.port[1] \
        and memcmp(a.addr, b.addr, 32) == 0


cdef void _free_half(Half* h) noexcept:
    PyMem_Free(h.items)
    PyMem_Free(h.data)
    PyMem_Free(h.buf)
    h.items = NULL
    h.data = NULL
    h.buf = NULL
    h.nitems = h.items_cap = h.dlen = h.dcap = h.len = h.cap = h.pos = 0


cdef class Tcp:
    """Connections by their 4-tuple and the reassembly of each direction,
    in C (see the module's text); a Walker extends it.  ``acc``: the
    Accounting its counts go to (:meth:`flush`)."""

    def __cinit__(self):
        self.table = NULL
        self.tcap = self.tused = 0

    def __init__(self, acc, *, Py_ssize_t max_open_connections=MAX_OPEN_CONNECTIONS,
                 int64_t max_pending_bytes=MAX_PENDING_BYTES, int64_t max_pending_total=MAX_PENDING_TOTAL):
        self.acc = acc
        self.max_open_connections = max(1, max_open_connections)
        self.max_pending_bytes = max_pending_bytes
        self.max_pending_total = max_pending_total

    def __dealloc__(self):
        cdef Conn* c
        cdef Py_ssize_t i
        if self.table != NULL:
            for i in range(self.tcap):
                c = self.table[i]
                if c != NULL:
                    self._free_conn(c)
            PyMem_Free(self.table)
            self.table = NULL

    @property
    def open_connections(self):
        """Connections open now."""
        return self.nopen

    @property
    def pending_bytes(self):
        """Bytes waiting behind holes now, in all."""
        return self.pool_bytes

    def finish(self):
        """The end of the capture: every open connection closes (oldest first)."""
        self.close_every()

    def close_all(self):
        """Close every connection and forget them all (the byte-range path
        calls it after the last segment of a connection)."""
        cdef Py_ssize_t i
        self.close_every()
        for i in range(self.tcap):
            while self.table[i] != NULL:
                self.forget(self.table[i])

    def flush(self):
        """Add the counts kept here to the Accounting."""
        self.flush_counts()

    cdef int flush_counts(self) except -1:
        acc = self.acc
        if self.n_duplicate or self.dup_seen:
            # (a copy with no byte captured is a duplicate too: the ledger names it)
            acc.bytes["duplicate"] += self.n_duplicate
            self.n_duplicate = 0
            self.dup_seen = False
        if self.n_gaps:
            acc.gaps += self.n_gaps
            acc.missing_bytes += self.n_missing
            self.n_gaps = self.n_missing = 0
        if self.n_gaps_forced:
            acc.gaps_forced += self.n_gaps_forced
            self.n_gaps_forced = 0
        if self.n_connections:
            acc.connections += self.n_connections
            self.n_connections = 0
        if self.n_evicted:
            acc.evicted_connections += self.n_evicted
            self.n_evicted = 0
        if self.n_syn_only:
            acc.syn_only += self.n_syn_only
            self.n_syn_only = 0
        return 0

    # -- what the walker is told (overridden) -------------------------------
    cdef int on_new(self, Conn* c) except -1:
        return 0

    cdef int on_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1:
        return 0

    cdef int on_gap(self, Conn* c, int side, int64_t n) except -1:
        return 0

    cdef int on_end(self, Conn* c, int side) except -1:
        return 0

    cdef int on_close(self, Conn* c) except -1:
        return 0

    cdef void on_free(self, Conn* c) noexcept:
        pass

    # -- the table ---------------------------------------------------------
    cdef Conn* _find(self, Conn* key) noexcept:
        cdef Py_ssize_t mask, i
        cdef Conn* c
        if self.tcap == 0:
            return NULL
        mask = self.tcap - 1
        i = key.hash & mask
        while True:
            c = self.table[i]
            if c == NULL:
                return NULL
            if _same(c, key):
                return c
            i = (i + 1) & mask

    cdef int _insert(self, Conn* c) except -1:
        cdef Conn** old = self.table
        cdef Conn** t
        cdef Py_ssize_t cap = self.tcap, i, j, mask
        if (self.tused + 1) * 2 > self.tcap:
            cap = self.tcap * 2 if self.tcap else 1024
            t = <Conn**>PyMem_Malloc(cap * sizeof(Conn*))
            if t == NULL:
                raise MemoryError()
            memset(t, 0, cap * sizeof(Conn*))
            mask = cap - 1
            for i in range(self.tcap):
                if old[i] != NULL:
                    j = old[i].hash & mask
                    while t[j] != NULL:
                        j = (j + 1) & mask
                    t[j] = old[i]
            self.table = t
            self.tcap = cap
            PyMem_Free(old)
        mask = self.tcap - 1
        i = c.hash & mask
        while self.table[i] != NULL:
            i = (i + 1) & mask
        self.table[i] = c
        self.tused += 1
        return 0

    cdef void _remove(self, Conn* c) noexcept:
        # linear probing: the entries after the hole move back where they belong
        cdef Py_ssize_t mask = self.tcap - 1, i, j, k
        i = c.hash & mask
        while self.table[i] != c:
            i = (i + 1) & mask
        self.table[i] = NULL
        self.tused -= 1
        j = i
        while True:
            j = (j + 1) & mask
            if self.table[j] == NULL:
                return
            k = self.table[j].hash & mask
            if (i <= j and (k <= i or k > j)) or (i > j and k <= i and k > j):
                self.table[i] = self.table[j]
                self.table[j] = NULL
                i = j

    cdef void _free_conn(self, Conn* c) noexcept:
        cdef int side
        cdef Py_ssize_t i
        self.on_free(c)
        for side in range(2):
            for i in range(c.d[side].nheap):
                PyMem_Free(c.d[side].heap[i].data)
            PyMem_Free(c.d[side].heap)
            _free_half(&c.h[side])
        PyMem_Free(c)

    # -- connections -------------------------------------------------------
    cdef Conn* _open(self, Conn* key, int64_t ts) except NULL:
        """A new connection (the one opened first is closed when too many are open)."""
        cdef Conn* c
        while self.nopen >= self.max_open_connections:
            # constant work per new connection: the one opened first is closed
            # (its frames so far are kept; its later packets start a new connection)
            c = self.open_head
            self.close(c)
            self.forget(c)
            self.n_evicted += 1
        self.next_id += 1
        self.n_connections += 1
        key.id = self.next_id
        key.first_ts = ts
        c = self._restore(key, False)
        self.on_new(c)
        return c

    cdef Conn* _restore(self, Conn* key, bint closed) except NULL:
        """A connection with ``key``'s 4-tuple (and hash, when it has one), id
        and first time, the newest of the open connections (or, a saved
        state's, of the closed ones: walker._resume); the rest of its state is
        the caller's to fill."""
        cdef Conn* c = <Conn*>PyMem_Malloc(sizeof(Conn))
        cdef int side
        if c == NULL:
            raise MemoryError()
        memset(c, 0, sizeof(Conn))
        c.family = key.family
        c.port[0], c.port[1] = key.port[0], key.port[1]
        memcpy(c.addr, key.addr, 32)
        c.hash = key.hash if key.hash else _hash(c)
        c.id = key.id
        c.first_ts = key.first_ts
        c.client = -1
        c.state = UNDECIDED
        for side in range(2):
            c.d[side].conn = c
            c.d[side].side = side
            c.h[side].taken = -1
        self._insert(c)
        c.closed = closed
        if closed:
            c.prev = self.closed_tail
            if self.closed_tail != NULL:
                self.closed_tail.next = c
            else:
                self.closed_head = c
            self.closed_tail = c
            self.nclosed += 1
        else:
            c.prev = self.open_tail
            if self.open_tail != NULL:
                self.open_tail.next = c
            else:
                self.open_head = c
            self.open_tail = c
            self.nopen += 1
        return c

    cdef int close(self, Conn* c) except -1:
        """The connection is over (both directions end; it joins the closed ones)."""
        cdef Conn* old
        if c.closed:
            return 0
        c.closed = True
        # from the open connections to the closed ones
        if c.prev != NULL:
            c.prev.next = c.next
        else:
            self.open_head = c.next
        if c.next != NULL:
            c.next.prev = c.prev
        else:
            self.open_tail = c.prev
        self.nopen -= 1
        c.next = NULL
        c.prev = self.closed_tail
        if self.closed_tail != NULL:
            self.closed_tail.next = c
        else:
            self.closed_head = c
        self.closed_tail = c
        self.nclosed += 1
        if self.nclosed > _MAX_CLOSED:
            self.forget(self.closed_head)
        self._half_close(c, 0)
        self._half_close(c, 1)
        self.on_close(c)
        if (c.d[0].from_start or c.d[1].from_start) and not (c.d[0].next or c.d[0].nheap or c.d[1].next or
                                                             c.d[1].nheap):
            self.n_syn_only += 1  # a connection attempt that carried no byte either way
        return 0

    cdef int forget(self, Conn* c) except -1:
        """Drop a connection from every list and free it."""
        cdef int side
        cdef Dir* d
        if c.closed:
            if c.prev != NULL:
                c.prev.next = c.next
            else:
                self.closed_head = c.next
            if c.next != NULL:
                c.next.prev = c.prev
            else:
                self.closed_tail = c.prev
            self.nclosed -= 1
        else:
            if c.prev != NULL:
                c.prev.next = c.next
            else:
                self.open_head = c.next
            if c.next != NULL:
                c.next.prev = c.prev
            else:
                self.open_tail = c.prev
            self.nopen -= 1
        for side in range(2):
            d = &c.d[side]
            if d.pending:
                self._pending(d, -d.pending)
            elif d.waiting:
                self._pending(d, 0)
        self._remove(c)
        self._free_conn(c)
        return 0

    cdef int close_every(self) except -1:
        while self.open_head != NULL:
            self.close(self.open_head)
        return 0

    # -- packets -----------------------------------------------------------
    cdef int segment(self, int64_t ts, int family, const unsigned char* src, uint16_t sport,
                     const unsigned char* dst, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                     const unsigned char* payload, Py_ssize_t caplen, int64_t length) except -1:
        """One TCP segment (addresses: 4 or 16 raw bytes by ``family``;
        ``caplen`` of its ``length`` payload bytes captured, at ``payload``)."""
        cdef Conn key
        cdef Conn* c
        cdef int alen = 4 if family == 4 else 16, cmp, s, o
        cdef bint syn_only = (flags & (T_SYN | T_ACK)) == T_SYN
        cmp = memcmp(src, dst, alen)
        if cmp == 0:
            cmp = (sport > dport) - (sport < dport)
        s = 0 if cmp <= 0 else 1
        o = 0 if cmp == 0 else 1 - s  # a socket connected to itself: one direction
        key.family = family
        memset(key.addr, 0, 32)
        memcpy(key.addr + 16 * s, src, alen)
        memcpy(key.addr + 16 * (1 - s), dst, alen)
        key.port[s] = sport
        key.port[1 - s] = dport
        key.hash = _hash(&key)
        c = self._find(&key)
        if c != NULL and syn_only and (c.closed or (c.d[s].has_base and c.d[s].base != <uint32_t>(seq + 1))):
            # the 4-tuple is reused by a new connection
            self.close(c)
            self.forget(c)
            c = NULL
        if c == NULL:
            c = self._open(&key, ts)
        if c.closed:
            self._dup(caplen)
            return 0
        if flags & T_SYN:
            if not c.d[s].has_base:
                c.d[s].base = seq + 1
                c.d[s].has_base = True
                c.d[s].from_start = True
            if syn_only and c.client < 0:
                c.client = s
        if length:
            # data on a SYN (TCP Fast Open) starts after the SYN's sequence number
            self._half(c, s, ts, <uint32_t>(seq + 1) if flags & T_SYN else seq, payload, caplen, length)
        if flags & T_ACK:
            self._acked(c, o, ack)
        if flags & T_RST:
            self.close(c)
        elif flags & T_FIN:
            c.fins |= 1 << s
            if c.fins == 3:
                self.close(c)
        return 0

    # -- one direction -----------------------------------------------------
    cdef int _half(self, Conn* c, int side, int64_t ts, uint32_t seq, const unsigned char* payload,
                   Py_ssize_t caplen, int64_t length) except -1:
        cdef Dir* d = &c.d[side]
        cdef int64_t off, cut
        cdef Piece piece
        if d.ended:
            self._dup(caplen)
            return 0
        if not d.has_base:
            d.base = seq
            d.has_base = True
        off = _offset(d, seq)
        if off == d.next and d.nheap == 0:
            return self._deliver(c, side, ts, off, payload, caplen, length)
        if off + length <= d.next:
            self._dup(caplen)
            return 0
        if off < d.next:
            # a retransmission that overlaps the stream's end: keep the new tail
            cut = d.next - off
            if cut >= caplen:
                self._dup(caplen)
                payload += caplen
                caplen = 0
            else:
                self._dup(cut)
                payload += cut
                caplen -= cut
            length -= cut
            off = d.next
        piece.off = off
        piece.serial = self.serial
        self.serial += 1
        piece.ts = ts
        piece.length = length
        piece.caplen = caplen
        piece.data = <unsigned char*>PyMem_Malloc(caplen if caplen else 1)
        if piece.data == NULL:
            raise MemoryError()
        if caplen:
            memcpy(piece.data, payload, caplen)
        try:
            _heap_push(d, &piece)
        except MemoryError:
            PyMem_Free(piece.data)
            raise
        self._pending(d, caplen)
        self._drain(c, side)
        while d.pending > self.max_pending_bytes and d.nheap:
            self._force_gap(c, side, True)
        if self.pool_bytes > self.max_pending_total:
            self._shrink()
        return 0

    cdef inline void _dup(self, int64_t n) noexcept:
        """``n`` bytes of a copy of what the stream already has (perhaps none captured)."""
        self.n_duplicate += n
        self.dup_seen = True

    cdef void _pending(self, Dir* d, int64_t n) noexcept:
        """``n`` more bytes waiting in ``d`` (negative: fewer)."""
        d.pending += n
        self.pool_bytes += n
        if d.pending:
            if not d.waiting:
                d.waiting = True
                d.wnext = NULL
                d.wprev = self.wait_tail
                if self.wait_tail != NULL:
                    self.wait_tail.wnext = d
                else:
                    self.wait_head = d
                self.wait_tail = d
        elif d.waiting:
            d.waiting = False
            if d.wprev != NULL:
                d.wprev.wnext = d.wnext
            else:
                self.wait_head = d.wnext
            if d.wnext != NULL:
                d.wnext.wprev = d.wprev
            else:
                self.wait_tail = d.wprev
            d.wprev = d.wnext = NULL

    cdef int _deliver(self, Conn* c, int side, int64_t ts, int64_t off, const unsigned char* payload,
                      Py_ssize_t caplen, int64_t length) except -1:
        if caplen:
            self.on_data(c, side, ts, payload, caplen)
        c.d[side].next = off + caplen
        if caplen < length:
            # the snap length cut this segment: no copy of the rest can come
            self._gap(c, side, length - caplen)
        return 0

    cdef int _gap(self, Conn* c, int side, int64_t n) except -1:
        self.n_gaps += 1
        self.n_missing += n
        c.d[side].next += n
        return self.on_gap(c, side, n)

    cdef int _drain(self, Conn* c, int side) except -1:
        cdef Dir* d = &c.d[side]
        cdef Piece p
        cdef int64_t cut
        while d.nheap and d.heap[0].off <= d.next:
            _heap_pop(d, &p)
            self._pending(d, -p.caplen)
            try:
                if p.off + p.length <= d.next:
                    self._dup(p.caplen)
                else:
                    cut = d.next - p.off
                    if cut > 0:
                        self._dup(cut if cut < p.caplen else p.caplen)
                    if cut >= p.caplen:
                        self._deliver(c, side, p.ts, d.next, p.data + p.caplen, 0, p.length - cut)
                    else:
                        self._deliver(c, side, p.ts, d.next, p.data + cut, p.caplen - cut, p.length - cut)
            finally:
                PyMem_Free(p.data)
        return 0

    cdef int _force_gap(self, Conn* c, int side, bint forced) except -1:
        """Give up waiting for the hole before the first waiting segment
        (``forced``: because too many bytes wait, counted as ``gaps_forced``)."""
        cdef Dir* d = &c.d[side]
        if d.nheap:
            if forced:
                self.n_gaps_forced += 1
            self._gap(c, side, d.heap[0].off - d.next)
            self._drain(c, side)
        return 0

    cdef int _acked(self, Conn* c, int side, uint32_t ack) except -1:
        """The other side acknowledged up to ``ack``: bytes before it that were
        not captured will never be (the receiver has them)."""
        cdef Dir* d = &c.d[side]
        cdef int64_t upto, first
        if not d.has_base or not d.nheap:
            return 0
        upto = _offset(d, ack)
        while d.nheap and upto > d.next:
            first = d.heap[0].off
            self._gap(c, side, (upto if upto < first else first) - d.next)
            self._drain(c, side)
        return 0

    cdef int _half_close(self, Conn* c, int side) except -1:
        cdef Dir* d = &c.d[side]
        if d.ended:
            return 0
        while d.nheap:
            self._force_gap(c, side, False)
        d.ended = True
        return self.on_end(c, side)

    cdef int _shrink(self) except -1:
        """More bytes wait than ``max_pending_total``: the directions that have
        waited longest give up their first holes."""
        cdef Dir* d
        while self.pool_bytes > self.max_pending_total and self.wait_head != NULL:
            d = self.wait_head
            if d.nheap:
                self._force_gap(d.conn, d.side, True)
            else:
                self._pending(d, 0)
        return 0
