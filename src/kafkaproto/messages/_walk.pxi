# The one walker of message bodies (every request, response, header and data
# schema), over the programs of messages/_engine.pxd, with a sticky-error
# cursor (kafkaproto/_wire.pxd).  It knows the wire grammar -- widths,
# compact and legacy lengths, nullability, arrays, nested structs, tagged
# sections, every bound and UTF-8 check -- and nothing of the output: each
# value it has checked goes to a sink.
#
# It is included (a template, compiled once per sink) by:
#   kafkaproto/messages/_engine.pyx   sink: Python objects of the generated classes
#   kafkaproto/arrow/_messages.pyx    sink: Arrow columns
# Each defines, before the include, a destination type ``Dst`` (where one
# value goes) and these functions, all ``noexcept nogil``, returning 0 or -1
# after recording a failure on the cursor:
#   Dst sk_field(Dst me, Op* op)                        field `op` of the struct `me`
#   Dst sk_item(Dst arr, int64_t i)                     element i of an array
#   sk_int(c, d, kind, v) / sk_float(c, d, v) / sk_uuid(c, d, p)
#   sk_str(c, d, p, n)        checked UTF-8
#   sk_bytes(c, d, op, p, n)  bytes and records (op: the field or array, for zero-copy)
#   sk_null(c, d)
#   sk_struct_begin(c, d, nd, &me) / sk_struct_end(c, d, me, nd, unknown) / sk_struct_fail(me, unknown, wire)
#   sk_unknown_tag(c, me, &unknown, tag, p, n)          a tag the schema does not name
#   sk_array_begin(c, d, op, n, &arr) / sk_array_end(c, d, arr, n) / sk_array_fail(arr, i, n)
#   sk_int32s(c, arr, p, n)   a whole []int32 at once (n * 4 bytes are there)
#   sk_absent(c, me, op)      a field this version lacks
#   sk_default(c, me, op)     a tagged field the wire did not carry
#   sk_retag(c, me, op)       a known tag seen again: its earlier value goes
#
# A failure unwinds with a path step per struct field and array element, so
# the error names `.topics[3].partitions[7].leader_epoch`.

cdef int _w_value(Cur* c, Op* op, int kind, bint nullable, bint tagged, Dst d) noexcept nogil:
    cdef Py_ssize_t p, start
    cdef int64_t n
    cdef uint32_t u
    cdef int r, what
    if kind == K_INT32:
        p = cur_take(c, 4, W_INT32, -1)
        return -1 if p < 0 else sk_int(c, d, kind, <int32_t>kp_ld32(c.b + p))
    if kind == K_INT16:
        p = cur_take(c, 2, W_INT16, -1)
        return -1 if p < 0 else sk_int(c, d, kind, <int16_t>kp_ld16(c.b + p))
    if kind == K_INT64:
        p = cur_take(c, 8, W_INT64, -1)
        return -1 if p < 0 else sk_int(c, d, kind, <int64_t>kp_ld64(c.b + p))
    if kind == K_INT8:
        p = cur_take(c, 1, W_INT8, -1)
        return -1 if p < 0 else sk_int(c, d, kind, <int8_t>c.b[p])
    if kind == K_BOOL:
        p = cur_take(c, 1, W_BOOL, -1)
        return -1 if p < 0 else sk_int(c, d, kind, c.b[p] != 0)
    if kind == K_STRING:
        start = c.pos
        if op.compact:
            what = W_COMPACT_STRING
            if cur_uv32(c, what, &u):
                return -1
            n = <int64_t>u - 1
        else:
            what = W_STRING
            p = cur_take(c, 2, what, -1)
            if p < 0:
                return -1
            n = <int16_t>kp_ld16(c.b + p)
        r = cur_length(c, what, start, n, nullable)
        if r:
            return -1 if r < 0 else sk_null(c, d)
        if n > MAX_STR:
            return cur_fail(c, F_LIMIT, what, start, n, MAX_STR)
        p = cur_take(c, n, what, start)
        if p < 0:
            return -1
        if not kp_utf8_ok(c.b + p, n):
            return cur_fail(c, F_UTF8, what, start, 0, 0)
        return sk_str(c, d, c.b + p, n)
    if kind == K_BYTES or kind == K_RECORDS:
        start = c.pos
        if op.compact:
            what = W_COMPACT_BYTES
            if cur_uv32(c, what, &u):
                return -1
            n = <int64_t>u - 1
        else:
            what = W_BYTES
            p = cur_take(c, 4, what, -1)
            if p < 0:
                return -1
            n = <int32_t>kp_ld32(c.b + p)
        r = cur_length(c, what, start, n, nullable)
        if r:
            return -1 if r < 0 else sk_null(c, d)
        p = cur_take(c, n, what, start)
        return -1 if p < 0 else sk_bytes(c, d, op, c.b + p, n)
    if kind == K_UUID:
        p = cur_take(c, 16, W_UUID, -1)
        return -1 if p < 0 else sk_uuid(c, d, c.b + p)
    if kind == K_UINT16:
        p = cur_take(c, 2, W_UINT16, -1)
        return -1 if p < 0 else sk_int(c, d, kind, kp_ld16(c.b + p))
    if kind == K_UINT32:
        p = cur_take(c, 4, W_UINT32, -1)
        return -1 if p < 0 else sk_int(c, d, kind, kp_ld32(c.b + p))
    if kind == K_FLOAT64:
        p = cur_take(c, 8, W_FLOAT64, -1)
        return -1 if p < 0 else sk_float(c, d, kp_u64_to_f64(kp_ld64(c.b + p)))
    # K_STRUCT
    if nullable:
        # a presence marker: int8 (negative = null), or an unsigned varint when tagged (0 = null)
        if tagged:
            if cur_uv32(c, W_UVARINT, &u):
                return -1
            if u == 0:
                return sk_null(c, d)
        else:
            p = cur_take(c, 1, W_INT8, -1)
            if p < 0:
                return -1
            if <int8_t>c.b[p] < 0:
                return sk_null(c, d)
    return _w_struct(c, op.sub, d)


