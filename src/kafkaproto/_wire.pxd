# Wire-level C shared by every compiled module of kafkaproto: byte loads and
# stores, varint cores, zig-zag, the strict UTF-8 check and the frame rule.
# Everything here is inline (each module gets its own copy; nothing is
# imported at run time), so hot loops in any layer pay no call.
#
# Integers are read with byte loads + shifts (compilers turn them into a load
# and a byte swap), never through unaligned pointer casts.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline uint16_t kp_ld16(const unsigned char *p) {
        return (uint16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
    }
    static inline uint32_t kp_ld32(const unsigned char *p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
    }
    static inline uint64_t kp_ld64(const unsigned char *p) {
        return ((uint64_t)kp_ld32(p) << 32) | (uint64_t)kp_ld32(p + 4);
    }
    static inline void kp_st16(unsigned char *p, uint16_t v) {
        p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
    }
    static inline void kp_st32(unsigned char *p, uint32_t v) {
        p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
        p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
    }
    static inline void kp_st64(unsigned char *p, uint64_t v) {
        kp_st32(p, (uint32_t)(v >> 32)); kp_st32(p + 4, (uint32_t)v);
    }
    static inline double kp_u64_to_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
    static inline uint64_t kp_f64_to_u64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

    /* Strict UTF-8 check (what Python's decoder accepts): no overlongs, no
       surrogates, nothing above U+10FFFF.  ASCII runs go 8 bytes at a time. */
    static inline int kp_utf8_ok(const unsigned char *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
        while (i < n) {
            if (i + 8 <= n) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
            }
            unsigned char c = s[i];
            if (c < 0x80) { i++; continue; }
            if (c < 0xC2) return 0;
            if (c < 0xE0) {
                if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
                i += 2; continue;
            }
            if (c < 0xF0) {
                if (i + 2 >= n) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
                if (c == 0xE0 && c1 < 0xA0) return 0;
                if (c == 0xED && c1 >= 0xA0) return 0;
                i += 3; continue;
            }
            if (c < 0xF5) {
                if (i + 3 >= n) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
                if (c == 0xF0 && c1 < 0x90) return 0;
                if (c == 0xF4 && c1 >= 0x90) return 0;
                i += 4; continue;
            }
            return 0;
        }
        return 1;
    }
    """
    uint16_t kp_ld16(const unsigned char *p) nogil
    uint32_t kp_ld32(const unsigned char *p) nogil
    uint64_t kp_ld64(const unsigned char *p) nogil
    void kp_st16(unsigned char *p, uint16_t v) nogil
    void kp_st32(unsigned char *p, uint32_t v) nogil
    void kp_st64(unsigned char *p, uint64_t v) nogil
    double kp_u64_to_f64(uint64_t u) nogil
    uint64_t kp_f64_to_u64(double d) nogil
    int kp_utf8_ok(const unsigned char* s, Py_ssize_t n) nogil


cdef enum:
    # Kafka strings (legacy and compact) are at most this many UTF-8 bytes
    # (kafkaproto._limits.MAX_STRING_LENGTH; a test checks they agree)
    MAX_STR = 0x7FFF


# ---------------------------------------------------------------------------
# Varint cores.  They return a status instead of raising, so that they run
# without the GIL:  0 ok, 1 truncated, 2 too long, 3 does not fit in the width.

cdef enum:
    VARINT_OK = 0
    VARINT_TRUNCATED = 1
    VARINT_TOO_LONG = 2
    VARINT_TOO_WIDE = 3


cdef inline int _uv32(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end, uint32_t* out) noexcept nogil:
    cdef Py_ssize_t pos = ppos[0]
    cdef Py_ssize_t start = pos
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    if pos < end:
        b = buf[pos]
        if b < 0x80:
            out[0] = b
            ppos[0] = pos + 1
            return 0
    while True:
        if pos >= end:
            ppos[0] = pos
            return 1
        b = buf[pos]
        pos += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if pos - start >= 5:
            return 2
    if value >> 32:
        return 3
    out[0] = <uint32_t>value
    ppos[0] = pos
    return 0


cdef inline int _uv64(const unsigned char* buf, Py_ssize_t* ppos, Py_ssize_t end, uint64_t* out) noexcept nogil:
    cdef Py_ssize_t pos = ppos[0]
    cdef Py_ssize_t start = pos
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef unsigned char b
    cdef bint overflow = False
    while True:
        if pos >= end:
            ppos[0] = pos
            return 1
        b = buf[pos]
        pos += 1
        if shift == 63 and (b & 0x7E):
            overflow = True
        value |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if pos - start >= 10:
            return 2
    if overflow:
        return 3
    out[0] = value
    ppos[0] = pos
    return 0


cdef inline int32_t _unzig32(uint32_t u) noexcept nogil:
    return <int32_t>((u >> 1) ^ (-(<int64_t>(u & 1))))


cdef inline int64_t _unzig64(uint64_t u) noexcept nogil:
    return <int64_t>((u >> 1) ^ (<uint64_t>0 - (u & 1)))


cdef inline uint32_t _zig32(int32_t v) noexcept nogil:
    return (<uint32_t>v << 1) ^ <uint32_t>(v >> 31)


cdef inline uint64_t _zig64(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline int _uvsize(uint64_t u) noexcept nogil:
    cdef int n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


cdef inline int64_t _wadd(int64_t a, int64_t b) noexcept nogil:
    # Java's long arithmetic: wrap around instead of overflowing.
    return <int64_t>(<uint64_t>a + <uint64_t>b)


# ---------------------------------------------------------------------------
# The frame rule, one place for every splitter (lists, offsets, incremental
# readers, Arrow, capture): a 4-byte big-endian size, then that many bytes.

cdef enum:
    FRAME_COMPLETE = 0
    FRAME_PARTIAL = 1
    FRAME_BAD_SIZE = 2


cdef inline int _frame_at(const unsigned char* b, Py_ssize_t pos, Py_ssize_t n, int64_t min_size,
                          int64_t max_size, int32_t* size) noexcept nogil:
    """The frame whose size prefix starts at ``pos`` of ``b[0:n]``: COMPLETE (its body
    is ``b[pos + 4:pos + 4 + size]``), PARTIAL (more bytes needed; ``size`` is only
    set once the 4 prefix bytes are there) or BAD_SIZE (below ``min_size``, or above
    ``max_size`` when that is not negative)."""
    if n - pos < 4:
        return FRAME_PARTIAL
    size[0] = <int32_t>kp_ld32(b + pos)
    if size[0] < min_size or (max_size >= 0 and size[0] > max_size):
        return FRAME_BAD_SIZE
    if size[0] > n - pos - 4:
        return FRAME_PARTIAL
    return FRAME_COMPLETE


# ---------------------------------------------------------------------------
# The sticky-error cursor.  A read that fails records what failed, where and
# why, and returns -1; the callers only pass the -1 up (adding a path step
# each), and the first failure is what gets reported -- as the exception of
# an object decoder or the error text of an Arrow row, from the same record,
# without decoding anything a second time.  kafkaproto.errors.failure()
# turns a record into the exception (its tables follow these enums).

cdef enum:
    # failure codes: kafkaproto.errors.FAILURES, same order
    F_OK = 0
    F_NEED = 1          # need {x} bytes, {y} left
    F_LONG = 2          # longer than {x} bytes
    F_WIDE = 3          # does not fit in {x} bits
    F_NULL = 4          # null (length -1) in a non-nullable field
    F_LENGTH = 5        # invalid length {x}
    F_LIMIT = 6         # length {x} above the {y} limit
    F_UTF8 = 7          # invalid UTF-8
    F_COUNT = 8         # count {x} larger than the {y} bytes left
    F_TAG_SIZE = 9      # tagged field {x} declares {y} bytes, its value used {z}
    F_MEMORY = 10       # out of memory
    F_PYTHON = 11       # a Python exception is set (building objects)

cdef enum:
    # what was being read: kafkaproto.errors.WHATS, same order
    W_INT8 = 0
    W_INT16 = 1
    W_INT32 = 2
    W_INT64 = 3
    W_UINT16 = 4
    W_UINT32 = 5
    W_FLOAT64 = 6
    W_BOOL = 7
    W_UUID = 8
    W_STRING = 9
    W_COMPACT_STRING = 10
    W_BYTES = 11
    W_COMPACT_BYTES = 12
    W_ARRAY_LENGTH = 13
    W_COMPACT_ARRAY_LENGTH = 14
    W_UVARINT = 15
    W_VARINT = 16
    W_VARLONG = 17
    W_TAGGED_FIELDS = 18
    W_TAG = 19
    W_TAGGED_FIELD_SIZE = 20
    W_TAGGED_FIELD = 21
    W_RAW = 22

cdef enum:
    # path steps, innermost first
    P_FIELD = 0         # field number `value` of the struct `node`
    P_INDEX = 1         # element `value` of an array
    MAX_PATH = 64

cdef struct Step:
    int kind
    int64_t value
    const void* node

cdef struct Cur:
    const unsigned char* b
    Py_ssize_t pos
    Py_ssize_t end
    int fail            # F_OK until the first failure
    int what
    Py_ssize_t at
    int64_t x
    int64_t y
    int64_t z
    int depth
    Step* path          # MAX_PATH steps, innermost first; NULL: no path is kept (a plain Reader)
    void* ctx           # the output's state (the sink that a walker writes to)


cdef inline void cur_init(Cur* c, const unsigned char* b, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    """A cursor over b[pos:end] that keeps no path (give it ``path`` to keep one)."""
    c.b = b
    c.pos = pos
    c.end = end
    c.fail = F_OK
    c.depth = 0
    c.path = NULL


cdef inline int cur_fail(Cur* c, int fail, int what, Py_ssize_t at, int64_t x, int64_t y) noexcept nogil:
    c.fail = fail
    c.what = what
    c.at = at
    c.x = x
    c.y = y
    c.z = 0
    c.depth = 0
    return -1


cdef inline int cur_step(Cur* c, int kind, int64_t value, const void* node) noexcept nogil:
    """Add a path step while a failure unwinds; returns -1 to pass it on."""
    if c.path != NULL and c.depth < MAX_PATH:
        c.path[c.depth].kind = kind
        c.path[c.depth].value = value
        c.path[c.depth].node = node
        c.depth += 1
    return -1


cdef inline Py_ssize_t cur_take(Cur* c, Py_ssize_t n, int what, Py_ssize_t at) noexcept nogil:
    """Advance over ``n`` bytes → where they start; -1 (F_NEED, reported at ``at``,
    or at the current position when ``at`` < 0) if fewer are left."""
    cdef Py_ssize_t p = c.pos
    cdef Py_ssize_t left = c.end - p
    if n > left:
        return cur_fail(c, F_NEED, what, p if at < 0 else at, n, left)
    c.pos = p + n
    return p


cdef inline int cur_varint_fail(Cur* c, int st, int what, Py_ssize_t start, Py_ssize_t pos, int wide) noexcept nogil:
    if st == VARINT_TRUNCATED:
        return cur_fail(c, F_NEED, what, start, pos - start + 1, c.end - start)
    if st == VARINT_TOO_LONG:
        return cur_fail(c, F_LONG, what, start, 5 if wide == 32 else 10, 0)
    return cur_fail(c, F_WIDE, what, start, wide, 0)


cdef inline int cur_uv32(Cur* c, int what, uint32_t* out) noexcept nogil:
    cdef Py_ssize_t start = c.pos
    cdef Py_ssize_t pos = start
    cdef int st = _uv32(c.b, &pos, c.end, out)
    if st:
        return cur_varint_fail(c, st, what, start, pos, 32)
    c.pos = pos
    return 0


cdef inline int cur_uv64(Cur* c, int what, uint64_t* out) noexcept nogil:
    cdef Py_ssize_t start = c.pos
    cdef Py_ssize_t pos = start
    cdef int st = _uv64(c.b, &pos, c.end, out)
    if st:
        return cur_varint_fail(c, st, what, start, pos, 64)
    c.pos = pos
    return 0


cdef inline int cur_length(Cur* c, int what, Py_ssize_t start, int64_t n, bint nullable) noexcept nogil:
    """Check a string/bytes length read at ``start``: 0 (n bytes follow), 1 (null) or -1."""
    if n < 0:
        if n == -1:
            if nullable:
                return 1
            return cur_fail(c, F_NULL, what, start, 0, 0)
        return cur_fail(c, F_LENGTH, what, start, n, 0)
    return 0


cdef inline int cur_count(Cur* c, int what, Py_ssize_t start, int64_t n, bint nullable) noexcept nogil:
    """Check an element count read at ``start``: 0, 1 (null array) or -1.  Every
    element takes at least a byte, so a count above what is left is refused
    before anything is allocated."""
    cdef int r = cur_length(c, what, start, n, nullable)
    if r:
        return r
    if n > c.end - c.pos:
        return cur_fail(c, F_COUNT, what, start, n, c.end - c.pos)
    return 0


# ---------------------------------------------------------------------------
# Tagged-field sections, walked the same way everywhere (message bodies,
# headers, the Arrow loops): a count, then (tag, size, value) entries.

cdef inline int cur_tags_begin(Cur* c, uint32_t* count) noexcept nogil:
    cdef Py_ssize_t start = c.pos
    if cur_uv32(c, W_TAGGED_FIELDS, count):
        return -1
    if count[0] > c.end - c.pos:
        return cur_fail(c, F_COUNT, W_TAGGED_FIELDS, start, count[0], c.end - c.pos)
    return 0


cdef inline int cur_tag_next(Cur* c, uint32_t* tag, Py_ssize_t* at, uint32_t* size) noexcept nogil:
    """The next entry's tag and size; its value is the ``size`` bytes at c.pos (not consumed)."""
    at[0] = c.pos
    if cur_uv32(c, W_TAG, tag) or cur_uv32(c, W_TAGGED_FIELD_SIZE, size):
        return -1
    if size[0] > c.end - c.pos:
        return cur_fail(c, F_NEED, W_TAGGED_FIELD, at[0], size[0], c.end - c.pos)
    return 0


