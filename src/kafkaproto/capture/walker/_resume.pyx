# cython: language_level=3
# A walker's connections as plain values and back: what Walker.save() and
# Walker.load() (_scan) write with walker/snapshot.py.  The values, their
# order and their meaning are those of the twin (_resume_py.py), whose text
# lists them: the same state gives the same bytes, compiled or not.
#
# Saving reads the C structs of every open connection (its reassembly, the
# walker's half of each direction, the Kafka connection's pairing) into
# lists; loading allocates the connections again (Tcp._restore), in the
# order they were open, and fills the structs back.  A piece waiting behind
# a hole is saved in the order the heap gives them, and a sorted array is a
# heap: it is loaded as it comes.

import struct

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, INT64_MIN
from libc.string cimport memcpy, memset

from kafkaproto.capture.walker._packets cimport endpoint_text
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState, Pairing
from kafkaproto.capture.walker._tcp cimport Tcp, Conn, Dir, Half, Held, Piece, TO_HELD, UNDECIDED

COMPILED = True

cdef int64_t NO_TS = INT64_MIN
# the packed parts of a state (the twin's text says what each holds)
_CONN = struct.Struct(">B16sH16sHqqBbB")
_DIR = struct.Struct(">BIBBq")
_HALF = struct.Struct(">BqqqqBBBqqB")
_ITEM = struct.Struct(">Bqq")


cdef bytes _bytes(const unsigned char* p, Py_ssize_t n):
    return PyBytes_FromStringAndSize(<const char*>p, n) if n else b""


cdef bytes _addr(Conn* c, int end):
    return _bytes(c.addr + 16 * end, 4 if c.family == 4 else 16)


cdef list _dir(Dir* d):
    cdef Py_ssize_t i
    cdef Piece* p
    pieces = []
    for i in range(d.nheap):
        p = &d.heap[i]
        pieces.append([p.off, p.serial, p.ts, p.length, _bytes(p.data, p.caplen)])
    pieces.sort(key=lambda q: (q[0], q[1]))
    return [_DIR.pack(d.has_base, d.base if d.has_base else 0, d.from_start, d.ended, d.next), pieces]


cdef list _half(Half* h):
    cdef Py_ssize_t i
    items = b"".join([_ITEM.pack(h.items[i].gap, h.items[i].ts, h.items[i].n) for i in range(h.nitems)])
    kh = <KafkaState>h.kh if h.kh != NULL else None
    return [_HALF.pack(h.target, h.nbytes, h.scanned, h.base + h.pos, h.ts, h.synced, h.skip, h.unsure, h.taken,
                       h.claim_wait, kh.flags if kh is not None else 0),
            items, _bytes(h.data, h.dlen), _bytes(h.buf + h.pos, h.len - h.pos)]


def save_tcp(Tcp t, list clients):
    """The state of walker ``t``; ``clients``: its sink's client ids by index."""
    cdef Conn* c = t.open_head
    cdef Dir* d
    cdef dict index = {}
    cdef Py_ssize_t i = 0
    conns = []
    while c != NULL:
        index[<size_t>c] = i
        kafka = None
        if c.pairing != NULL:
            pr = <Pairing>c.pairing
            waiting = [[corr, key, version, NO_TS if ts is None else ts, seq, clients[cl] if cl >= 0 else None]
                       for corr, key, version, ts, seq, cl in pr.waiting_list()]
            kafka = [pr.frames, waiting]
        conns.append([_CONN.pack(c.family, _addr(c, 0), c.port[0], _addr(c, 1), c.port[1], c.id, c.first_ts,
                                 c.fins, c.client, c.state),
                      [_dir(&c.d[0]), _dir(&c.d[1])], [_half(&c.h[0]), _half(&c.h[1])], kafka])
        c = c.next
        i += 1
    cdef bytearray closed = bytearray(37 * t.nclosed)
    cdef unsigned char* w = closed
    c = t.closed_head
    while c != NULL:
        w[0] = c.family
        memcpy(w + 1, c.addr, 16)
        w[17], w[18] = c.port[0] >> 8, c.port[0] & 0xFF
        memcpy(w + 19, c.addr + 16, 16)
        w[35], w[36] = c.port[1] >> 8, c.port[1] & 0xFF
        w += 37
        c = c.next
    waiting = []
    d = t.wait_head
    while d != NULL:
        waiting.append([index[<size_t>d.conn], d.side])
        d = d.wnext
    return [t.serial, t.next_id, conns, bytes(closed), waiting]


cdef unsigned char* _copy(bytes b, Py_ssize_t* n) except? NULL:
    cdef unsigned char* p
    n[0] = PyBytes_GET_SIZE(b)
    if not n[0]:
        return NULL
    p = <unsigned char*>PyMem_Malloc(n[0])
    if p == NULL:
        raise MemoryError()
    memcpy(p, PyBytes_AS_STRING(b), n[0])
    return p


cdef int _fill_key(Conn* key, bytes head) except -1:
    family, a0, p0, a1, p1, cid, first_ts, _fins, _client, _state = _CONN.unpack(head)
    memset(key, 0, sizeof(Conn))
    if family not in (4, 6):
        raise ValueError("walker state: a connection of no family")
    key.family = family
    memcpy(key.addr, PyBytes_AS_STRING(a0), 16)
    memcpy(key.addr + 16, PyBytes_AS_STRING(a1), 16)
    key.port[0], key.port[1] = p0, p1
    key.id, key.first_ts = cid, first_ts
    return 0


