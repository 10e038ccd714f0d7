# cython: language_level=3
"""A stream given as a column of consecutive chunks → one row per frame (``kafkaproto.arrow._frames``); twin:
``_frames_py``.  The frame rule is the one every splitter uses (``_frame_at`` in kafkaproto/_wire.pxd)."""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset

from kafkaproto._wire cimport kp_ld32, _frame_at, FRAME_COMPLETE, FRAME_BAD_SIZE
from kafkaproto.arrow._columns cimport RowsIn, rows_in, row_at, cmem, IN_VIEW

COMPILED = True


cdef enum:
    # Views address their data through int32 offsets: a region (the input, or
    # the side buffer of frames that straddle chunks) is exposed as windows
    # that start every 1 GiB and are up to 2 GiB - 1 long, so any frame of at
    # most 1 GiB lies inside the window its first byte falls in.
    WIN_SHIFT = 30


cdef struct _Split:
    uint8_t* views      # 16 bytes per frame (binary_view), or NULL
    int64_t* offs       # n + 1 offsets (large_binary), or NULL
    uint8_t* out        # copied bodies (large_binary) / straddling frames (views)
    int64_t olen
    int64_t ocap
    int64_t n
    int64_t cap
    int64_t side_base   # index of the first side-buffer window
    uint8_t* carry      # bytes of an incomplete frame, across chunks
    int64_t clen
    int64_t ccap
    int64_t max_size
    int64_t bad_at      # stream offset of a rejected size prefix, or -1
    int32_t bad_size
    int64_t consumed    # stream offset just past the last complete frame


cdef int _split_reserve(_Split* s) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if s.n < s.cap:
        return 0
    cap = s.cap * 2 if s.cap else 1024
    if s.views != NULL:
        p = realloc(s.views, cap * 16)
        if p == NULL:
            return -1
        s.views = <uint8_t*>p
    else:
        p = realloc(s.offs, (cap + 1) * 8)
        if p == NULL:
            return -1
        s.offs = <int64_t*>p
    s.cap = cap
    return 0


cdef int _out_append(_Split* s, const uint8_t* src, int64_t n) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if s.olen + n > s.ocap:
        cap = s.ocap * 2
        if cap < s.olen + n:
            cap = s.olen + n
        p = realloc(s.out, cap)
        if p == NULL:
            return -1
        s.out = <uint8_t*>p
        s.ocap = cap
    if n:  # an empty frame may come from, or go to, a NULL buffer: memcpy of it is undefined
        memcpy(s.out + s.olen, src, n)
    s.olen += n
    return 0


cdef int _emit(_Split* s, const uint8_t* body, int64_t size, int64_t region, int64_t pos) noexcept nogil:
    """One frame: a view of (region window, offset), or a copy (large_binary / straddling)."""
    cdef uint8_t* v
    cdef int32_t L = <int32_t>size
    cdef int32_t bi, bo
    if _split_reserve(s):
        return -1
    if s.views == NULL:
        if _out_append(s, body, size):
            return -1
        s.offs[s.n + 1] = s.olen
        s.n += 1
        return 0
    v = s.views + 16 * s.n
    memset(v, 0, 16)
    memcpy(v, &L, 4)
    if size <= 12:
        if size:
            memcpy(v + 4, body, size)
    else:
        if region < 0:
            # straddles chunks: lives in the side buffer
            pos = s.olen
            if _out_append(s, body, size):
                return -1
            bi = <int32_t>(s.side_base + (pos >> WIN_SHIFT))
        else:
            bi = <int32_t>(region + (pos >> WIN_SHIFT))
        bo = <int32_t>(pos & ((<int64_t>1 << WIN_SHIFT) - 1))
        memcpy(v + 4, body, 4)
        memcpy(v + 8, &bi, 4)
        memcpy(v + 12, &bo, 4)
    s.n += 1
    return 0


cdef int _carry_append(_Split* s, const uint8_t* src, int64_t n) noexcept nogil:
    cdef int64_t cap
    cdef void* p
    if n == 0:
        return 0  # memcpy of nothing into a carry never allocated (NULL) is undefined in C
    if s.clen + n > s.ccap:
        cap = s.ccap * 2
        if cap < s.clen + n:
            cap = s.clen + n
        if cap < 256:
            cap = 256
        p = realloc(s.carry, cap)
        if p == NULL:
            return -1
        s.carry = <uint8_t*>p
        s.ccap = cap
    memcpy(s.carry + s.clen, src, n)
    s.clen += n
    return 0


