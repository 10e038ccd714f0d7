# The one walker of v2 records: checks one record at a time, in the order
# the twin (_batches_py._parse_v2) checks them, and hands each sound record
# (and each of its headers) to a sink.  A template compiled once per sink:
#   kafkaproto/records/_batches.pyx   sinks: check a batch (building nothing
#                                     but control records); build one Record
#   kafkaproto/arrow/_records.pyx     sink: Spark-shaped Arrow columns
#   kafkaproto/log/_text.pyx          sink: the records staged for dump-log
# Each defines a sink type ``RSink``, the struct ``RCur`` of what the sink
# writes through per record (its cursors: a local of the batch's walk, so
# that the compiler keeps them in registers; stores through the sink's
# buffers cannot touch them) and, ``noexcept nogil``, returning 0 or -1 after
# recording a failure on the cursor ``c``:
#   rs_begin(s, k)                                 the batch's walk begins: the cursors from the sink
#   rs_end(s, k)                                   it ends (whole or not): the cursors back (void)
#   rs_header(c, s, k, j, key, klen, value, vlen)  a header (vlen -1: null value)
#   rs_record(c, s, k, i, control, start, attributes, timestamp_delta, offset_delta,
#             key, key_len, value, value_len, header_count)
#                                                  the record passed every check (key/value NULL: null;
#                                                  control: of a control batch)
#
# Failures are recorded on the cursor (kafkaproto/_wire.pxd) with the record
# codes below (fail), the field (what), the record's number as a path step,
# and a header's number as a second one; records._common.record_failure()
# turns them into the error the twin raises.

from libc.stdint cimport INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN


cdef enum:
    # record failures (records._common.RECORD_FAILURES, same order)
    RF_VARINT = 1           # VARINT_PROBLEMS[x]
    RF_OUTSIDE = 2          # length {x} outside the {y} bytes left
    RF_INVALID = 3          # {label} {x} invalid with {y} bytes left
    RF_UTF8 = 4             # invalid UTF-8
    RF_LEFT_AFTER = 5       # {x} bytes left after the record's fields
    RF_AFTER_LAST = 6       # {x} bytes after the last of {y} records
    RF_CONTROL_KEY = 7      # control record key of {x} bytes (need 4)
    RF_CONTROL_VALUE = 8    # transaction marker value of {x} bytes (need 6)
    RF_LIMIT = 9            # header count {x} above max_headers_per_record={y}
    RF_MEMORY = 10          # = F_MEMORY
    RF_PYTHON = 11          # = F_PYTHON
    RF_BATCH_LIMIT = 12     # {x} headers in records 0-{i} above max_headers_per_batch={y}
    RF_OFFSET = 13          # offset delta {x} takes the base offset {y} past int64

cdef enum:
    # the field being read (records._common.RECORD_FIELDS, same order)
    RW_LENGTH = 0
    RW_ATTRIBUTES = 1
    RW_TIMESTAMP_DELTA = 2
    RW_OFFSET_DELTA = 3
    RW_KEY_LENGTH = 4
    RW_VALUE_LENGTH = 5
    RW_HEADER_COUNT = 6
    RW_HEADER_KEY_LENGTH = 7
    RW_HEADER_KEY = 8
    RW_HEADER_VALUE_LENGTH = 9
    RW_CONTROL = 10
    RW_NONE = 11


cdef inline int _rfail(Cur* c, int code, int field, Py_ssize_t at, int64_t x, int64_t y) noexcept nogil:
    return cur_fail(c, code, field, at, x, y)


# The walk keeps its position in a local (a register) and reads varints with
# the bare cores: this is the records' hot loop.

cdef inline int _rv32(const uint8_t* b, Py_ssize_t* pos, Py_ssize_t end, int32_t* out) noexcept nogil:
    cdef uint32_t u
    cdef Py_ssize_t p = pos[0]
    cdef int st
    if p + 1 < end:
        # one and two bytes (lengths and deltas below 8192) read straight
        u = b[p]
        if u < 0x80:
            out[0] = _unzig32(u)
            pos[0] = p + 1
            return 0
        if b[p + 1] < 0x80:
            u = (u & 0x7F) | (<uint32_t>b[p + 1] << 7)
            out[0] = _unzig32(u)
            pos[0] = p + 2
            return 0
    st = _uv32(b, pos, end, &u)
    out[0] = _unzig32(u)
    return st