cdef int _load_dir(Tcp t, Dir* d, list st) except -1:
    cdef Py_ssize_t i, n
    cdef Piece* p
    head, pieces = st
    has_base, base, from_start, ended, nxt = _DIR.unpack(head)
    d.has_base, d.base = has_base, <uint32_t>base
    d.from_start, d.ended, d.next = from_start, ended, nxt
    if pieces:
        d.heap = <Piece*>PyMem_Malloc(len(pieces) * sizeof(Piece))
        if d.heap == NULL:
            raise MemoryError()
        d.heap_cap = len(pieces)
        for i, (off, serial, ts, length, data) in enumerate(pieces):
            p = &d.heap[i]
            p.off, p.serial, p.ts, p.length = off, serial, ts, length
            p.data = _copy(data, &n)
            p.caplen = n
            d.nheap = i + 1
    return 0


cdef int _load_half(Half* h, list st) except -1:
    cdef Py_ssize_t i, n
    head, packed, held, buf = st
    target, nbytes, scanned, bufbase, ts, synced, skip, unsure, taken, claim_wait, _flags = _HALF.unpack(head)
    items = list(_ITEM.iter_unpack(packed))
    h.target = target
    if items:
        h.items = <Held*>PyMem_Malloc(len(items) * sizeof(Held))
        if h.items == NULL:
            raise MemoryError()
        h.items_cap = len(items)
        for i, (gap, its, k) in enumerate(items):
            h.items[i].gap, h.items[i].ts, h.items[i].n = gap, its, k
            h.nitems = i + 1
    h.data = _copy(held, &n)
    h.dlen = h.dcap = n
    h.nbytes, h.scanned = nbytes, scanned
    h.buf = _copy(buf, &n)
    h.len = h.cap = n
    h.pos = 0
    h.base = bufbase
    h.ts = ts
    h.synced, h.skip, h.unsure, h.taken, h.claim_wait = synced, skip, unsure, taken, claim_wait
    return 0


def load_tcp(Tcp t, list st, FrameSink sink, factory, int64_t max_frame_size):
    """Walker ``t`` (fresh: no connection yet) takes the state ``st``: its
    Kafka connections get their objects from ``factory`` and ``sink`` again.
    The bytes held for detection (the walker's count of them)."""
    cdef Conn key
    cdef Conn* c
    cdef list made = []
    cdef int side, cl, sv
    cdef int64_t held_total = 0
    cdef KafkaState kh
    serial, next_id, conns, closed, waiting = st
    t.serial, t.next_id = serial, next_id
    for head, dirs, halves, kafka in conns:
        _fill_key(&key, head)
        _family, _a0, _p0, _a1, _p1, _cid, _first, fins, client, state = _CONN.unpack(head)
        c = t._restore(&key, False)
        made.append(<size_t>c)
        c.fins, c.client, c.state = fins, client, state
        for side in range(2):
            _load_dir(t, &c.d[side], dirs[side])
        if state == UNDECIDED:
            t.on_new(c)
        for side in range(2):
            _load_half(&c.h[side], halves[side])
            if c.h[side].target == TO_HELD:
                held_total += c.h[side].nbytes
        if kafka is not None:
            cl = c.client
            sv = 1 - cl
            conn = factory(c.id, endpoint_text(c.family, c.addr + 16 * cl, c.port[cl]),
                           endpoint_text(c.family, c.addr + 16 * sv, c.port[sv]),
                           None if c.first_ts == NO_TS else c.first_ts)
            pairing = sink.connection(conn)
            (<Pairing>pairing).frames = kafka[0]
            for corr, api_key, version, ts, seq, client_id in kafka[1]:
                pairing.add(corr, None, api_key, version, None if ts == NO_TS else ts, seq,
                            -1 if client_id is None else sink.client_of(client_id))
            Py_INCREF(conn)
            c.conn = <PyObject*>conn
            Py_INCREF(pairing)
            c.pairing = <PyObject*>pairing
            for side in range(2):
                kh = KafkaState(conn, pairing, sink, side == cl, c.d[side].from_start, max_frame_size)
                kh.flags = _HALF.unpack(halves[side][0])[10]
                Py_INCREF(kh)
                c.h[side].kh = <PyObject*>kh
    cdef const unsigned char[::1] r = closed
    cdef Py_ssize_t at
    for at in range(0, r.shape[0] - r.shape[0] % 37, 37):
        memset(&key, 0, sizeof(Conn))
        key.family = r[at]
        if key.family not in (4, 6):
            raise ValueError("walker state: a closed connection of no family")
        memcpy(key.addr, &r[at + 1], 16)
        key.port[0] = (r[at + 17] << 8) | r[at + 18]
        memcpy(key.addr + 16, &r[at + 19], 16)
        key.port[1] = (r[at + 35] << 8) | r[at + 36]
        t._restore(&key, True)
    for i, side in waiting:
        c = <Conn*><size_t>made[i]
        n = 0
        for j in range(c.d[side].nheap):
            n += c.d[side].heap[j].caplen
        t._pending(&c.d[side], n)
    return held_total