cdef int _split_chunk(_Split* s, const uint8_t* b, int64_t n, int64_t region, int64_t base,
                      int64_t stream_at) noexcept nogil:
    """Frames of one chunk; ``base`` is the chunk's offset inside its region, ``stream_at`` in the stream."""
    cdef int64_t pos = 0
    cdef int64_t need
    cdef int32_t size = 0
    cdef int st
    if s.bad_at >= 0:
        return _carry_append(s, b, n)
    if s.clen:
        # finish the frame that started in an earlier chunk
        if s.clen < 4:
            need = 4 - s.clen
            if need > n:
                need = n
            if _carry_append(s, b, need):
                return -1
            pos = need
            if s.clen < 4:
                return 0
        if _frame_at(s.carry, 0, s.clen, 0, s.max_size, &size) == FRAME_BAD_SIZE:
            s.bad_at = s.consumed
            s.bad_size = size
            return _carry_append(s, b + pos, n - pos)
        need = 4 + <int64_t>size - s.clen
        if need > n - pos:
            return _carry_append(s, b + pos, n - pos)
        if _carry_append(s, b + pos, need):
            return -1
        pos += need
        if _emit(s, s.carry + 4, size, -1, 0):
            return -1
        s.consumed += s.clen
        s.clen = 0
    while True:
        st = _frame_at(b, pos, n, 0, s.max_size, &size)
        if st == FRAME_BAD_SIZE:
            s.bad_at = stream_at + pos
            s.bad_size = size
            break
        if st != FRAME_COMPLETE:
            break
        if _emit(s, b + pos + 4, size, region, base + pos + 4):
            return -1
        pos += 4 + size
        s.consumed = stream_at + pos
    return _carry_append(s, b + pos, n - pos)


def arrow_split_frames(arr, int kind, int64_t max_frame_size, bint views):
    """Split a stream given as chunks (rows of ``arr``, nulls skipped) into frames.

    ``views``: binary_view rows pointing into the input (window buffers of
    region 0) and into a side buffer for frames that straddle chunks; else
    large_binary rows with copied bodies.  Returns a dict of buffers.
    """
    cdef RowsIn rin = rows_in(arr, kind)
    cdef _Split s
    cdef int64_t i, n, stream_at = 0, base, data_len = 0
    cdef const uint8_t* p
    cdef const uint8_t* data0
    cdef int rc = 0
    if kind == IN_VIEW:
        raise ValueError("split_frames reads binary or large_binary chunks")
    memset(&s, 0, sizeof(_Split))
    s.max_size = max_frame_size
    s.bad_at = -1
    s.ocap = 4096
    s.out = <uint8_t*>malloc(s.ocap)
    bufs = arr.buffers()
    if bufs[2] is not None:
        data_len = bufs[2].size
    # region 0 is the input's data buffer: 1 window per started GiB
    s.side_base = (data_len >> WIN_SHIFT) + 1
    if views:
        s.views = <uint8_t*>malloc(16 * 1024)
        s.cap = 1024
    else:
        s.offs = <int64_t*>malloc(8 * 1025)
        s.cap = 1024
        if s.offs != NULL:
            s.offs[0] = 0
    if s.out == NULL or (s.views == NULL and s.offs == NULL):
        free(s.out)
        free(s.views)
        free(s.offs)
        raise MemoryError()
    data0 = rin.r.data
    try:
        with nogil:
            for i in range(rin.r.n):
                if not row_at(&rin.r, i, &p, &n):
                    continue
                base = p - data0
                rc = _split_chunk(&s, p, n, 0, base, stream_at)
                if rc:
                    break
                stream_at += n
        if rc:
            raise MemoryError()
        out = {
            "n": s.n,
            "views": cmem(s.views, s.n * 16) if views else None,
            "offsets": None if views else cmem(s.offs, (s.n + 1) * 8),
            "data": cmem(s.out, s.olen),
            "side_base": s.side_base,
            "tail": PyBytes_FromStringAndSize(<const char*>s.carry, s.clen) if s.clen else b"",
            "consumed": s.consumed,
            "bad_at": s.bad_at,
            "bad_size": s.bad_size,
        }
        s.views = NULL
        s.offs = NULL
        s.out = NULL
    finally:
        free(s.views)
        free(s.offs)
        free(s.out)
        free(s.carry)
    return out