cdef inline int _rv64(const uint8_t* b, Py_ssize_t* pos, Py_ssize_t end, int64_t* out) noexcept nogil:
    cdef uint64_t u
    cdef Py_ssize_t p = pos[0]
    cdef int st
    if p + 1 < end:
        u = b[p]
        if u < 0x80:
            out[0] = _unzig64(u)
            pos[0] = p + 1
            return 0
        if b[p + 1] < 0x80:
            u = (u & 0x7F) | (<uint64_t>b[p + 1] << 7)
            out[0] = _unzig64(u)
            pos[0] = p + 2
            return 0
    st = _uv64(b, pos, end, &u)
    out[0] = _unzig64(u)
    return st


cdef inline int _rec_fail(Cur* c, int32_t i, int code, int field, Py_ssize_t at, int64_t x, int64_t y) noexcept nogil:
    cur_fail(c, code, field, at, x, y)
    return cur_step(c, P_INDEX, i, NULL)


cdef inline int _hdr_fail(Cur* c, int32_t i, int32_t j, int code, int field, Py_ssize_t at, int64_t x,
                          int64_t y) noexcept nogil:
    cur_fail(c, code, field, at, x, y)
    cur_step(c, P_INDEX, j, NULL)
    return cur_step(c, P_INDEX, i, NULL)


