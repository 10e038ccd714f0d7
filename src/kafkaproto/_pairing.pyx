# cython: language_level=3
# The pairing rule of every connection kafkaproto follows: the requests of
# one connection waiting for their responses.  Kafka answers a connection's
# requests in the order it got them, so a response answers the oldest
# waiting request with its correlation id (a client that reuses an id gets
# each of its requests paired in turn).  The capture walker's sink
# (kafkaproto.capture.walker._sink) pairs every captured response with it,
# and kafkaproto.protocol.PendingRequests (the client Connection, the proxy)
# is it, holding a Python object per request.
#
# Slots live in one C array: per correlation id a chain in send order (the
# id's first slot is in ``pending``), and over all ids one list in send order
# (``head``: the oldest), so the oldest request is found, and any request
# taken, in constant time.

from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.mem cimport PyMem_Realloc, PyMem_Free
from cpython.object cimport PyObject
from libc.stdint cimport int16_t, int32_t, int64_t, INT64_MIN

COMPILED = True
#: a request's ``ts`` when it has no time
NO_TS = INT64_MIN


cdef class Pairing:
    """The requests waiting for their responses on one connection.

    ``pending`` maps a correlation id to its oldest waiting request (a slot),
    in the order the ids were first sent; ``waiting`` counts the requests
    waiting.  Each request carries its api key and version, its time, its
    number in the connection, its client id's index, and (``payload``) any
    object its owner keeps with it."""

    def __cinit__(self):
        self.slots = NULL
        self.cap = self.used = 0
        self.free = self.head = self.tail = -1
        self.waiting = 0
        self.pending = {}
        self.payloads = []

    def __dealloc__(self):
        PyMem_Free(self.slots)

    def __len__(self):
        return self.waiting

    cdef int32_t _alloc(self) except -2:
        cdef int32_t s
        cdef Pend* p
        if self.free >= 0:
            s = self.free
            self.free = self.slots[s].next
            return s
        if self.used == self.cap:
            p = <Pend*>PyMem_Realloc(self.slots, (self.cap * 2 + 8) * sizeof(Pend))
            if p == NULL:
                raise MemoryError()
            self.slots = p
            self.cap = self.cap * 2 + 8
        s = self.used
        self.used += 1
        self.payloads.append(None)
        return s

    cdef int push(self, const Pend* req, object payload=None) except -1:
        """Note a request as waiting (the newest): 1 if its correlation id was already waiting, else 0."""
        cdef int32_t s = self._alloc(), t
        cdef PyObject* hit
        self.slots[s] = req[0]
        self.slots[s].next = -1
        self.slots[s].last = s
        self.slots[s].older = self.tail
        self.slots[s].newer = -1
        if self.tail >= 0:
            self.slots[self.tail].newer = s
        else:
            self.head = s
        self.tail = s
        if payload is not None:
            self.payloads[s] = payload
        self.waiting += 1
        key = req.correlation_id
        hit = PyDict_GetItem(self.pending, key)
        if hit == NULL:
            self.pending[key] = s
            return 0
        t = <object>hit
        self.slots[self.slots[t].last].next = s
        self.slots[t].last = s
        return 1

    cdef object _take(self, int32_t corr, Pend* out):
        """The oldest request waiting with ``corr``, taken (its fields in
        ``out``): its payload, or the module's NONE when none waits."""
        cdef PyObject* hit = PyDict_GetItem(self.pending, corr)
        cdef int32_t s
        if hit == NULL:
            return _NONE
        s = <object>hit
        out[0] = self.slots[s]
        if out.next >= 0:
            self.slots[out.next].last = out.last
            self.pending[corr] = out.next
        else:
            del self.pending[corr]
        if out.older >= 0:
            self.slots[out.older].newer = out.newer
        else:
            self.head = out.newer
        if out.newer >= 0:
            self.slots[out.newer].older = out.older
        else:
            self.tail = out.older
        self.slots[s].next = self.free
        self.free = s
        self.waiting -= 1
        got = self.payloads[s]
        self.payloads[s] = None
        return got

    cdef int pop(self, int32_t corr, Pend* out) except -1:
        """The oldest request waiting with ``corr``, taken: 1, or 0 when none waits."""
        return self._take(corr, out) is not _NONE

    cpdef int drop_oldest(self) except -1:
        """Give up the request waiting longest."""
        cdef Pend gone
        if self.head >= 0:
            self._take(self.slots[self.head].correlation_id, &gone)
        return 0

    # -- from Python -----------------------------------------------------------
    def add(self, int32_t correlation_id, payload=None, int api_key=0, int api_version=0, ts=None,
            int64_t seq=-1, int32_t client=-1):
        """Note a request as waiting; True if its correlation id was already waiting."""
        cdef Pend req
        req.correlation_id = correlation_id
        req.api_key = <int16_t>api_key
        req.api_version = <int16_t>api_version
        req.ts = INT64_MIN if ts is None else <int64_t>ts
        req.seq = seq
        req.client = client
        return bool(self.push(&req, payload))

    def take(self, int32_t correlation_id, default=None):
        """The payload of the oldest request waiting with ``correlation_id``,
        taken; ``default`` when none waits."""
        cdef Pend out
        got = self._take(correlation_id, &out)
        return default if got is _NONE else got

    def oldest(self):
        """``(correlation id, payload)`` of the request waiting longest, or None."""
        if self.head < 0:
            return None
        return self.slots[self.head].correlation_id, self.payloads[self.head]

    def request_of(self, int32_t corr):
        """``(api_key, api_version)`` of the oldest request waiting with ``corr``, or None."""
        cdef PyObject* hit = PyDict_GetItem(self.pending, corr)
        cdef int32_t s
        if hit == NULL:
            return None
        s = <object>hit
        return self.slots[s].api_key, self.slots[s].api_version

    def waiting_list(self):
        """Every request still waiting, oldest first, as :meth:`take_waiting`
        gives them, left waiting."""
        cdef int32_t s = self.head
        cdef Pend* p
        out = []
        while s >= 0:
            p = &self.slots[s]
            out.append((p.correlation_id, p.api_key, p.api_version, None if p.ts == INT64_MIN else p.ts,
                        p.seq, p.client))
            s = p.newer
        return out

    def take_waiting(self):
        """Every request still waiting, oldest first: ``[(correlation id, api
        key, api version, ts or None, number, client index)]``; none wait after."""
        out = self.waiting_list()
        self.clear()
        return out

    def clear(self):
        """Forget every request waiting."""
        self.pending.clear()
        self.payloads = []
        self.free = self.head = self.tail = -1
        self.used = 0
        self.waiting = 0


_NONE = object()
