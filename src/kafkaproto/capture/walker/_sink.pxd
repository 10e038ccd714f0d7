# Declarations of the sink and pairing unit (_sink.pyx) for the other
# compiled units of the walker (_framing, _scan, _judge, _resume), which
# cimport them.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t

from kafkaproto._pairing cimport Pairing as _Pairing, Pend

# frame flags (the rows' ``flags``)
cdef enum:
    FL_HEADER = 1        # api key, version and correlation id were read (requests: 8 bytes or more)
    FL_RESYNC = 2        # the first frame after its direction resynchronized (a gap, or bytes that did not frame)
    FL_REUSED = 4        # a request whose correlation id was already waiting on its connection
    FL_EVICTED = 8       # a request after which the oldest waiting one was given up (too many waiting)

# frame status (rows)
cdef enum:
    ST_FRAMED = 0
    ST_UNPAIRED = 1


cdef struct Row:
    # 72 bytes, no padding (widest first): ROW_FIELDS names them in order
    int64_t ts              # nanoseconds since the epoch; INT64_MIN: no time
    int64_t offset          # stream offset of the frame's size prefix in its direction
    int64_t seq             # the frame's number in its connection (both directions)
    int64_t request_seq     # a paired response: its request's number; else -1
    int64_t request_ts      # a paired response: its request's time; else INT64_MIN
    int64_t end             # where the frame's bytes end in the data buffer
    int32_t conn            # the connection's index in the batch's connections (FrameSink.conns until take)
    int32_t correlation_id
    int32_t client          # index of the client id in FrameSink.clients; -1: none
    int32_t header_size     # bytes of the header (where the body starts); -1: unknown
    int16_t api_key         # a request's own; a paired response's request's; else 0
    int16_t api_version
    uint8_t direction       # 0 request, 1 response
    uint8_t status          # ST_FRAMED / ST_UNPAIRED
    uint8_t flags           # FL_*
    uint8_t pad


cdef class Pairing(_Pairing):
    cdef public object conn
    cdef public int64_t frames
    # the sink's batch that last named the connection, and its index in that batch's connections
    cdef int64_t named
    cdef int32_t slot


cdef class KafkaState


cdef class FrameSink:
    cdef bytearray rows
    cdef Py_ssize_t nrows, rows_cap
    cdef char* data
    cdef Py_ssize_t dlen, dcap, dnext
    cdef public list conns
    cdef int64_t batch
    cdef public list clients
    cdef dict client_index
    cdef object hq, hr
    cdef const int8_t* hvq
    cdef const int8_t* hvr
    cdef int nq, nr
    cdef public object acc
    cdef public Py_ssize_t max_outstanding, batch_rows, batch_bytes
    #: requests left waiting when their connection closed: (connection, corr, key, version, ts, seq, client index)
    cdef public list unanswered
    cdef int64_t n_framed, b_framed, n_unpaired, b_unpaired, n_kafka, n_evicted

    cdef _fresh(self)
    cpdef bint full(self)
    cdef Row* _row(self) except NULL
    cdef int _bytes(self, const unsigned char* f, Py_ssize_t n) except -1
    cdef int32_t _client(self, KafkaState kh, const unsigned char* f, Py_ssize_t at, Py_ssize_t n) except -2
    cdef int add(self, KafkaState kh, const unsigned char* f, Py_ssize_t n, int64_t offset,
                 int64_t request_ts=*) except -1
    cdef int add_at(self, KafkaState kh, const unsigned char* f, Py_ssize_t n, int64_t offset, int64_t ts,
                    int64_t request_ts) except -1


cdef class KafkaState:
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

    cpdef int drain(self) except -1
    cpdef compact(self)