cdef inline int _walk_record(Cur* c, int32_t i, bint control, RSink s, RCur* k, int32_t max_headers,
                             int64_t* batch_headers, int64_t max_batch_headers, bint offsets_fit) noexcept nogil:
    # batch_headers: the headers of the batch's records before this one, then with its own;
    # offsets_fit: no int32 offset delta takes the batch's base offset past int64.
    # Every field is decoded into a local (a register) and handed to the sink as a value.
    cdef const uint8_t* b = c.b
    cdef Py_ssize_t pos = c.pos, start = pos, end = c.end, at, rend
    cdef int32_t length, j, hk, hv, offset_delta, key_len, value_len, header_count
    cdef int64_t timestamp_delta
    cdef int st, attributes
    cdef const uint8_t* kp
    cdef const uint8_t* vp
    cdef const uint8_t* key
    cdef const uint8_t* value
    st = _rv32(b, &pos, end, &length)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_LENGTH, start, st, 0)
    if length < 0 or length > end - pos:
        return _rec_fail(c, i, RF_OUTSIDE, RW_LENGTH, start, length, end - pos)
    rend = pos + length
    if pos >= rend:
        return _rec_fail(c, i, RF_VARINT, RW_ATTRIBUTES, pos, VARINT_TRUNCATED, 0)
    attributes = <int8_t>b[pos]
    pos += 1
    at = pos
    st = _rv64(b, &pos, rend, &timestamp_delta)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_TIMESTAMP_DELTA, at, st, 0)
    at = pos
    st = _rv32(b, &pos, rend, &offset_delta)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_OFFSET_DELTA, at, st, 0)
    if not offsets_fit and ((offset_delta > 0 and s.base_offset > INT64_MAX - offset_delta) or
                            (offset_delta < 0 and s.base_offset < INT64_MIN - offset_delta)):
        # an offset no writer can give: a problem, never an offset wrapped around
        return _rec_fail(c, i, RF_OFFSET, RW_OFFSET_DELTA, at, offset_delta, s.base_offset)
    at = pos
    st = _rv32(b, &pos, rend, &key_len)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_KEY_LENGTH, at, st, 0)
    if key_len < -1 or key_len > rend - pos:
        return _rec_fail(c, i, RF_INVALID, RW_KEY_LENGTH, at, key_len, rend - pos)
    key = NULL
    if key_len >= 0:
        key = b + pos
        pos += key_len
    at = pos
    st = _rv32(b, &pos, rend, &value_len)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_VALUE_LENGTH, at, st, 0)
    if value_len < -1 or value_len > rend - pos:
        return _rec_fail(c, i, RF_INVALID, RW_VALUE_LENGTH, at, value_len, rend - pos)
    value = NULL
    if value_len >= 0:
        value = b + pos
        pos += value_len
    at = pos
    st = _rv32(b, &pos, rend, &header_count)
    if st:
        return _rec_fail(c, i, RF_VARINT, RW_HEADER_COUNT, at, st, 0)
    if header_count:
        if header_count < 0 or header_count > rend - pos:
            return _rec_fail(c, i, RF_INVALID, RW_HEADER_COUNT, at, header_count, rend - pos)
        if header_count > max_headers:
            # before the sink builds any: 2 bytes a header would be ~33 M in 64 MiB
            return _rec_fail(c, i, RF_LIMIT, RW_HEADER_COUNT, at, header_count, max_headers)
        if header_count > max_batch_headers - batch_headers[0]:
            # the per-record cap times the records of a batch is still ~30 M headers
            return _rec_fail(c, i, RF_BATCH_LIMIT, RW_HEADER_COUNT, at, batch_headers[0] + header_count,
                             max_batch_headers)
        batch_headers[0] += header_count
        for j in range(header_count):
            at = pos
            st = _rv32(b, &pos, rend, &hk)
            if st:
                return _hdr_fail(c, i, j, RF_VARINT, RW_HEADER_KEY_LENGTH, at, st, 0)
            if hk < 0 or hk > rend - pos:
                return _hdr_fail(c, i, j, RF_INVALID, RW_HEADER_KEY_LENGTH, at, hk, rend - pos)
            if not kp_utf8_ok(b + pos, hk):
                return _hdr_fail(c, i, j, RF_UTF8, RW_HEADER_KEY, pos, 0, 0)
            kp = b + pos
            pos += hk
            at = pos
            st = _rv32(b, &pos, rend, &hv)
            if st:
                return _hdr_fail(c, i, j, RF_VARINT, RW_HEADER_VALUE_LENGTH, at, st, 0)
            if hv < -1 or hv > rend - pos:
                return _hdr_fail(c, i, j, RF_INVALID, RW_HEADER_VALUE_LENGTH, at, hv, rend - pos)
            vp = NULL
            if hv >= 0:
                vp = b + pos
                pos += hv
            if rs_header(c, s, k, j, kp, hk, vp, hv):
                return -1
    if pos != rend:
        return _rec_fail(c, i, RF_LEFT_AFTER, RW_LENGTH, pos, rend - pos, 0)
    c.pos = pos
    if control:
        # a control batch's records are markers: key (version, type), and for
        # COMMIT/ABORT a value (version, coordinator epoch)
        if key_len < 4:
            return _rfail(c, RF_CONTROL_KEY, RW_CONTROL, start, key_len if key_len > 0 else 0, 0)
        hk = <int16_t>kp_ld16(key + 2)
        if (hk == 0 or hk == 1) and value_len < 6:
            return _rfail(c, RF_CONTROL_VALUE, RW_CONTROL, start, value_len if value_len > 0 else 0, 0)
    return rs_record(c, s, k, i, control, start, attributes, timestamp_delta, offset_delta, key, key_len, value, value_len,
                     header_count)


cdef int _walk_records(Cur* c, int32_t count, bint control, RSink s, int32_t max_headers,
                       int64_t max_batch_headers, int64_t* batch_headers) noexcept nogil:
    """Every record of a batch (the cursor spans exactly its records).
    ``max_batch_headers``: the lesser of max_headers_per_batch and what the
    call has left of max_headers_per_call (the error tells which passed);
    ``batch_headers``: set to the batch's headers."""
    cdef int32_t i
    cdef int64_t seen = 0  # (a local: the hot loop keeps it in a register)
    cdef RCur k            # the sink's cursors, the same way
    cdef int st = 0
    # once a batch, what was checked once a record: every int32 delta keeps the offsets in int64
    cdef bint offsets_fit = INT64_MIN - INT32_MIN <= s.base_offset <= INT64_MAX - INT32_MAX
    rs_begin(s, &k)
    for i in range(count):
        if _walk_record(c, i, control, s, &k, max_headers, &seen, max_batch_headers, offsets_fit):
            st = -1
            break
    rs_end(s, &k)
    batch_headers[0] = seen
    if st:
        return -1
    if c.pos != c.end:
        return _rfail(c, RF_AFTER_LAST, RW_NONE, c.pos, c.end - c.pos, count)
    return 0


