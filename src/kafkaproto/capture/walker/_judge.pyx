# cython: language_level=3
# The judge of a frame's start: detection (is this connection Kafka?) and
# resynchronization (where does the next frame start after a gap?) both ask
# find_frame_start, and nothing else judges a frame's start.  Each position is
# judged in constant time on its header bytes; the few that pass are judged by
# walking the candidate frame with the message programs and a sink that keeps
# nothing (BodyCheck), a bounded amount of work each.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_u64_to_f64, kp_utf8_ok, MAX_STR, Cur, Step, RequestHead, cur_init, cur_fail, cur_step,
    cur_take, cur_uv32, cur_length, cur_count, cur_tags_begin, cur_tag_next, cur_skip_tags, cur_request_head, F_OK,
    F_NEED, F_COUNT, F_LIMIT, F_UTF8, F_TAG_SIZE, P_FIELD, P_INDEX, W_INT8, W_INT16, W_INT32, W_INT64, W_UINT16,
    W_UINT32, W_FLOAT64, W_BOOL, W_UUID, W_STRING, W_COMPACT_STRING, W_BYTES, W_COMPACT_BYTES, W_ARRAY_LENGTH,
    W_COMPACT_ARRAY_LENGTH, W_UVARINT, W_TAGGED_FIELD,
)
from kafkaproto.messages._engine cimport (
    Node, Op, Plan, K_BOOL, K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64, K_UUID, K_STRING,
    K_BYTES, K_RECORDS, K_STRUCT, K_ARRAY,
)
from kafkaproto.capture.walker._sink cimport Pairing

COMPILED = True


# The one walker of message bodies (messages/_walk.pxi) with a sink that keeps
# nothing: it only checks.  Resynchronization and detection judge a position
# by walking the candidate frame's header and the first bytes of its body, in
# C, a bounded amount of work per position.

ctypedef void* Dst

cdef inline Dst sk_field(Dst me, Op* op) noexcept nogil:
    return NULL

cdef inline Dst sk_item(Dst arr, int64_t i) noexcept nogil:
    return NULL

cdef inline int sk_int(Cur* c, Dst d, int kind, int64_t v) noexcept nogil:
    return 0

cdef inline int sk_float(Cur* c, Dst d, double v) noexcept nogil:
    return 0

cdef inline int sk_uuid(Cur* c, Dst d, const uint8_t* p) noexcept nogil:
    return 0

