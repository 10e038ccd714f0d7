# cython: language_level=3
# The judge of a frame's start: detection (is this connection Kafka?) and
# resynchronization (where does the next frame start after a gap?) both ask
# find_frame_start, a direction in step asks judge_claim about a frame it is
# not sure of, and nothing else judges a frame's start.  Each position is
# judged in constant time on its header bytes; the few that pass are judged by
# walking the candidate frame with the message programs and a sink that keeps
# nothing (BodyCheck), a bounded amount of work each.
#
# A claimed size never hides the frames behind it: a candidate is no frame
# when a whole frame whose body reads to its very end starts inside the
# bytes it is judged on (all of it, or the first ``limit`` bytes of a larger
# one), and a larger one
# whose body reads to its end inside those bytes claims more than it holds.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset
from cpython.mem cimport PyMem_Free, PyMem_Malloc

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
    """Walks a candidate frame's header and body with the message programs,
    keeping nothing: the frame whole when it is at most ``limit`` bytes; a
    larger one as far as its first ``limit`` bytes go (a body cut there
    counts as reading, one that ends there does not: it claims more than it
    holds, and the next frame's header right after it must be plausible too,
    when it is there).

    ``plan_of(is_request, api_key, version)`` gives the program of a message
    (a Plan of the compiled engine, or None); asked once per (kind, key,
    version).  ``header_tables``: the request and response header versions."""

    def __cinit__(self):
        self.nodes = NULL
        self.asked = NULL

    def __init__(self, plan_of, request_headers, response_headers, Py_ssize_t limit=512):
        cdef const int8_t[:, ::1] q = request_headers
        cdef const int8_t[:, ::1] r = response_headers
        self.plan_of = plan_of
        self.plans = []
        self.hq, self.hr = request_headers, response_headers
        self.hvq, self.hvr = &q[0, 0], &r[0, 0]
        self.nq, self.nr = q.shape[0], r.shape[0]
        self.limit = limit
        # the programs asked for so far, by (kind, key, version): a table, not a dict (judging is hot)
        self.nkeys = max(self.nq, self.nr)
        PyMem_Free(self.nodes)
        PyMem_Free(self.asked)
        self.nodes = <Node**>PyMem_Malloc(2 * self.nkeys * 64 * sizeof(Node*))
        self.asked = <uint8_t*>PyMem_Malloc(2 * self.nkeys * 64)
        if self.nodes == NULL or self.asked == NULL:
            raise MemoryError()
        memset(self.asked, 0, 2 * self.nkeys * 64)

    def __dealloc__(self):
        PyMem_Free(self.nodes)
        PyMem_Free(self.asked)

    cdef Node* _node(self, bint req, int key, int version) except? NULL:
        """The program of (kind, key, version) (the caller checked key < its
        table's keys and version < 64), or NULL without one."""
        cdef Py_ssize_t i = (req * self.nkeys + key) * 64 + version
        if not self.asked[i]:
            plan = self.plan_of(bool(req), key, version)
            if plan is not None and type(plan) is Plan:
                self.plans.append(plan)  # kept alive: its nodes are used from here
                self.nodes[i] = (<Plan>plan).node()
            else:
                self.nodes[i] = NULL
            self.asked[i] = 1
        return self.nodes[i]

    cdef int walk(self, const unsigned char* b, Py_ssize_t p, Py_ssize_t stop, Py_ssize_t end, bint is_request,
                  Pairing pr, Py_ssize_t* field=NULL) except -2:
        """Walk the frame whose size prefix is at ``p`` (it ends at ``end``)
        over ``b[p + 4:stop]``: a WALK_* verdict (WALK_CUT_BYTES: ``field[0]``
        is where the bytes or records field the end cut starts)."""
        cdef Cur c
        cdef RequestHead h
        cdef int hv, key, version
        cdef Node* nd
        cdef PyObject* hit
        cdef int32_t slot
        cur_init(&c, b, p + 4, stop)
        if is_request:
            key = <int16_t>kp_ld16(b + p + 4)
            version = <int16_t>kp_ld16(b + p + 6)
            if key < 0 or key >= self.nq or version < 0 or version > 63:
                return WALK_UNKNOWN
            hv = self.hvq[64 * key + version]
            if hv < 0:
                return WALK_UNKNOWN
            nd = self._node(True, key, version)
            if nd == NULL:
                return WALK_UNKNOWN
            if cur_request_head(&c, hv, &h) or (hv >= 2 and cur_skip_tags(&c)):
                return WALK_CUT if _cut(&c, stop, end) else WALK_BAD
        else:
            if pr is None:
                return WALK_UNKNOWN
            hit = PyDict_GetItem(pr.pending, <int32_t>kp_ld32(b + p + 4))
            if hit == NULL:
                return WALK_UNKNOWN
            slot = <object>hit
            key = pr.slots[slot].api_key
            version = pr.slots[slot].api_version
            if key < 0 or key >= self.nr or version < 0 or version > 63:
                return WALK_UNKNOWN
            hv = self.hvr[64 * key + version]
            if hv < 0:
                return WALK_UNKNOWN
            nd = self._node(False, key, version)
            if nd == NULL:
                return WALK_UNKNOWN
            c.pos += 4
            if hv >= 1 and cur_skip_tags(&c):
                return WALK_CUT if _cut(&c, stop, end) else WALK_BAD
        if _w_struct(&c, nd, NULL) == 0:
            return WALK_EXACT if c.pos == stop else WALK_READ
        if not _cut(&c, stop, end):
            return WALK_BAD
        if c.fail == F_NEED and (c.what == W_BYTES or c.what == W_COMPACT_BYTES):
            if field != NULL:
                field[0] = c.at
            return WALK_CUT_BYTES
        return WALK_CUT


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
            # the client id printable, as far as it is here
            for i in range(p + 14, min(n, p + 14 + clen)):
                if b[i] < 0x20 or b[i] == 0x7F:
                    return 0
            if n - p < 14 + clen:
                return -1
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