# ---------------------------------------------------------------------------
# What one call (records.decode with every batch it yields, arrow.records with
# every row of its column) has taken of its per-call caps: a C struct, so
# that the walk spends no Python on it per batch; its errors are
# records._common.CallBudget's, made from it when one is raised.

cdef struct Budget:
    int64_t records
    int64_t headers
    int64_t decompressed
    int64_t max_records
    int64_t max_headers
    int64_t max_decompressed


cdef inline void budget_init(Budget* b, int64_t max_records, int64_t max_headers, int64_t max_decompressed) noexcept:
    b.records = b.headers = b.decompressed = 0
    b.max_records = max_records
    b.max_headers = max_headers
    b.max_decompressed = max_decompressed


cdef int budget_load(Budget* b, object call) except -1:
    """Take a records._common.CallBudget's caps and counts."""
    b.records, b.headers, b.decompressed = call.records, call.headers, call.decompressed
    b.max_records, b.max_headers, b.max_decompressed = call.max_records, call.max_headers, call.max_decompressed
    return 0


cdef int budget_store(const Budget* b, object call) except -1:
    call.records, call.headers, call.decompressed = b.records, b.headers, b.decompressed
    return 0


cdef object budget_call(const Budget* b):
    """The budget as a records._common.CallBudget (what its error texts read)."""
    call = _CallBudget(b.max_records, b.max_headers, b.max_decompressed)
    budget_store(b, call)
    return call


cdef inline int budget_take_records(Budget* b, int64_t count, Py_ssize_t at, bint message) except -1:
    """A batch's ``count`` records, counted; RecordLimitError past the call's cap."""
    if count > b.max_records - b.records:
        budget_call(b).take_records(count, at, "message" if message else "record batch")  # (raises)
    b.records += count
    return 0


cdef inline int64_t budget_records_left(const Budget* b, int64_t batch_cap) noexcept nogil:
    return batch_cap if batch_cap < b.max_records - b.records else b.max_records - b.records


cdef inline int64_t budget_headers_left(const Budget* b, int64_t batch_cap) noexcept nogil:
    return batch_cap if batch_cap < b.max_headers - b.headers else b.max_headers - b.headers


cdef object budget_decompress(Budget* b, int codec, object data, int magic, object limit, Py_ssize_t at):
    """A batch's records (or a legacy wrapper's value) decompressed within the batch's
    cap and what the call has left, counted (CallBudget.decompress)."""
    if b.max_decompressed - b.decompressed >= limit:
        out = _decompress(codec, data, magic, limit, at)
        b.decompressed += len(out)
        return out
    call = budget_call(b)
    out = call.decompress(codec, data, magic, limit, at)
    b.decompressed = call.decompressed
    return out


# ---------------------------------------------------------------------------
# The walk over the batches of a blob (v2 batches and legacy top-level
# messages), shared the same way: the header checks of a batch, then for v2
# its CRC, codec and count checks and its decompression.  These run with the
# GIL (decompression is cramjam's) and raise the twin's exceptions.

cdef enum:
    BATCH_WHOLE = 0
    BATCH_TRUNCATED = 1
    BATCH_END = 2

cdef struct BatchView:
    Py_ssize_t at
    Py_ssize_t end              # just past the batch
    int32_t size
    int magic
    int64_t base_offset
    int32_t ple
    uint32_t crc
    int attrs
    int32_t lod
    int64_t base_ts
    int64_t max_ts
    int64_t pid
    int pepoch
    int32_t bseq
    int32_t count
    Py_ssize_t available        # truncated: bytes present