cdef inline int sk_str(Cur* c, Dst d, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_bytes(Cur* c, Dst d, Op* op, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_null(Cur* c, Dst d) noexcept nogil:
    return 0

cdef inline int sk_struct_begin(Cur* c, Dst d, Node* nd, Dst* me) noexcept nogil:
    me[0] = NULL
    return 0

cdef inline int sk_unknown_tag(Cur* c, Dst me, void** unknown, uint32_t tag, const uint8_t* p,
                               Py_ssize_t n) noexcept nogil:
    return 0

cdef inline int sk_wire_tag(Cur* c, Dst me, void** wire, uint32_t i, uint32_t count, uint32_t tag) noexcept nogil:
    return 0

cdef inline int sk_struct_end(Cur* c, Dst d, Dst me, Node* nd, void* unknown, void* wire) noexcept nogil:
    return 0

cdef inline void sk_struct_fail(Dst me, void* unknown, void* wire) noexcept nogil:
    pass

cdef inline int sk_array_begin(Cur* c, Dst d, Op* op, int64_t n, Dst* arr) noexcept nogil:
    arr[0] = NULL
    return 0

cdef inline int sk_int32s(Cur* c, Dst arr, const uint8_t* p, int64_t n) noexcept nogil:
    return 0

cdef inline int sk_array_end(Cur* c, Dst d, Dst arr, int64_t n) noexcept nogil:
    return 0

cdef inline void sk_array_fail(Dst arr, int64_t i, int64_t n) noexcept nogil:
    pass

cdef inline int sk_absent(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0

cdef inline int sk_default(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0

cdef inline int sk_retag(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0


include "kafkaproto/messages/_walk.pxi"


cdef class BodyCheck:
    """Judges a candidate frame by walking its header and body with the
    message programs, keeping nothing: the frame whole when it is at most
    ``limit`` bytes; a larger one as far as its first ``limit`` bytes go (a
    body cut there counts as reading), and only when the next frame's header
    right after it is plausible too, or nothing follows it yet.

    ``plan_of(is_request, api_key, version)`` gives the program of a message
    (a Plan of the compiled engine, or None); asked once per (kind, key,
    version).  ``header_tables``: the request and response header versions."""
    cdef object plan_of
    cdef dict plans
    cdef object hq, hr
    cdef const int8_t* hvq
    cdef const int8_t* hvr
    cdef int nq, nr
    cdef public Py_ssize_t limit

    def __init__(self, plan_of, request_headers, response_headers, Py_ssize_t limit=512):
        cdef const int8_t[:, ::1] q = request_headers
        cdef const int8_t[:, ::1] r = response_headers
        self.plan_of = plan_of
        self.plans = {}
        self.hq, self.hr = request_headers, response_headers
        self.hvq, self.hvr = &q[0, 0], &r[0, 0]
        self.nq, self.nr = q.shape[0], r.shape[0]
        self.limit = limit

    cdef Node* _node(self, bint req, int key, int version) except? NULL:
        cdef PyObject* hit
        k = (req << 24) | (key << 8) | version
        hit = PyDict_GetItem(self.plans, k)
        if hit == NULL:
            plan = self.plan_of(bool(req), key, version)
            if plan is not None and type(plan) is not Plan:
                plan = None
            self.plans[k] = plan
        else:
            plan = <object>hit
        if plan is None:
            return NULL
        return (<Plan>plan).node()

    cdef int judge(self, const unsigned char* b, Py_ssize_t p, Py_ssize_t n, bint is_request, Pairing pr,
                   int64_t max_frame_size, const unsigned char* versions, dict outstanding) except -2:
        """1: the frame at ``p`` reads; 0: it does not; -1: too few bytes yet."""
        cdef int64_t size = <int32_t>kp_ld32(b + p)
        cdef Py_ssize_t end = p + 4 + size, stop
        cdef Cur c
        cdef RequestHead h
        cdef int hv, key, version, r
        cdef Node* nd
        cdef PyObject* hit
        cdef int32_t slot
        if n < end:
            return -1
        if size > self.limit and n > end:
            r = _plausible(b, end, n, is_request, max_frame_size, versions, outstanding)
            if r != 1:
                return r
        stop = end if size <= self.limit else p + 4 + self.limit
        cur_init(&c, b, p + 4, stop)
        if is_request:
            key = <int16_t>kp_ld16(b + p + 4)
            version = <int16_t>kp_ld16(b + p + 6)
            if key < 0 or key >= self.nq or version < 0 or version > 63:
                return 0
            hv = self.hvq[64 * key + version]
            if hv < 0:
                return 0
            if cur_request_head(&c, hv, &h) or (hv >= 2 and cur_skip_tags(&c)):
                return _cut(&c, stop, end)
        else:
            if pr is None:
                return 0
            hit = PyDict_GetItem(pr.pending, <int32_t>kp_ld32(b + p + 4))
            if hit == NULL:
                return 0
            slot = <object>hit
            key = pr.slots[slot].api_key
            version = pr.slots[slot].api_version
            if key < 0 or key >= self.nr or version < 0 or version > 63:
                return 0
            hv = self.hvr[64 * key + version]
            if hv < 0:
                return 0
            c.pos += 4
            if hv >= 1 and cur_skip_tags(&c):
                return _cut(&c, stop, end)
        nd = self._node(is_request, key, version)
        if nd == NULL:
            return 0
        if _w_struct(&c, nd, NULL) == 0:
            return 1
        return _cut(&c, stop, end)


cdef inline int _cut(Cur* c, Py_ssize_t stop, Py_ssize_t end) noexcept nogil:
    """After a failed walk: 1 when only the end of the look cut it (the bytes
    or the elements it needed lie inside the frame), else 0."""
    if stop >= end or (c.fail != F_NEED and c.fail != F_COUNT):
        return 0
    # F_NEED: x bytes needed, y left before the look's end; F_COUNT: x elements, y bytes left
    return 1 if c.x - c.y <= end - stop else 0


cdef inline int _plausible(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, bint is_request,
                           int64_t max_frame_size, const unsigned char* v, dict outstanding) noexcept:
    """Could a frame start at ``p`` (its header bytes alone)?  1, 0, or -1: too few bytes to say."""
    cdef int64_t size
    cdef int16_t clen
    cdef int key, ver
    cdef Py_ssize_t i
    if is_request:
        if n - p < 8:
            return -1
        if b[p] > 6 or b[p + 4] != 0 or b[p + 6] != 0:
            return 0
        if n - p < 14:
            return -1
        size = <int32_t>kp_ld32(b + p)
        key = b[p + 5]
        ver = b[p + 7]
        clen = <int16_t>kp_ld16(b + p + 12)
        if size < 10 or (max_frame_size >= 0 and size > max_frame_size) or not (v[2 * key] <= ver <= v[2 * key + 1]) \
                or clen < -1 or 10 + (clen if clen > 0 else 0) > size:
            return 0
        if clen > 0:
            if n - p < 14 + clen:
                return -1
            for i in range(p + 14, p + 14 + clen):
                if b[i] < 0x20 or b[i] == 0x7F:
                    return 0
        return 1
    if n - p < 1:
        return -1
    if b[p] > 6:
        return 0
    if n - p < 8:
        return -1
    size = <int32_t>kp_ld32(b + p)
    if size < 4 or (max_frame_size >= 0 and size > max_frame_size):
        return 0
    if PyDict_GetItem(outstanding, <int32_t>kp_ld32(b + p + 4)) == NULL:
        return 0
    return 1


# -- resynchronization ------------------------------------------------------
# Where the next frame of an out-of-step direction could start
# (streams.KafkaHalf._resync, and detection's scan for a request).  Every
# position is judged in constant time on the header bytes; with a BodyCheck,
# the few positions that pass are judged by their frame too, still a bounded
# amount of work each, so a resynchronization costs time linear in the bytes
# it passes over, whatever they hold.

def find_frame_start(buf, Py_ssize_t pos, bint is_request, int64_t max_frame_size, bytes versions,
                     dict outstanding, BodyCheck check=None, Pairing pairing=None):
    """``(p, verdict)``: the first position ``p >= pos`` of ``buf`` where a
    frame could start -- ``verdict`` True: its header is plausible (requests:
    size in 10..max_frame_size, a key and version of ``versions``, a client id
    length inside the frame and a printable client id; responses: size in
    4..max_frame_size and a correlation id waiting in ``outstanding``) and,
    with ``check``, its frame reads (:class:`BodyCheck`; ``pairing``: the
    connection's, for a response's request); None: too few bytes yet to judge
    it -- or ``(-1, None)`` when no position can (for requests, the last 7
    bytes are never judged).  ``versions``: 512 bytes, the lowest and highest
    request version of each api key below 256 (highest below lowest: not
    known)."""
    cdef const unsigned char[::1] view = buf
    cdef const unsigned char* b
    cdef const unsigned char* v = <const unsigned char*>PyBytes_AS_STRING(versions)
    cdef Py_ssize_t n = view.shape[0], p = pos, q
    cdef int r
    if PyBytes_GET_SIZE(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if n == 0 or p >= n:
        return -1, None
    b = &view[0]
    while p < n:
        if is_request:
            if p + 8 > n:
                return -1, None
            if b[p] > 6 or b[p + 4] != 0 or b[p + 6] != 0:
                p += 1
                continue
        elif b[p] > 6:
            p += 1
            continue
        r = _plausible(b, p, n, is_request, max_frame_size, v, outstanding)
        if r < 0:
            return p, None
        if r == 1 and check is not None:
            r = check.judge(b, p, n, is_request, pairing, max_frame_size, v, outstanding)
            if r < 0:
                return p, None
        if r == 1:
            return p, True
        if b[p] == 0 and p + 4 <= n and b[p + 1] == 0 and b[p + 2] == 0 and b[p + 3] == 0:
            # a run of zero bytes cannot hold a size prefix (size 0) until its last 3 bytes: skip it whole
            q = p
            while q < n and b[q] == 0:
                q += 1
            p = max(p + 1, q - 3)
            continue
        p += 1
    return -1, None