cdef inline int cur_skip_tags(Cur* c) noexcept nogil:
    cdef uint32_t count, i, tag, size
    cdef Py_ssize_t at
    if cur_tags_begin(c, &count):
        return -1
    for i in range(count):
        if cur_tag_next(c, &tag, &at, &size):
            return -1
        c.pos += size
    return 0


# ---------------------------------------------------------------------------
# Headers.  A request header: api key, api version, correlation id (v0), a
# client id (v1+: an int16-length string even in the flexible v2), a tagged
# section (v2; walked by the caller).  A response header: correlation id, a
# tagged section (v1).

cdef struct RequestHead:
    int16_t api_key
    int16_t api_version
    int32_t correlation_id
    Py_ssize_t client_id_at     # where the client id's bytes start
    int32_t client_id_len       # -1: null (or header v0)


cdef inline int cur_request_head(Cur* c, int header_version, RequestHead* h) noexcept nogil:
    """Everything of a request header up to its tagged section."""
    cdef Py_ssize_t p, start
    cdef int r
    cdef int64_t n
    p = cur_take(c, 2, W_INT16, -1)
    if p < 0:
        return -1
    h.api_key = <int16_t>kp_ld16(c.b + p)
    p = cur_take(c, 2, W_INT16, -1)
    if p < 0:
        return -1
    h.api_version = <int16_t>kp_ld16(c.b + p)
    p = cur_take(c, 4, W_INT32, -1)
    if p < 0:
        return -1
    h.correlation_id = <int32_t>kp_ld32(c.b + p)
    h.client_id_at = c.pos
    h.client_id_len = -1
    if header_version >= 1:
        start = c.pos
        p = cur_take(c, 2, W_STRING, -1)
        if p < 0:
            return -1
        n = <int16_t>kp_ld16(c.b + p)
        r = cur_length(c, W_STRING, start, n, True)
        if r < 0:
            return -1
        if r == 0:
            p = cur_take(c, n, W_STRING, start)
            if p < 0:
                return -1
            if not kp_utf8_ok(c.b + p, n):
                return cur_fail(c, F_UTF8, W_STRING, start, 0, 0)
            h.client_id_at = p
            h.client_id_len = <int32_t>n
    return 0