cdef int _batch_at(const uint8_t* b, Py_ssize_t pos, Py_ssize_t n, BatchView* v) except -1:
    """The batch at ``pos`` of ``b[0:n]``: BATCH_WHOLE (its header read; for v2 every
    field), BATCH_TRUNCATED (the blob ends inside it: normal at the end of a Fetch
    partition) or BATCH_END; raises for a batch no encoder writes."""
    cdef Py_ssize_t left = n - pos
    cdef const uint8_t* p = b + pos
    v.at = pos
    if left <= 0:
        return BATCH_END
    v.available = left
    if left < 12:
        v.size = -1
        if left >= 8:
            v.base_offset = <int64_t>kp_ld64(p)
        return BATCH_TRUNCATED
    v.size = <int32_t>kp_ld32(p + 8)
    v.base_offset = <int64_t>kp_ld64(p)
    if v.size < 14:
        raise _batch_error(f"size {v.size} below the minimum of 14", pos + 8)
    if v.size > left - 12:
        return BATCH_TRUNCATED
    v.end = pos + 12 + v.size
    v.magic = <int8_t>p[16]
    if v.magic > 2 or v.magic < 0:
        raise _batch_error(f"unknown magic {v.magic}", pos + 16)
    if v.magic == 2:
        if v.size < 49:
            raise _batch_error(f"size {v.size} below the v2 minimum of 49", pos + 8)
        v.ple = <int32_t>kp_ld32(p + 12)
        v.crc = kp_ld32(p + 17)
        v.attrs = <int16_t>kp_ld16(p + 21)
        v.lod = <int32_t>kp_ld32(p + 23)
        v.base_ts = <int64_t>kp_ld64(p + 27)
        v.max_ts = <int64_t>kp_ld64(p + 35)
        v.pid = <int64_t>kp_ld64(p + 43)
        v.pepoch = <int16_t>kp_ld16(p + 51)
        v.bseq = <int32_t>kp_ld32(p + 53)
        v.count = <int32_t>kp_ld32(p + 57)
    return BATCH_WHOLE


cdef object _v2_records(BatchView* v, object mv, bint check_crc, object limit, int32_t max_records, Budget* budget,
                        Py_ssize_t* start, Py_ssize_t* end):
    """The records region of a whole v2 batch → None (stored as is: ``start``/``end``
    set to where it lies in the blob) or the decompressed bytes (0, their length);
    after the CRC, codec and count checks (the count against ``max_records`` and
    what the call's ``budget`` has left, before anything is decompressed; the
    decompressed bytes against both too)."""
    cdef Py_ssize_t pos = v.at
    cdef uint32_t computed
    cdef int codec = v.attrs & 0x07
    if check_crc:
        computed = _crc32c(mv[pos + 21:v.end])
        if computed != v.crc:
            raise _crc_error("CRC32C", v.crc, computed, pos + 17)
    if codec > 4:
        raise _batch_error(f"unknown compression codec {codec}", pos + 21)
    if (v.lod > 0 and v.base_offset > INT64_MAX - v.lod) or (v.lod < 0 and v.base_offset < INT64_MIN - v.lod):
        raise _batch_error(_past_int64("last offset delta", v.lod, v.base_offset), pos + 23)
    if v.count < 0:
        raise _batch_error(f"invalid record count {v.count}", pos + 57)
    if v.count > max_records:
        raise _batch_limit_error(v.count, max_records, pos + 57)
    budget_take_records(budget, v.count, pos + 57, False)
    if codec == 0:
        data = None
        start[0] = pos + 61
        end[0] = v.end
    else:
        data = budget_decompress(budget, codec, mv[pos + 61:v.end], 2, limit, pos + 61)
        start[0] = 0
        end[0] = len(data)
    if v.count > end[0] - start[0]:
        raise _batch_error(f"record count {v.count} larger than the {end[0] - start[0]} bytes of records", pos + 57)
    return data


# ---------------------------------------------------------------------------
# Legacy message sets (magic 0/1): the one walker of their messages.  A
# top-level message is a batch of one record, or, compressed, of its inner
# messages.  Each record goes to the sink:
#   ls_record(s, b, m, offset, timestamp, timestamp_type)
#   ls_end(s, gone)                               the records are all out (gone: their buffer goes next) except -1
# (``b``: the buffer the message lies in).  A message no encoder writes
# raises the twin's exception (records/_legacy.py), through legacy_failure().