cdef int _w_array(Cur* c, Op* op, Dst d) noexcept nogil:
    cdef Py_ssize_t p, start = c.pos
    cdef int64_t n, i
    cdef uint32_t u
    cdef int r, what
    cdef Dst arr
    if op.compact:
        what = W_COMPACT_ARRAY_LENGTH
        if cur_uv32(c, what, &u):
            return -1
        n = <int64_t>u - 1
    else:
        what = W_ARRAY_LENGTH
        p = cur_take(c, 4, what, -1)
        if p < 0:
            return -1
        n = <int32_t>kp_ld32(c.b + p)
    r = cur_count(c, what, start, n, op.nullable)
    if r:
        return -1 if r < 0 else sk_null(c, d)
    if sk_array_begin(c, d, op, n, &arr):
        return -1
    if op.elem == K_INT32 and 4 * n <= c.end - c.pos:
        # replica lists and the like: the whole array at once (short arrays
        # go element by element below, so the error names the element)
        if sk_int32s(c, arr, c.b + c.pos, n):
            sk_array_fail(arr, 0, n)
            return -1
        c.pos += 4 * n
    else:
        for i in range(n):
            if _w_value(c, op, op.elem, False, False, sk_item(arr, i)):
                sk_array_fail(arr, i, n)
                return cur_step(c, P_INDEX, i, NULL)
    return sk_array_end(c, d, arr, n)


cdef inline int _w_field(Cur* c, Op* op, Dst d) noexcept nogil:
    if op.kind == K_ARRAY:
        return _w_array(c, op, d)
    return _w_value(c, op, op.kind, op.nullable, op.tagged, d)


cdef int _w_struct(Cur* c, Node* nd, Dst d) noexcept nogil:
    cdef int k, j
    cdef uint32_t count, t, tag, size
    cdef uint64_t seen = 0
    cdef Py_ssize_t at, stop, saved
    cdef Op* op
    cdef Dst me
    cdef void* unknown = NULL
    cdef void* wire = NULL
    cdef Py_ssize_t p
    cdef int r
    if sk_struct_begin(c, d, nd, &me):
        return -1
    for k in range(nd.nf):
        op = &nd.f[k]
        # the common fixed-width kinds inline, the rest through _w_field
        if op.kind == K_INT32:
            p = cur_take(c, 4, W_INT32, -1)
            r = -1 if p < 0 else sk_int(c, sk_field(me, op), K_INT32, <int32_t>kp_ld32(c.b + p))
        elif op.kind == K_INT16:
            p = cur_take(c, 2, W_INT16, -1)
            r = -1 if p < 0 else sk_int(c, sk_field(me, op), K_INT16, <int16_t>kp_ld16(c.b + p))
        elif op.kind == K_INT64:
            p = cur_take(c, 8, W_INT64, -1)
            r = -1 if p < 0 else sk_int(c, sk_field(me, op), K_INT64, <int64_t>kp_ld64(c.b + p))
        else:
            r = _w_field(c, op, sk_field(me, op))
        if r:
            sk_struct_fail(me, unknown, wire)
            return cur_step(c, P_FIELD, op.col, nd)
    for k in range(nd.na):
        if sk_absent(c, me, &nd.a[k]):
            sk_struct_fail(me, unknown, wire)
            return -1
    if nd.flexible:
        if cur_tags_begin(c, &count):
            sk_struct_fail(me, unknown, wire)
            return -1
        for t in range(count):
            if cur_tag_next(c, &tag, &at, &size) or sk_wire_tag(c, me, &wire, t, count, tag):
                sk_struct_fail(me, unknown, wire)
                return -1
            j = -1
            for k in range(nd.nt):
                if nd.t[k].tag == tag:
                    j = k
                    break
            if j < 0:
                if sk_unknown_tag(c, me, &unknown, tag, c.b + c.pos, size):
                    sk_struct_fail(me, unknown, wire)
                    return -1
                c.pos += size
                continue
            op = &nd.t[j]
            if seen >> j & 1 and sk_retag(c, me, op):
                sk_struct_fail(me, unknown, wire)
                return -1
            seen |= (<uint64_t>1) << j
            stop = c.pos + size
            saved = c.end
            c.end = stop
            if _w_field(c, op, sk_field(me, op)):
                c.end = saved
                sk_struct_fail(me, unknown, wire)
                return cur_step(c, P_FIELD, op.col, nd)
            c.end = saved
            if c.pos != stop:
                cur_fail(c, F_TAG_SIZE, W_TAGGED_FIELD, at, tag, size)
                c.z = size - (stop - c.pos)
                sk_struct_fail(me, unknown, wire)
                return cur_step(c, P_FIELD, op.col, nd)
        for k in range(nd.nt):
            if not (seen >> k & 1) and sk_default(c, me, &nd.t[k]):
                sk_struct_fail(me, unknown, wire)
                return -1
    return sk_struct_end(c, d, me, nd, unknown, wire)
