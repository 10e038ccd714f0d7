# Message engine, included into _codec.pyx.  Its twin is kafkaproto/_engine_py.py:
# same plans, same order of reads, same errors.
#
# A plan (built once per class and version by kafkaproto/_message.py) lists the
# fields on the wire; decode_struct/encode_struct run it in one C loop and
# recurse into structs and arrays.

from cpython.object cimport PyObject
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF

cdef extern from *:
    """
    #include <structmember.h>
    #ifndef Py_T_OBJECT_EX
    #define Py_T_OBJECT_EX T_OBJECT_EX
    #endif
    static PyObject* kp_new_instance(PyObject* cls, PyObject* args) {
        PyTypeObject* t = (PyTypeObject*)cls;
        return t->tp_new(t, args, NULL);
    }
    /* The byte offset of a __slots__ member inside its instances, or -1. */
    static Py_ssize_t kp_slot_offset(PyObject* descr) {
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        PyMemberDef* m = ((PyMemberDescrObject*)descr)->d_member;
        if (m->type != Py_T_OBJECT_EX || (m->flags & READONLY)) return -1;
        return m->offset;
    }
    /* Store into a slot of an instance this module just created (not yet shared). */
    static inline void kp_slot_set(PyObject* obj, Py_ssize_t off, PyObject* v) {
        PyObject** p = (PyObject**)((char*)obj + off);
        PyObject* old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
    }
    static inline PyObject* kp_slot_get(PyObject* obj, Py_ssize_t off) {
        return *(PyObject**)((char*)obj + off);
    }
    """
    object kp_new_instance(object cls, object args)
    Py_ssize_t kp_slot_offset(object descr)
    void kp_slot_set(object obj, Py_ssize_t off, object v)
    PyObject* kp_slot_get(object obj, Py_ssize_t off)


cdef Py_ssize_t _slot_offset(cls, str attr) except -2:
    for klass in cls.__mro__:
        d = klass.__dict__.get(attr)
        if d is not None:
            return kp_slot_offset(d)
    return -1


cdef inline int _set(object obj, str attr, Py_ssize_t off, object v) except -1:
    if off >= 0:
        kp_slot_set(obj, off, v)
    else:
        setattr(obj, attr, v)
    return 0


cdef inline object _get(object obj, str attr, Py_ssize_t off):
    cdef PyObject* p
    if off >= 0:
        p = kp_slot_get(obj, off)
        if p != NULL:
            return <object>p
    return getattr(obj, attr)

# kinds: keep in sync with kafkaproto/_kinds.py
cdef enum:
    K_BOOL = 0
    K_INT8 = 1
    K_INT16 = 2
    K_INT32 = 3
    K_INT64 = 4
    K_UINT16 = 5
    K_UINT32 = 6
    K_FLOAT64 = 7
    K_UUID = 8
    K_STRING = 9
    K_BYTES = 10
    K_RECORDS = 11
    K_STRUCT = 12
    K_ARRAY = 13

cdef tuple _EMPTY = ()
cdef tuple _NO_TAGS = ()


cdef class FieldPlan:
    cdef readonly str attr
    cdef readonly int kind
    cdef readonly int elem
    cdef readonly bint nullable
    cdef readonly bint compact
    cdef readonly object sub
    cdef readonly object default
    cdef readonly int default_kind
    cdef readonly bint ignorable
    cdef readonly int64_t tag
    cdef readonly bint tagged
    cdef Py_ssize_t off  # slot offset in the owning class, set by Plan

    def __init__(self, attr, int kind, int elem, bint nullable, bint compact, sub, default, int default_kind,
                 bint ignorable, int64_t tag, bint tagged):
        self.attr = attr
        self.kind = kind
        self.elem = elem
        self.nullable = nullable
        self.compact = compact
        self.sub = sub
        self.default = default
        self.default_kind = default_kind
        self.ignorable = ignorable
        self.tag = tag
        self.tagged = tagged
        self.off = -1

    cdef inline object make_default(self):
        if self.default_kind == 0:
            return self.default
        if self.default_kind == 1:
            return []
        return self.default()

    cdef bint is_default(self, v) except -1:
        cdef object d
        if self.default_kind == 0:
            d = self.default
            return v is d or (v == d and type(v) is type(d)) or (v == d and isinstance(d, (int, float)))
        if self.default_kind == 1:
            return v is not None and len(v) == 0
        return v == self.default()


