# Declarations of the pairing unit (_pairing.pyx): the requests of one
# connection waiting for their responses, for the compiled modules that
# cimport it (the capture walker's sink and judge).

from libc.stdint cimport int16_t, int32_t, int64_t


cdef struct Pend:
    int64_t ts
    int64_t seq
    int32_t client
    int32_t next            # the next slot waiting with the same correlation id (in order), -1: none
    int32_t last            # (the first slot of an id) the last slot waiting with it
    int32_t older           # the slot sent just before (any id), -1: none
    int32_t newer           # the slot sent just after (any id), -1: none
    int32_t correlation_id
    int16_t api_key
    int16_t api_version


cdef class Pairing:
    cdef public int64_t waiting
    cdef public dict pending
    cdef Pend* slots
    cdef list payloads
    cdef int32_t cap, used, free, head, tail

    cdef int32_t _alloc(self) except -2
    cdef int push(self, const Pend* req, object payload=*) except -1
    cdef int pop(self, int32_t corr, Pend* out) except -1
    cdef object _take(self, int32_t corr, Pend* out)
    cpdef int drop_oldest(self) except -1
