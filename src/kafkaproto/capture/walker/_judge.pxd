# Declarations of the judge of a frame's start (_judge.pyx) for the walker's
# framing (_framing), which cimports them: where a frame could start, and whether a
# frame a direction in step is not sure of is one.

from libc.stdint cimport int8_t, int64_t, uint8_t

from kafkaproto.messages._engine cimport Node
from kafkaproto.capture.walker._sink cimport Pairing

# what walking a candidate frame's body says (BodyCheck.walk)
cdef enum:
    WALK_BAD = 0        # it does not read
    WALK_READ = 1       # it reads to its end before the end of the bytes walked (bytes are left after it)
    WALK_CUT = 2        # only the end of the bytes walked cut it (a larger frame)
    WALK_UNKNOWN = 3    # no program to judge it by (an unknown api key or version, a response without its request)
    WALK_EXACT = 4      # it reads to exactly the end of the bytes walked
    WALK_CUT_BYTES = 5  # WALK_CUT, inside a bytes or records field (what a larger frame mostly holds)


cdef class BodyCheck:
    cdef object plan_of
    cdef list plans
    cdef Node** nodes
    cdef uint8_t* asked
    cdef Py_ssize_t nkeys
    cdef object hq, hr
    cdef const int8_t* hvq
    cdef const int8_t* hvr
    cdef int nq, nr
    cdef public Py_ssize_t limit

    cdef Node* _node(self, bint req, int key, int version) except? NULL
    cdef int walk(self, const unsigned char* b, Py_ssize_t p, Py_ssize_t stop, Py_ssize_t end, bint is_request,
                  Pairing pr, Py_ssize_t* field=*) except -2


cdef Py_ssize_t find_start(const unsigned char* b, Py_ssize_t pos, Py_ssize_t n, bint is_request,
                           int64_t max_frame_size, const unsigned char* versions, dict outstanding, BodyCheck check,
                           Pairing pairing, int64_t cap, int* verdict, Py_ssize_t* wait=*) except -2

cdef int judge_claim(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, int64_t max_frame_size,
                     const unsigned char* versions, BodyCheck check, int64_t cap, Py_ssize_t* wait) except -2