cdef class Plan:
    cdef readonly object cls
    cdef readonly str name
    cdef readonly tuple fields
    cdef readonly tuple absent
    cdef readonly tuple tagged
    cdef readonly bint flexible
    cdef readonly object context
    cdef readonly dict tag_map
    cdef Py_ssize_t unknown_off

    def __init__(self, cls, name, tuple fields, tuple absent, tuple tagged, bint flexible, context):
        self.cls = cls
        self.name = name
        self.fields = fields
        self.absent = absent
        self.tagged = tagged
        self.flexible = flexible
        self.context = context
        self.tag_map = {(<FieldPlan>f).tag: f for f in tagged}
        for f in fields + absent:
            (<FieldPlan>f).off = _slot_offset(cls, (<FieldPlan>f).attr)
        self.unknown_off = _slot_offset(cls, "unknown_tagged_fields")


# ---------------------------------------------------------------------------
# decode

cdef object _read_value(int kind, Reader r, bint compact, bint nullable, object sub, bint tagged):
    cdef Py_ssize_t p
    if kind == K_INT32:
        p = r._take(4, "int32", -1)
        return <int32_t>kp_ld32(r.buf + p)
    if kind == K_INT16:
        p = r._take(2, "int16", -1)
        return <int16_t>kp_ld16(r.buf + p)
    if kind == K_INT64:
        p = r._take(8, "int64", -1)
        return <int64_t>kp_ld64(r.buf + p)
    if kind == K_INT8:
        p = r._take(1, "int8", -1)
        return <int8_t>r.buf[p]
    if kind == K_STRING:
        return r.read_compact_string(nullable) if compact else r.read_string(nullable)
    if kind == K_BOOL:
        p = r._take(1, "bool", -1)
        return r.buf[p] != 0
    if kind == K_UUID:
        return r.read_uuid()
    if kind == K_BYTES or kind == K_RECORDS:
        return r.read_compact_bytes(nullable) if compact else r.read_bytes(nullable)
    if kind == K_UINT16:
        return r.read_uint16()
    if kind == K_UINT32:
        return r.read_uint32()
    if kind == K_FLOAT64:
        return r.read_float64()
    if kind == K_STRUCT:
        if nullable:
            # a presence marker: int8 (negative = null), or an unsigned varint when tagged (0 = null)
            if tagged:
                if r.read_uvarint() == 0:
                    return None
            elif r.read_int8() < 0:
                return None
        return _decode(<Plan>sub, r)
    raise AssertionError(kind)


cdef object _read_array_int32(Reader r, Py_ssize_t n):
    # the common []int32 (replica lists...): one bounds check for the whole array
    cdef Py_ssize_t p = r._take(4 * n, "int32", -1) if n * 4 <= r._end - r.pos else -1
    cdef Py_ssize_t i
    cdef list out
    cdef object v  # an object, not an inferred C int: the list steals this reference
    if p < 0:
        return None
    out = PyList_New(n)
    for i in range(n):
        v = <int32_t>kp_ld32(r.buf + p + 4 * i)
        Py_INCREF(v)
        PyList_SET_ITEM(out, i, v)
    return out