cdef enum:
    # legacy failures (records._common.legacy_failure, same numbers)
    LF_MAGIC = 1            # unknown magic {x}
    LF_SIZE_MIN = 2         # size {x} below the v{y} minimum of {14|22}
    LF_CRC = 3              # CRC32 mismatch: stored {x}, computed {y}
    LF_LEN_NEEDS = 4        # {field} length needs 4 bytes, {x} left
    LF_LEN_INVALID = 5      # {field} length {x} invalid with {y} bytes left
    LF_LEFT_AFTER = 6       # {x} bytes left after the value
    LF_CODEC = 7            # zstd is not allowed in magic 0/1 / unknown compression codec {x}
    LF_NULL_VALUE = 8       # compressed message with a null value
    LF_CUT = 9              # inner message cut short: {x} bytes
    LF_INNER_SIZE = 10      # inner message size {x} invalid with {y} bytes left
    LF_INNER_MAGIC = 11     # inner magic {x} differs from the wrapper's {y}
    LF_NESTED = 12          # compressed message inside a compressed message
    LF_EMPTY = 13           # compressed message with no inner messages
    LF_OFFSET = 14          # wrapper offset {x} below the last inner offset {y}

cdef enum:
    LW_MAGIC = 0
    LW_SIZE = 1
    LW_CRC = 2
    LW_KEY = 3
    LW_VALUE = 4
    LW_ATTRIBUTES = 5
    LW_NONE = 6

cdef struct LMsg:
    int64_t offset
    int32_t size
    uint32_t crc
    int magic
    int attrs
    int64_t ts
    Py_ssize_t kpos
    int32_t klen
    Py_ssize_t vpos
    int32_t vlen


cdef int _legacy_msg(Cur* c, Py_ssize_t pos, bint check_crc, LMsg* m) noexcept nogil:
    """The legacy message at ``pos`` of the cursor's buffer (its 12 + size bytes all
    there, size >= 14): 0, or -1 with the failure of records/_legacy.py's _message."""
    cdef const uint8_t* b = c.b
    cdef int32_t size = <int32_t>kp_ld32(b + pos + 8)
    cdef Py_ssize_t mend = pos + 12 + size
    cdef Py_ssize_t q = pos + 18
    cdef int32_t n
    cdef uint32_t computed
    cdef int k
    m.magic = <int8_t>b[pos + 16]
    if m.magic != 0 and m.magic != 1:
        return cur_fail(c, LF_MAGIC, LW_MAGIC, pos + 16, m.magic, 0)
    if size < (22 if m.magic else 14):
        return cur_fail(c, LF_SIZE_MIN, LW_SIZE, pos + 8, size, m.magic)
    m.crc = kp_ld32(b + pos + 12)
    if check_crc:
        computed = crc32_of(b + pos + 16, mend - pos - 16)
        if computed != m.crc:
            return cur_fail(c, LF_CRC, LW_CRC, pos + 12, m.crc, computed)
    m.offset = <int64_t>kp_ld64(b + pos)
    m.size = size
    m.attrs = <int8_t>b[pos + 17]
    m.ts = -1
    if m.magic == 1:
        m.ts = <int64_t>kp_ld64(b + q)
        q += 8
    for k in range(2):
        if mend - q < 4:
            return cur_fail(c, LF_LEN_NEEDS, LW_KEY + k, q, mend - q, 0)
        n = <int32_t>kp_ld32(b + q)
        if n < -1 or n > mend - q - 4:
            return cur_fail(c, LF_LEN_INVALID, LW_KEY + k, q, n, mend - q - 4)
        q += 4
        if k == 0:
            m.kpos = q
            m.klen = n
        else:
            m.vpos = q
            m.vlen = n
        if n > 0:
            q += n
    if q != mend:
        return cur_fail(c, LF_LEFT_AFTER, LW_SIZE, q, mend - q, 0)
    return 0


cdef object _legacy_error(Cur* c, object index, Py_ssize_t batch_at):
    """The exception for a legacy failure: of the top-level message (index None,
    offsets in the blob) or of inner message ``index`` (offsets in the decompressed set)."""
    return _legacy_failure(c.fail, c.what, c.at, c.x, c.y, index, batch_at)


