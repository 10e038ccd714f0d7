# Declarations of the walker's framing unit (_framing.pyx) for the walker
# (_scan) and its state (_resume), which cimport them: the Framer class
# (detection and framing over the reassembly) that the walker extends.

from libc.stdint cimport int64_t, uint8_t, uint16_t

from kafkaproto.capture.walker._judge cimport BodyCheck
from kafkaproto.capture.walker._sink cimport FrameSink, KafkaState
from kafkaproto.capture.walker._tcp cimport Tcp, Conn, Half


cdef class Framer(Tcp):
    cdef readonly FrameSink sink
    cdef object factory
    cdef BodyCheck check
    cdef bytes versions
    cdef const unsigned char* vt
    cdef readonly int64_t max_frame_size
    cdef bint have_ports
    cdef unsigned char ports[8192]
    # connections not yet known to be Kafka or not, oldest first, and the bytes they hold
    cdef Conn* und_head
    cdef Conn* und_tail
    cdef int64_t held_total
    # counts not added to the Accounting yet
    cdef int64_t n_not_kafka, n_gap, n_trunc_bytes, n_trunc_frames, n_detect_forced

    cdef void _unlink_undecided(self, Conn* c) noexcept
    # detection
    cdef int _held_item(self, Half* h, int64_t ts, int64_t n, bint gap) except -1
    cdef int _held_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1
    cdef int _judge_oldest(self) except -1
    cdef bint _broker(self, uint16_t port) noexcept
    cdef int _scan_requests(self, Half* h) except -2
    cdef int _request_start(self, Half* h) except -2
    cdef int _decide(self, Conn* c, bint final) except -1
    cdef int _settle(self, Conn* c, bint kafka) except -1
    cdef int _release(self, Conn* c, int side, uint8_t target) except -1
    # framing
    cdef int _kafka_data(self, Conn* c, int side, int64_t ts, const unsigned char* p, Py_ssize_t n) except -1
    cdef int _emit(self, Half* h, KafkaState kh, const unsigned char* f, Py_ssize_t n, int64_t offset) except -1
    cdef int _run(self, Conn* c, int side) except -1
    cdef int _frames(self, Half* h) except -1
    cdef int _resync(self, Half* h) except -1
    cdef void _skip(self, Half* h, Py_ssize_t p) noexcept
    cdef int _drop_rest(self, Conn* c, int side) except -1
    cdef int _kafka_gap(self, Conn* c, int side, int64_t n) except -1