cdef inline bint _head_may(const unsigned char* b, Py_ssize_t p, bint is_request) noexcept nogil:
    """The first filter, on a byte or three (the caller made sure they are there)."""
    if is_request:
        return b[p] <= 6 and b[p + 4] == 0 and b[p + 6] == 0
    return b[p] <= 6


cdef inline Py_ssize_t _after_zeros(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """Where to look next after a position that is no frame start: a run of
    zero bytes cannot hold a size prefix (size 0) until its last 3 bytes, so
    it is passed whole."""
    cdef Py_ssize_t q
    if b[p] == 0 and p + 4 <= n and b[p + 1] == 0 and b[p + 2] == 0 and b[p + 3] == 0:
        q = p
        while q < n and b[q] == 0:
            q += 1
        return max(p + 1, q - 3)
    return p + 1


# -- judging a candidate ---------------------------------------------------
# A candidate frame at ``p`` claiming ``size`` bytes is judged on its header,
# its body (whole up to ``limit`` bytes, else its first ``limit`` bytes) and
# on the frames behind its start: a frame that starts inside the bytes the
# candidate is judged on and ends inside its claim hides behind that claim,
# so the candidate is none (a claimed size never hides the frames behind
# it).  Such a frame must stand on its own: whole and read to its very end
# (larger than ``limit`` bytes, its first ``limit`` bytes cut inside a
# records or bytes field, which the walk skips).  Each costs a bounded amount
# of work and each position is looked at once per call (a small cache of
# verdicts).
# A candidate claiming more than ``limit`` bytes, with frames behind it not
# whole yet, is held until they are, it is whole, or ``cap`` bytes from its
# start are in (then taken).

cdef enum:
    _CACHE = 1024  # more than the positions one candidate's look spans


cdef struct Behind:
    # what is known of the positions behind candidates in one call
    Py_ssize_t pos[_CACHE]
    int8_t verdict[_CACHE]  # 1: a frame stands there; 0: none; -1: too few bytes yet (wait[...])
    Py_ssize_t wait[_CACHE]


cdef inline void _behind_init(Behind* bh) noexcept nogil:
    memset(bh.pos, 0xFF, sizeof(bh.pos))  # -1: nothing known


cdef int _stands(const unsigned char* b, Py_ssize_t q, Py_ssize_t n, bint is_request, int64_t max_frame_size,
                 const unsigned char* versions, dict outstanding, BodyCheck check, Pairing pr, Behind* bh,
                 Py_ssize_t* wait) except -2:
    """Does a frame stand on its own at ``q``: its header plausible, whole and
    its body read to its very end (larger than ``limit`` bytes: its first
    ``limit`` bytes cut inside a records or bytes field, so that the walk
    skips what makes it large)?  1, 0, or -1 (``wait[0]``: the bytes needed
    to say)."""
    cdef int i = q & (_CACHE - 1), r
    cdef int64_t size
    cdef Py_ssize_t end
    if bh.pos[i] == q:
        wait[0] = bh.wait[i]
        return bh.verdict[i]
    r = _plausible(b, q, n, is_request, max_frame_size, versions, outstanding)
    wait[0] = 0
    if r < 0:
        wait[0] = n + 1  # its header is not all here
        return -1  # not kept: the next byte may tell
    if r == 1:
        size = <int32_t>kp_ld32(b + q)
        end = q + 4 + size
        if size <= check.limit:
            if n < end:
                wait[0] = end
                r = -1
            else:
                r = 1 if check.walk(b, q, end, end, is_request, pr) == WALK_EXACT else 0
        elif n < q + 4 + check.limit:
            wait[0] = n + 1
            return -1
        elif check.walk(b, q, q + 4 + check.limit, end, is_request, pr) != WALK_CUT_BYTES:
            r = 0  # larger frames are large for the records or bytes they carry
        elif n < end:
            wait[0] = end
            r = -1
        else:
            r = 1 if check.walk(b, q, end, end, is_request, pr) == WALK_EXACT else 0
    bh.pos[i] = q
    bh.verdict[i] = r
    bh.wait[i] = wait[0]
    return r


cdef int _judge_at(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, bint is_request, int64_t max_frame_size,
                   const unsigned char* versions, dict outstanding, BodyCheck check, Pairing pr, bint in_step,
                   int64_t cap, Behind* bh, Py_ssize_t* wait) except -2:
    """The candidate at ``p`` (its header plausible; or ``in_step``: a frame
    a direction in step takes at its word unless a frame hides behind it):
    1 a frame, 0 none, -1 too few bytes yet (``wait[0]``: look again once the
    buffer holds that many)."""
    cdef int64_t size = <int32_t>kp_ld32(b + p)
    cdef Py_ssize_t end = p + 4 + size, look, q, qw, pend = -1, field = end
    cdef int r
    look = p + 4 + (size if size <= check.limit else check.limit)
    if not in_step and size > check.limit and n > end:
        # a larger one taken whole is followed by another plausible header (the cheapest test first)
        r = _plausible(b, end, n, is_request, max_frame_size, versions, outstanding)
        if r == 0:
            return 0
        if r < 0:
            wait[0] = n + 1
            return -1
    # its body, as far as it is here: what rejects most candidates, and where
    # a records or bytes field starts (the frames behind it are its data)
    r = check.walk(b, p, look if n >= look else n, end, is_request, pr, &field) if n >= p + 8 else WALK_UNKNOWN
    if not in_step:
        # (a walk cut by the end of the bytes here may yet read; one that fails otherwise never will)
        if (r == WALK_READ or r == WALK_EXACT) and size > check.limit:
            return 0  # its body ends inside the first ``limit`` bytes: it claims more than it holds
        if r == WALK_BAD or r == WALK_UNKNOWN:
            return 0
        if size > check.limit and r == WALK_CUT and n >= p + cap:
            return 0  # not large for the records or bytes it carries, and not whole after ``cap`` bytes
    if r != WALK_CUT_BYTES:
        field = end
    # the frames behind its start that end inside its claim
    q = p + 1
    while q < look and q < n and q < field:
        if q + 8 > n:  # a header's first 8 bytes (a response's correlation id among them) are not here
            pend = q + 8 if pend < 0 else min(pend, q + 8)
            break
        if not _head_may(b, q, is_request):
            q += 1
            continue
        if q + 4 + <int64_t><int32_t>kp_ld32(b + q) > end:
            q += 1  # it runs past the claim: the claim does not hide it
            continue
        r = _stands(b, q, n, is_request, max_frame_size, versions, outstanding, check, pr, bh, &qw)
        if r == 1:
            return 0  # a frame that stands on its own hides behind its claim
        if r < 0:
            pend = qw if pend < 0 else min(pend, qw)
            q += 1
        else:
            q = _after_zeros(b, q, n)
    if n < look:
        wait[0] = n + 1  # the bytes it is judged on are not all here
        return -1
    if not in_step and size > check.limit and n <= end and field == end:
        # not large for the records or bytes it carries: taken once whole and followed
        # by a plausible header (or the end), none past ``cap`` bytes held for it
        if n >= p + cap:
            return 0
        wait[0] = min(end + 1, p + cap) if pend < 0 else min(pend, end + 1, p + cap)
        return -1
    if n >= end:
        return 1
    if pend >= 0 and n < p + cap:
        # a larger one incomplete: held until the frames behind its start are whole, up to ``cap`` bytes
        wait[0] = min(pend, end, p + cap)
        return -1
    return 1


# -- resynchronization ------------------------------------------------------
# Where the next frame of an out-of-step direction could start (the walker's
# resynchronization, and detection's scan for a request).  Every position is
# judged in constant time on the header bytes; with a BodyCheck, the few
# positions that pass are judged as above, so a resynchronization costs time
# linear in the bytes it passes over, whatever they hold.

cdef Py_ssize_t find_start(const unsigned char* b, Py_ssize_t pos, Py_ssize_t n, bint is_request,
                           int64_t max_frame_size, const unsigned char* versions, dict outstanding, BodyCheck check,
                           Pairing pairing, int64_t cap, int* verdict, Py_ssize_t* wait=NULL) except -2:
    """The first position ``p >= pos`` of ``b[:n]`` where a frame could
    start, ``verdict[0]`` 1 (it does) or -1 (too few bytes yet to say: ``wait``,
    when given, is how many the buffer must hold before it is worth asking
    again); or -1 with ``verdict[0]`` -1 when no position can
    (find_frame_start says more)."""
    cdef Py_ssize_t p = pos, w = 0
    cdef int r
    cdef Behind bh
    verdict[0] = -1
    if check is not None:
        _behind_init(&bh)
    while p < n:
        if is_request and p + 8 > n:
            break
        if not _head_may(b, p, is_request):
            p += 1
            continue
        r = _plausible(b, p, n, is_request, max_frame_size, versions, outstanding)
        if r == 1 and check is not None:
            r = _judge_at(b, p, n, is_request, max_frame_size, versions, outstanding, check, pairing, False, cap,
                          &bh, &w)
        elif r < 0:
            w = n + 1
        if r != 0:
            verdict[0] = r
            if wait != NULL:
                wait[0] = w if r < 0 else 0
            return p
        p = _after_zeros(b, p, n)
    return -1


def find_frame_start(buf, Py_ssize_t pos, bint is_request, int64_t max_frame_size, bytes versions,
                     dict outstanding, BodyCheck check=None, Pairing pairing=None, int64_t cap=8 << 20):
    """``(p, verdict)``: the first position ``p >= pos`` of ``buf`` where a
    frame could start -- ``verdict`` True: its header is plausible (requests:
    size in 10..max_frame_size, a key and version of ``versions``, a client id
    length inside the frame and a printable client id; responses: size in
    4..max_frame_size and a correlation id waiting in ``outstanding``) and,
    with ``check``, its frame reads (:class:`BodyCheck`; ``pairing``: the
    connection's, for a response's request) and hides no frame that stands
    on its own behind its start; None: too few bytes yet to judge it (a candidate
    claiming more than ``check.limit`` bytes waits for the frames behind its
    start, up to ``cap`` bytes from it) -- or ``(-1, None)`` when no
    position can (for requests, the last 7 bytes are never judged).
    ``versions``: 512 bytes, the lowest and highest request version of each
    api key below 256 (highest below lowest: not known)."""
    cdef const unsigned char[::1] view = buf
    cdef int verdict
    cdef Py_ssize_t p
    if PyBytes_GET_SIZE(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if view.shape[0] == 0 or pos >= view.shape[0]:
        return -1, None
    p = find_start(&view[0], pos, view.shape[0], is_request, max_frame_size,
                   <const unsigned char*>PyBytes_AS_STRING(versions), outstanding, check, pairing, cap, &verdict)
    return p, (True if verdict == 1 else None) if p >= 0 else None


# -- a frame a direction in step is not sure of ----------------------------
# A request direction in step takes a frame at its word (one that does not
# decode is an undecodable frame, not lost bytes), except that the first of
# a connection (nothing judged where it starts) and one claiming more than
# ``limit`` bytes are none when a frame hides behind their start -- judged
# the moment the bytes allow.
cdef dict _NO_REQUESTS = {}  # requests wait for no request


cdef int judge_claim(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, int64_t max_frame_size,
                     const unsigned char* versions, BodyCheck check, int64_t cap, Py_ssize_t* wait) except -2:
    """1: the request at ``p`` (its size prefix there) is taken; 0: it is no
    frame (a frame that stands on its own starts behind it, inside its
    first ``limit`` bytes, and ends inside its claim); -1: too few bytes yet to say
    (``wait[0]``: look again once the buffer holds that many; never once it
    is whole)."""
    cdef Behind bh
    _behind_init(&bh)  # (each position behind it is looked at once anyway)
    return _judge_at(b, p, n, True, max_frame_size, versions, _NO_REQUESTS, check, None, True, cap, &bh, wait)


def judge_frame(buf, Py_ssize_t pos, int64_t max_frame_size, bytes versions, BodyCheck check, int64_t cap=8 << 20):
    """Is the request whose size prefix is at ``pos`` of ``buf`` (a direction
    in step) a frame?  True; False: a frame that stands on its own (whole
    and read to its very end; larger than ``check.limit`` bytes, its first
    ``check.limit`` bytes cut inside a records or bytes field) starts behind it, inside its first ``check.limit`` bytes, and ends
    inside its claim (which would hide it); None: too few bytes yet to say
    (never once the frame is whole).  Returned with the length ``buf`` must reach before it
    is worth asking again (0 with a verdict): ``(verdict, wait)``."""
    cdef const unsigned char[::1] view = buf
    cdef int r
    cdef Py_ssize_t wait = 0
    if PyBytes_GET_SIZE(versions) != 512:
        raise ValueError("versions must be 512 bytes")
    if view.shape[0] - pos < 4:
        return None, pos + 4
    r = judge_claim(&view[0], pos, view.shape[0], max_frame_size,
                    <const unsigned char*>PyBytes_AS_STRING(versions), check, cap, &wait)
    return (None, wait) if r < 0 else (bool(r), 0)