cdef int _legacy_walk(object mv, const uint8_t* b, Py_ssize_t n, BatchView* v, bint check_crc, object limit,
                      LSink s, LMsg* w, int32_t max_records, Budget* budget, bint emit, int64_t* pshift) except -1:
    """The top-level legacy message of ``v`` (whole) into the sink: its one record,
    or its inner messages' (``w``: the wrapper, read here; more than ``max_records``
    of them, or than the call's ``budget`` has left, raise before the sink gets
    any) → how many.  ``emit`` False: a compressed message's inner messages are
    checked, and only its buffer goes to the sink (``ls_buffer``), with their
    offsets' shift in ``pshift``."""
    cdef Cur c
    cdef LMsg m
    cdef Py_ssize_t q, vat
    cdef int32_t isize, cap
    cdef int codec, ts_type, i
    cdef int64_t last = 0, shift = 0, ts
    cdef Py_buffer view
    cur_init(&c, b, 0, n)
    if _legacy_msg(&c, v.at, check_crc, w):
        raise _legacy_error(&c, None, v.at)
    codec = w.attrs & 0x07
    ts_type = -1 if w.magic == 0 else (1 if w.attrs & 0x08 else 0)
    if codec == 0:
        budget_take_records(budget, 1, v.at, True)
        ls_begin(s, 1, w.size)
        ls_record(s, b, w, w.offset, w.ts, ts_type)
        ls_end(s, False)
        return 1
    if codec > 3:
        cur_fail(&c, LF_CODEC, LW_NONE, v.at + 17, codec, 0)
        raise _legacy_error(&c, None, v.at)
    if w.vlen < 0:
        cur_fail(&c, LF_NULL_VALUE, LW_NONE, v.at + 12 + w.size - 4, 0, 0)
        raise _legacy_error(&c, None, v.at)
    vat = w.vpos
    data = budget_decompress(budget, codec, mv[vat:vat + w.vlen], w.magic, limit, vat)
    cap = budget_records_left(budget, max_records)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        ls_buffer(s, data, <const uint8_t*>view.buf)
        cur_init(&c, <const uint8_t*>view.buf, 0, view.len)
        # check every inner message first: their offsets need the last one
        q = 0
        i = 0
        while q < c.end:
            if i >= cap:
                raise _legacy_records_error(cap, max_records, budget_call(budget), v.at)
            if c.end - q < 12:
                cur_fail(&c, LF_CUT, LW_SIZE, q, c.end - q, 0)
                raise _legacy_error(&c, i, v.at)
            isize = <int32_t>kp_ld32(c.b + q + 8)
            if isize < 14 or isize > c.end - q - 12:
                cur_fail(&c, LF_INNER_SIZE, LW_SIZE, q + 8, isize, c.end - q - 12)
                raise _legacy_error(&c, i, v.at)
            if _legacy_msg(&c, q, check_crc, &m):
                raise _legacy_error(&c, i, v.at)
            if m.magic != w.magic:
                cur_fail(&c, LF_INNER_MAGIC, LW_MAGIC, q + 16, m.magic, w.magic)
                raise _legacy_error(&c, i, v.at)
            if m.attrs & 0x07:
                cur_fail(&c, LF_NESTED, LW_ATTRIBUTES, q + 17, 0, 0)
                raise _legacy_error(&c, i, v.at)
            last = m.offset
            i += 1
            q += 12 + isize
        if i == 0:
            cur_fail(&c, LF_EMPTY, LW_NONE, v.at, 0, 0)
            raise _legacy_error(&c, None, v.at)
        if w.magic == 1 and w.offset != 0:  # 0: produce data from some librdkafka versions (relative as is)
            if w.offset < last:
                cur_fail(&c, LF_OFFSET, LW_NONE, v.at, w.offset, last)
                raise _legacy_error(&c, None, v.at)
            shift = <int64_t>(<uint64_t>w.offset - <uint64_t>last)
        budget.records += i
        pshift[0] = shift
        if not emit:
            return i
        ls_begin(s, i, view.len)
        q = 0
        while q < c.end:
            _legacy_msg(&c, q, False, &m)
            ts = w.ts if w.magic == 1 and ts_type == 1 else m.ts
            ls_record(s, c.b, &m, _wadd(m.offset, shift), ts, ts_type)
            q += 12 + m.size
        ls_end(s, True)
        return i
    finally:
        PyBuffer_Release(&view)
