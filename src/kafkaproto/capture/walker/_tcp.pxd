# Declarations of the walker's reassembly unit (_tcp.pyx) for the walker
# (_framing, _scan, _resume), which cimport them: the state of a connection
# and of its two directions, in C structs, and the Tcp class the walker's
# framing (_framing.Framer) extends.

from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef enum:
    T_FIN = 0x01
    T_SYN = 0x02
    T_RST = 0x04
    T_ACK = 0x10

# what a direction's bytes go to (Half.target)
cdef enum:
    TO_HELD = 0         # held until the connection is known to be Kafka or not
    TO_KAFKA = 1        # framed
    TO_OTHER = 2        # counted as not_kafka

# what bytes skipped while out of step count as (Half.skip)
cdef enum:
    SKIP_GAP = 0
    SKIP_NOT_KAFKA = 1

# a connection's state (Conn.state)
cdef enum:
    UNDECIDED = 0
    KAFKA = 1
    OTHER = 2

cdef struct Conn


cdef struct Piece:
    # a segment waiting behind a hole
    int64_t off             # its stream offset
    int64_t serial          # arrival order: pieces at one offset go in the order they came
    int64_t ts
    int64_t length          # its bytes on the wire from ``off``
    int64_t caplen          # its bytes captured (at ``data``)
    unsigned char* data


cdef struct Dir:
    # one direction's reassembly
    uint32_t base           # sequence number of stream offset 0 (once has_base)
    bint has_base
    bint from_start         # its SYN was seen
    bint ended
    int64_t next            # the next stream offset expected
    Piece* heap             # segments waiting behind a hole: a heap by (off, serial)
    Py_ssize_t nheap, heap_cap
    int64_t pending         # their captured bytes
    bint waiting            # in the list of directions with bytes waiting, oldest first
    Dir* wprev
    Dir* wnext
    Conn* conn
    int side


cdef struct Held:
    # one chunk of data (``n`` bytes, from the held data) or a gap of ``n`` bytes
    int64_t ts
    int64_t n
    bint gap


cdef struct Half:
    # what the walker keeps of one direction
    uint8_t target          # TO_*
    # TO_HELD: every chunk and gap in order; ``data`` holds the chunks' bytes
    Held* items
    Py_ssize_t nitems, items_cap
    unsigned char* data
    Py_ssize_t dlen, dcap
    int64_t nbytes          # bytes held
    Py_ssize_t scanned      # where detection's scan for a request resumes
    # TO_KAFKA: the bytes not framed yet, ``buf[pos:len]``; ``base`` is buf[0]'s stream offset
    PyObject* kh            # the sink's KafkaState of this direction
    unsigned char* buf
    Py_ssize_t len, cap, pos
    int64_t base
    int64_t ts              # time of the latest bytes (NO_TS: none)
    bint synced
    uint8_t skip            # SKIP_*
    bint unsure             # the frame at ``pos`` is judged before it is taken (judge_claim)
    int64_t taken           # the stream offset of the frame judge_claim took last (-1: none)
    int64_t claim_wait      # the stream offset the buffer must reach before judge_claim is asked again


cdef struct Conn:
    uint64_t hash
    uint8_t family          # 4 or 6
    uint16_t port[2]        # the two ends, the lower (address, port) first
    uint8_t addr[32]        # end i's address at addr + 16 * i (IPv4: its first 4 bytes)
    int64_t id
    int64_t first_ts
    bint closed
    uint8_t fins            # bit i: end i sent a FIN
    int8_t client           # the client's end (-1: not known yet)
    uint8_t state           # UNDECIDED / KAFKA / OTHER
    Conn* prev              # the open connections (oldest first), or the closed ones
    Conn* next
    bint undecided          # in the list of undecided connections, oldest first
    Conn* uprev
    Conn* unext
    Dir d[2]
    Half h[2]
    PyObject* conn          # the Connection (a Kafka connection's), and its Pairing
    PyObject* pairing


cdef class Tcp:
    cdef object acc
    cdef readonly Py_ssize_t max_open_connections
    cdef readonly int64_t max_pending_bytes, max_pending_total
    # connections by their 4-tuple (open addressing), open ones oldest first, closed ones oldest first
    cdef Conn** table
    cdef Py_ssize_t tcap, tused
    cdef Conn* open_head
    cdef Conn* open_tail
    cdef Conn* closed_head
    cdef Conn* closed_tail
    cdef Py_ssize_t nopen, nclosed
    # directions with bytes waiting behind a hole, oldest first, and those bytes
    cdef Dir* wait_head
    cdef Dir* wait_tail
    cdef int64_t pool_bytes
    cdef int64_t serial, next_id
    # counts not added to the Accounting yet
    cdef int64_t n_duplicate, n_gaps, n_missing, n_gaps_forced, n_connections, n_evicted, n_syn_only
    cdef bint dup_seen

    cdef int segment(self, int64_t ts, int family, const unsigned char* src, uint16_t sport,
                     const unsigned char* dst, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                     const unsigned char* payload, Py_ssize_t caplen, int64_t length) except -1
    cdef int close(self, Conn* c) except -1
    cdef int forget(self, Conn* c) except -1
    cdef int close_every(self) except -1
    cdef int flush_counts(self) except -1

    # what the walker is told (it overrides these)
    cdef int on_new(self, Conn* c) except -1
    cdef int on_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1
    cdef int on_gap(self, Conn* c, int side, int64_t n) except -1
    cdef int on_end(self, Conn* c, int side) except -1
    cdef int on_close(self, Conn* c) except -1
    cdef void on_free(self, Conn* c) noexcept

    # internals
    cdef Conn* _find(self, Conn* key) noexcept
    cdef int _insert(self, Conn* c) except -1
    cdef void _remove(self, Conn* c) noexcept
    cdef void _free_conn(self, Conn* c) noexcept
    cdef Conn* _open(self, Conn* key, int64_t ts) except NULL
    cdef Conn* _restore(self, Conn* key, bint closed) except NULL
    cdef int _half(self, Conn* c, int side, int64_t ts, uint32_t seq, const unsigned char* payload,
                   Py_ssize_t caplen, int64_t length) except -1
    cdef int _deliver(self, Conn* c, int side, int64_t ts, int64_t off, const unsigned char* payload,
                      Py_ssize_t caplen, int64_t length) except -1
    cdef int _gap(self, Conn* c, int side, int64_t n) except -1
    cdef int _drain(self, Conn* c, int side) except -1
    cdef int _force_gap(self, Conn* c, int side, bint forced) except -1
    cdef int _acked(self, Conn* c, int side, uint32_t ack) except -1
    cdef int _half_close(self, Conn* c, int side) except -1
    cdef int _shrink(self) except -1
    cdef void _pending(self, Dir* d, int64_t n) noexcept
    cdef void _dup(self, int64_t n) noexcept