cdef object _read_field(FieldPlan f, Reader r):
    if f.kind != K_ARRAY:
        return _read_value(f.kind, r, f.compact, f.nullable, f.sub, f.tagged)
    cdef int64_t n = r.read_compact_array_length(f.nullable) if f.compact else r.read_array_length(f.nullable)
    if n < 0:
        return None
    cdef int elem = f.elem
    cdef bint compact = f.compact
    cdef object sub = f.sub
    cdef list out
    cdef object v
    cdef Py_ssize_t i = 0
    if elem == K_INT32:
        out = _read_array_int32(r, n)
        if out is not None:
            return out
    out = PyList_New(n)
    try:
        for i in range(n):
            v = _read_value(elem, r, compact, False, sub, False)
            Py_INCREF(v)
            PyList_SET_ITEM(out, i, v)
    except KafkaProtocolError as exc:
        # the list is only half filled: replace it by a complete one before it is freed
        for j in range(i, n):
            Py_INCREF(None)
            PyList_SET_ITEM(out, j, None)
        exc.add_path(f"[{i}]")
        raise
    return out


cdef object _decode(Plan plan, Reader r):
    cdef object obj = kp_new_instance(plan.cls, _EMPTY)
    cdef FieldPlan f = None
    cdef FieldPlan a
    cdef uint32_t count, tag, size, i
    cdef Py_ssize_t at, start, end, saved
    cdef list unknown = None
    cdef tuple fields = plan.fields
    cdef Py_ssize_t k, nf = len(fields)
    cdef Py_ssize_t p
    cdef int kind
    cdef object v
    try:
        for k in range(nf):
            f = <FieldPlan>fields[k]
            kind = f.kind
            # the common fixed-width kinds inline; the rest through _read_field
            if kind == K_INT32:
                p = r._take(4, "int32", -1)
                v = <int32_t>kp_ld32(r.buf + p)
            elif kind == K_INT16:
                p = r._take(2, "int16", -1)
                v = <int16_t>kp_ld16(r.buf + p)
            elif kind == K_INT64:
                p = r._take(8, "int64", -1)
                v = <int64_t>kp_ld64(r.buf + p)
            else:
                v = _read_field(f, r)
            if f.off >= 0:
                kp_slot_set(obj, f.off, v)
            else:
                setattr(obj, f.attr, v)
        f = None
        for a in plan.absent:
            _set(obj, a.attr, a.off, a.make_default())
        if plan.flexible:
            start = r.pos
            count = r._u32v("tagged fields")
            if count > r._end - r.pos:
                raise InvalidValueError(f"count {count} larger than the {r._end - r.pos} bytes left",
                                        "tagged fields", start)
            for i in range(count):
                at = r.pos
                tag = r._u32v("tag")
                size = r._u32v("tagged field size")
                if size > r._end - r.pos:
                    raise TruncatedError(f"need {size} bytes, {r._end - r.pos} left", "tagged field", at)
                f = plan.tag_map.get(tag)
                if f is None:
                    if unknown is None:
                        unknown = []
                    unknown.append((tag, r.read_raw(size)))
                    continue
                end = r.pos + size
                saved = r._end
                r._end = end
                try:
                    value = _read_field(f, r)
                finally:
                    r._end = saved
                if r.pos != end:
                    raise InvalidValueError(f"tagged field {tag} declares {size} bytes, its value used "
                                            f"{size - (end - r.pos)}", "tagged field", at)
                _set(obj, f.attr, f.off, value)
                f = None
        if unknown is not None and len(unknown) > 1:
            # Kafka reads tags in any order but writes them ascending: keep them in
            # the order they will be written, so that decode(encode(x)) == x
            unknown.sort(key=_first)
        _set(obj, "unknown_tagged_fields", plan.unknown_off, _NO_TAGS if unknown is None else tuple(unknown))
    except KafkaProtocolError as exc:
        if f is not None:
            exc.add_path(f.attr)
        raise
    return obj


def decode_struct(Plan plan, data, Py_ssize_t offset=0):
    """Decode one struct/message with ``plan`` → (object, end offset)."""
    cdef Reader r = Reader(data, offset)
    obj = _decode(plan, r)
    return obj, r.pos


# ---------------------------------------------------------------------------
# encode

cdef int _write_value(int kind, Writer w, object v, bint compact, bint nullable, object sub, bint tagged) except -1:
    if kind == K_INT32:
        w.write_int32(v)
    elif kind == K_INT16:
        w.write_int16(v)
    elif kind == K_INT64:
        w.write_int64(v)
    elif kind == K_INT8:
        w.write_int8(v)
    elif kind == K_STRING:
        if v is None and not nullable:
            raise EncodeError("null in a non-nullable field", "string")
        if compact:
            w.write_compact_string(v)
        else:
            w.write_string(v)
    elif kind == K_BOOL:
        w.write_bool(v)
    elif kind == K_UUID:
        w.write_uuid(v)
    elif kind == K_BYTES or kind == K_RECORDS:
        if v is None and not nullable:
            raise EncodeError("null in a non-nullable field", "bytes")
        if compact:
            w.write_compact_bytes(v)
        else:
            w.write_bytes(v)
    elif kind == K_UINT16:
        w.write_uint16(v)
    elif kind == K_UINT32:
        w.write_uint32(v)
    elif kind == K_FLOAT64:
        w.write_float64(v)
    elif kind == K_STRUCT:
        if v is None:
            if not nullable:
                raise EncodeError("null in a non-nullable field", (<Plan>sub).name)
            if tagged:
                w.write_uvarint(0)
            else:
                w.write_int8(-1)
            return 0
        if nullable:
            if tagged:
                w.write_uvarint(1)
            else:
                w.write_int8(1)
        _encode(<Plan>sub, v, w)
    else:
        raise AssertionError(kind)
    return 0


cdef int _write_field(FieldPlan f, Writer w, object v) except -1:
    if f.kind != K_ARRAY:
        return _write_value(f.kind, w, v, f.compact, f.nullable, f.sub, f.tagged)
    if v is None:
        if not f.nullable:
            raise EncodeError("null in a non-nullable field", "array")
        if f.compact:
            w.write_compact_array_length(None)
        else:
            w.write_array_length(None)
        return 0
    if not isinstance(v, (list, tuple)):
        raise EncodeError(f"expected a list, got {type(v).__name__}", "array")
    if f.compact:
        w.write_compact_array_length(len(v))
    else:
        w.write_array_length(len(v))
    cdef int elem = f.elem
    cdef bint compact = f.compact
    cdef object sub = f.sub
    cdef Py_ssize_t i = 0
    try:
        for i, x in enumerate(v):
            _write_value(elem, w, x, compact, False, sub, False)
    except KafkaProtocolError as exc:
        exc.add_path(f"[{i}]")
        raise
    return 0


cdef int _encode(Plan plan, object obj, Writer w) except -1:
    if not isinstance(obj, plan.cls):
        raise EncodeError(f"expected {plan.name}, got {type(obj).__name__}", plan.name)
    cdef FieldPlan f = None
    cdef list entries
    cdef Writer sub
    try:
        for f in plan.fields:
            _write_field(f, w, _get(obj, f.attr, f.off))
        for f in plan.absent:
            if not f.tagged and not f.ignorable:
                v = getattr(obj, f.attr)
                if not f.is_default(v):
                    raise EncodeError(f"{v!r} is not the default, and this version has no such field",
                                      f.attr)
        f = None
        unknown = obj.unknown_tagged_fields
        if plan.flexible:
            entries = []
            for f in plan.tagged:
                v = getattr(obj, f.attr)
                if not f.is_default(v):
                    sub = Writer()
                    _write_field(f, sub, v)
                    entries.append((f.tag, sub.getvalue()))
            f = None
            if unknown:
                known = {t for t, _ in entries}
                for t, _ in unknown:
                    if t in known:
                        raise EncodeError(f"unknown tagged field {t} has the tag of a known field", "tagged fields")
                entries = sorted(entries + list(unknown), key=_first)
            w.write_tagged_fields(entries)
        elif unknown:
            raise EncodeError(f"{len(unknown)} tagged fields set, but this version is not flexible", "tagged fields")
    except KafkaProtocolError as exc:
        if f is not None:
            exc.add_path(f.attr)
        raise
    return 0


def _first(item):
    return item[0]


def encode_struct(Plan plan, obj, Writer writer):
    _encode(plan, obj, writer)
