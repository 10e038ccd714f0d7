# cython: language_level=3
"""Compiled message engine (``kafkaproto.messages._engine``); twin: ``_engine_py``.

Plans (built once per class and version by :mod:`kafkaproto.messages._runtime`)
become C programs here (``Node``/``Op``, see ``_engine.pxd``).  Decoding runs
the one walker of message bodies (``_walk.pxi``) with a sink that builds the
generated classes' objects; the Arrow decoder runs the same walker over the
same programs with a column sink.  Encoding walks the objects.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_AS_STRING
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from kafkaproto._wire cimport (
    kp_ld16, kp_ld32, kp_ld64, kp_u64_to_f64, kp_utf8_ok, MAX_STR, Cur, Step, cur_init, cur_fail, cur_step,
    cur_take, cur_uv32, cur_length, cur_count, cur_tags_begin, cur_tag_next,
    F_LIMIT, F_UTF8, F_TAG_SIZE, F_MEMORY, F_PYTHON, P_FIELD, P_INDEX, MAX_PATH,
    W_INT8, W_INT16, W_INT32, W_INT64, W_UINT16, W_UINT32, W_FLOAT64, W_BOOL, W_UUID, W_STRING,
    W_COMPACT_STRING, W_BYTES, W_COMPACT_BYTES, W_ARRAY_LENGTH, W_COMPACT_ARRAY_LENGTH, W_UVARINT,
    W_TAGGED_FIELD,
)
from kafkaproto._codec cimport Writer
from kafkaproto._objects cimport (
    drop_items, kp_new_object, kp_new_ref, kp_slot_get, kp_slot_put, slot_offset, take_items, use_slots_dealloc,
)

import uuid as _uuid

from kafkaproto.errors import EncodeError, KafkaProtocolError, failure
from kafkaproto.messages._tags import tag_section

COMPILED = True

__all__ = ["FieldPlan", "Plan", "decode_struct", "encode_struct"]


# ---------------------------------------------------------------------------
# Decoded trees are kept out of the cyclic garbage collector: the structs, the
# lists and the UUIDs the sink makes are untracked as they are made, so the
# collection that follows a large decode has nothing to walk (a 20,000-object
# MetadataResponse no longer passes through the young generation).  That is
# sound because such a tree cannot hold a cycle: every value is a str, int,
# bytes, UUID, None, tuple of those, a struct, or a list of one of them, and no
# Kafka schema nests a struct inside itself.  Storing a value of a type its
# schema does not allow (a struct into its own list, a list into an int field)
# could make a cycle that the collector would then never free; encoding such a
# tree fails anyway.  Objects built rather than decoded are tracked as usual.
#
# The object sink, in C: it runs inside the walker (declared nogil, which only
# forbids Cython's object handling; the decoder never releases the GIL, so
# these functions may call the C API).  A struct or list is stored into its
# parent as soon as it exists, so a failure anywhere leaves one tree, owned by
# its root, that frees itself.

cdef extern from *:
    """
    enum { KP_SLOT = 0, KP_ITEM = 1, KP_ATTR = 2, KP_ROOT = 3 };
    typedef struct { PyObject* obj; Py_ssize_t where; PyObject* attr; int mode; } kp_dst;
    typedef struct {
        PyObject* root;          /* the decoded struct (a new reference) */
        PyObject* views;         /* a memoryview over the input, for zero-copy fields; NULL: copy */
        PyObject* make_uuid;     /* bytes -> uuid.UUID (when its slots are not plain) */
        PyObject* empty_tuple;
        PyObject* uuid_cls;      /* uuid.UUID, filled slot by slot: */
        Py_ssize_t uuid_int;     /*   its `int` slot */
        Py_ssize_t uuid_safe;    /*   its `is_safe` slot */
        PyObject* safe_unknown;  /*   SafeUUID.unknown */
    } kp_octx;

    /* Store v (a new reference, or NULL after a failed call) at d. */
    static inline int kp_store(kp_octx* x, kp_dst d, PyObject* v) {
        if (v == NULL) return -1;
        switch (d.mode) {
        case KP_SLOT: {
            PyObject** p = (PyObject**)((char*)d.obj + d.where);
            PyObject* old = *p;
            *p = v;
            Py_XDECREF(old);
            return 0;
        }
        case KP_ITEM:
            PyList_SET_ITEM(d.obj, d.where, v);
            return 0;
        case KP_ATTR: {
            int r = PyObject_SetAttr(d.obj, d.attr, v);
            Py_DECREF(v);
            return r;
        }
        default:
            Py_XDECREF(x->root);
            x->root = v;
            return 0;
        }
    }
    /* The interpreter's own small ints (-5..256), looked up without a call:
       most ints of a response (error codes, indexes, small ids) are among them. */
    static PyObject* kp_small_ints[262];
    static inline PyObject* kp_int(long long v) {
        if ((unsigned long long)(v + 5) < 262) {
            PyObject* o = kp_small_ints[v + 5];
            Py_INCREF(o);
            return o;
        }
        return PyLong_FromLongLong(v);
    }
    static int kp_small_ints_init(void) {
        for (int i = 0; i < 262; i++)
            if ((kp_small_ints[i] = PyLong_FromLong(i - 5)) == NULL) return -1;
        return 0;
    }
    static inline PyObject* kp_bool(int v) { PyObject* b = v ? Py_True : Py_False; Py_INCREF(b); return b; }
    static inline PyObject* kp_uuid(kp_octx* x, const unsigned char* p) {
        if (x->uuid_int > 0 && x->uuid_safe > 0) {
            /* what UUID(bytes=...) leaves, without its __init__ */
            PyObject* i = _PyLong_FromByteArray(p, 16, 0, 0);
            if (i == NULL) return NULL;
            PyObject* u = ((PyTypeObject*)x->uuid_cls)->tp_alloc((PyTypeObject*)x->uuid_cls, 0);
            if (u == NULL) { Py_DECREF(i); return NULL; }
            *(PyObject**)((char*)u + x->uuid_int) = i;
            Py_INCREF(x->safe_unknown);
            *(PyObject**)((char*)u + x->uuid_safe) = x->safe_unknown;
            PyObject_GC_UnTrack(u);
            return u;
        }
        PyObject* raw = PyBytes_FromStringAndSize((const char*)p, 16);
        if (raw == NULL) return NULL;
        PyObject* u = PyObject_CallOneArg(x->make_uuid, raw);
        Py_DECREF(raw);
        return u;
    }
    static inline PyObject* kp_blob(kp_octx* x, int zero_copy, const unsigned char* base, const unsigned char* p,
                                    Py_ssize_t n) {
        if (zero_copy && x->views != NULL)
            return PySequence_GetSlice(x->views, p - base, p - base + n);
        return PyBytes_FromStringAndSize((const char*)p, n);
    }
    /* (tag, bytes) appended to a list of unknown tags, kept in ascending tag
       order (stable: Kafka writes tags ascending, so decode(encode(x)) == x). */
    static int kp_unknown_add(PyObject** list, uint32_t tag, const unsigned char* p, Py_ssize_t n) {
        PyObject* entry = Py_BuildValue("(Iy#)", (unsigned int)tag, (const char*)p, n);
        if (entry == NULL) return -1;
        if (*list == NULL && (*list = PyList_New(0)) == NULL) { Py_DECREF(entry); return -1; }
        Py_ssize_t i = PyList_GET_SIZE(*list);
        while (i > 0) {
            PyObject* prev = PyTuple_GET_ITEM(PyList_GET_ITEM(*list, i - 1), 0);
            if (PyLong_AsUnsignedLong(prev) <= tag) break;
            i--;
        }
        int r = PyList_Insert(*list, i, entry);
        Py_DECREF(entry);
        return r;
    }
    static inline void kp_list_fill_none(PyObject* list, Py_ssize_t from, Py_ssize_t n) {
        for (Py_ssize_t i = from; i < n; i++)
            if (PyList_GET_ITEM(list, i) == NULL) { Py_INCREF(Py_None); PyList_SET_ITEM(list, i, Py_None); }
    }
    """
    enum:
        KP_SLOT
        KP_ITEM
        KP_ATTR
        KP_ROOT
    ctypedef struct kp_dst:
        PyObject* obj
        Py_ssize_t where
        PyObject* attr
        int mode
    ctypedef struct kp_octx:
        PyObject* root
        PyObject* views
        PyObject* make_uuid
        PyObject* empty_tuple
        PyObject* uuid_cls
        Py_ssize_t uuid_int
        Py_ssize_t uuid_safe
        PyObject* safe_unknown
    int kp_store(kp_octx* x, kp_dst d, PyObject* v) nogil
    PyObject* kp_bool(int v) nogil
    PyObject* kp_int(long long v) nogil
    int kp_small_ints_init() except -1
    PyObject* kp_uuid(kp_octx* x, const unsigned char* p) nogil
    PyObject* kp_blob(kp_octx* x, int zero_copy, const unsigned char* base, const unsigned char* p,
                      Py_ssize_t n) nogil
    int kp_unknown_add(PyObject** lst, uint32_t tag, const unsigned char* p, Py_ssize_t n) nogil
    void kp_list_fill_none(PyObject* lst, Py_ssize_t start, Py_ssize_t n) nogil
    PyObject* PyLong_FromLongLong(long long v) nogil
    PyObject* PyFloat_FromDouble(double v) nogil
    PyObject* PyUnicode_DecodeUTF8(const char* s, Py_ssize_t n, const char* errors) nogil
    PyObject* PyList_New(Py_ssize_t n) nogil
    void PyList_SET_ITEM(PyObject* lst, Py_ssize_t i, PyObject* v) nogil
    PyObject* PyObject_CallNoArgs(PyObject* f) nogil
    PyObject* PyList_AsTuple(PyObject* lst) nogil
    PyObject* PyTuple_New(Py_ssize_t n) nogil
    void PyTuple_SET_ITEM(PyObject* t, Py_ssize_t i, PyObject* v) nogil
    PyObject* PyLong_FromUnsignedLong(unsigned long v) nogil
    void PyObject_GC_UnTrack(void* o) nogil
    int PyGC_Disable()
    int PyGC_Enable()
    void Py_XDECREF(PyObject* o) nogil
    void Py_DECREF(PyObject* o) nogil
    PyObject* Py_None


ctypedef kp_dst Dst


cdef inline int _stored(Cur* c, Dst d, PyObject* v) noexcept nogil:
    if kp_store(<kp_octx*>c.ctx, d, v):
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    return 0


cdef inline Dst sk_field(Dst me, Op* op) noexcept nogil:
    cdef Dst d
    d.obj = me.obj
    d.where = op.slot
    d.attr = op.attr
    d.mode = KP_SLOT if op.slot >= 0 else KP_ATTR
    return d


cdef inline Dst sk_item(Dst arr, int64_t i) noexcept nogil:
    cdef Dst d
    d.obj = arr.obj
    d.where = i
    d.attr = NULL
    d.mode = KP_ITEM
    return d


cdef inline int sk_int(Cur* c, Dst d, int kind, int64_t v) noexcept nogil:
    return _stored(c, d, kp_bool(<int>v) if kind == K_BOOL else kp_int(v))


cdef inline int sk_float(Cur* c, Dst d, double v) noexcept nogil:
    return _stored(c, d, PyFloat_FromDouble(v))


cdef inline int sk_uuid(Cur* c, Dst d, const uint8_t* p) noexcept nogil:
    return _stored(c, d, kp_uuid(<kp_octx*>c.ctx, p))


cdef inline int sk_str(Cur* c, Dst d, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return _stored(c, d, PyUnicode_DecodeUTF8(<const char*>p, n, NULL))


cdef inline int sk_bytes(Cur* c, Dst d, Op* op, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return _stored(c, d, kp_blob(<kp_octx*>c.ctx, op.zero_copy, c.b, p, n))


cdef inline int sk_null(Cur* c, Dst d) noexcept nogil:
    return _stored(c, d, kp_new_ref(Py_None))


cdef inline int sk_struct_begin(Cur* c, Dst d, Node* nd, Dst* me) noexcept nogil:
    cdef PyObject* o = kp_new_object(nd.cls)
    if o == NULL:
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    PyObject_GC_UnTrack(o)  # see _untracked below
    me.obj = o  # borrowed: the parent holds it from here on
    me.where = 0
    me.attr = NULL
    me.mode = KP_SLOT
    return _stored(c, d, o)


cdef inline int sk_unknown_tag(Cur* c, Dst me, void** unknown, uint32_t tag, const uint8_t* p,
                               Py_ssize_t n) noexcept nogil:
    if kp_unknown_add(<PyObject**>unknown, tag, p, n):
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    return 0


cdef inline int sk_wire_tag(Cur* c, Dst me, void** wire, uint32_t i, uint32_t count, uint32_t tag) noexcept nogil:
    # The tags in wire order, known or not: re-encoding writes them back in
    # this order, and writes a known tag the wire carried even at its default.
    if wire[0] == NULL:
        wire[0] = PyTuple_New(count)
        if wire[0] == NULL:
            return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    cdef PyObject* v = PyLong_FromUnsignedLong(tag)
    if v == NULL:
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    PyTuple_SET_ITEM(<PyObject*>wire[0], i, v)
    return 0


cdef inline int sk_struct_end(Cur* c, Dst d, Dst me, Node* nd, void* unknown, void* wire) noexcept nogil:
    cdef Dst u
    cdef PyObject* tags
    u.obj = me.obj
    u.where = nd.unknown_slot
    u.attr = NULL
    u.mode = KP_SLOT
    if wire != NULL:
        kp_slot_put(me.obj, nd.wire_slot, <PyObject*>wire)
    if unknown == NULL:
        tags = kp_new_ref((<kp_octx*>c.ctx).empty_tuple)
    else:
        tags = PyList_AsTuple(<PyObject*>unknown)
        Py_DECREF(<PyObject*>unknown)
    return _stored(c, u, tags)


cdef inline void sk_struct_fail(Dst me, void* unknown, void* wire) noexcept nogil:
    Py_XDECREF(<PyObject*>unknown)
    Py_XDECREF(<PyObject*>wire)


cdef inline int sk_array_begin(Cur* c, Dst d, Op* op, int64_t n, Dst* arr) noexcept nogil:
    cdef PyObject* lst = PyList_New(n)
    if lst == NULL:
        return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
    PyObject_GC_UnTrack(lst)
    arr.obj = lst
    arr.where = 0
    arr.attr = NULL
    arr.mode = KP_ITEM
    return _stored(c, d, lst)


cdef inline int sk_int32s(Cur* c, Dst arr, const uint8_t* p, int64_t n) noexcept nogil:
    cdef int64_t i
    cdef PyObject* v
    for i in range(n):
        v = kp_int(<int32_t>kp_ld32(p + 4 * i))
        if v == NULL:
            return cur_fail(c, F_PYTHON, 0, c.pos, 0, 0)
        PyList_SET_ITEM(arr.obj, i, v)
    return 0


cdef inline int sk_array_end(Cur* c, Dst d, Dst arr, int64_t n) noexcept nogil:
    return 0


cdef inline void sk_array_fail(Dst arr, int64_t i, int64_t n) noexcept nogil:
    # a list that stays reachable (from the error's partial result) must be whole
    kp_list_fill_none(arr.obj, i, n)


cdef inline int _put_default(Cur* c, Dst me, Op* op) noexcept nogil:
    cdef Dst d = sk_field(me, op)
    if op.dkind == D_VALUE:
        return _stored(c, d, kp_new_ref(op.dobj))
    if op.dkind == D_LIST:
        return _stored(c, d, PyList_New(0))
    if op.dkind == D_STRUCT:
        return _stored(c, d, PyObject_CallNoArgs(op.dobj))
    return _stored(c, d, kp_new_ref(Py_None))


cdef inline int sk_absent(Cur* c, Dst me, Op* op) noexcept nogil:
    return _put_default(c, me, op)


cdef inline int sk_default(Cur* c, Dst me, Op* op) noexcept nogil:
    return _put_default(c, me, op)


cdef inline int sk_retag(Cur* c, Dst me, Op* op) noexcept nogil:
    return 0  # the later value replaces the earlier one in its slot


include "_walk.pxi"


# ---------------------------------------------------------------------------
# plans and their C programs

cdef class FieldPlan:
    """One field of a plan: how it is read and written at one version."""

    def __init__(self, attr, int kind, int elem, bint nullable, bint compact, sub, default, int default_kind,
                 bint ignorable, int64_t tag, bint tagged, bint zero_copy=False):
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
        self.zero_copy = zero_copy
        self.off = -1

    cdef object make_default(self):
        if self.default_kind == 0:
            return self.default
        if self.default_kind == 1:
            return []
        return self.default()

    cdef bint is_default(self, v) except -1:
        # (a value that cannot be compared with the default, or has no length, is
        # not it: it is then written, or refused, as what it is)
        cdef object d
        if self.default_kind == 1:
            return isinstance(v, (list, tuple)) and len(v) == 0
        d = self.default if self.default_kind == 0 else self.default()
        if v is d:
            return True
        try:
            if not (v == d):
                return False
        except (TypeError, ValueError):
            return False
        return self.default_kind == 2 or type(v) is type(d) or isinstance(d, (int, float))


cdef class Plan:
    """A struct's fields at one version, and the C program built from them."""

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
            (<FieldPlan>f).off = slot_offset(cls, (<FieldPlan>f).attr)
        self.unknown_off = slot_offset(cls, "unknown_tagged_fields")
        self.wire_off = slot_offset(cls, "_wire")
        self._node = NULL
        self._keep = []

    def __dealloc__(self):
        if self._node != NULL:
            PyMem_Free(self._node.f)
            PyMem_Free(self._node.t)
            PyMem_Free(self._node.a)
            PyMem_Free(self._node)

    cdef int _fill(self, Op* op, FieldPlan fp, tuple attrs) except -1:
        op.kind = fp.kind
        op.elem = fp.elem
        op.nullable = fp.nullable
        op.compact = fp.compact
        op.tagged = fp.tagged
        op.zero_copy = fp.zero_copy
        op.tag = <uint32_t>fp.tag if fp.tagged else 0
        op.sub = (<Plan>fp.sub).node() if fp.sub is not None else NULL
        op.col = attrs.index(fp.attr)
        op.slot = fp.off
        op.attr = <PyObject*>fp.attr
        d = fp.default
        op.dobj = NULL
        op.dint = 0
        op.dfloat = 0
        op.dptr = NULL
        op.dlen = 0
        if fp.default_kind == 1:
            op.dkind = D_LIST
        elif fp.default_kind == 2:
            op.dkind = D_STRUCT
            op.dobj = <PyObject*>d
        elif d is None:
            op.dkind = D_NULL
        else:
            op.dkind = D_VALUE
            op.dobj = <PyObject*>d
            if op.kind == K_FLOAT64:
                op.dfloat = float(d)
            elif op.kind in (K_STRING, K_BYTES, K_RECORDS, K_UUID):
                raw = d.encode("utf-8") if isinstance(d, str) else (d.bytes if op.kind == K_UUID else bytes(d))
                self._keep.append(raw)
                op.dptr = <const uint8_t*>PyBytes_AS_STRING(raw)
                op.dlen = len(raw)
            elif op.kind != K_ARRAY and op.kind != K_STRUCT:
                op.dint = int(d)
        self._keep.append(d)
        return 0

    cdef Node* node(self) except NULL:
        """The C program of this plan (built on first use; kept as long as the plan)."""
        if self._node != NULL:
            return self._node
        cdef tuple attrs = self.cls._ATTRS
        cdef list absent = [a for a in self.absent if not (<FieldPlan>a).tagged]
        cdef Node* nd = <Node*>PyMem_Calloc(1, sizeof(Node))
        if nd == NULL:
            raise MemoryError()
        if len(self.tagged) > 64:
            PyMem_Free(nd)
            raise ValueError(f"{self.name}: more than 64 tagged fields")
        nd.cls = <PyObject*>self.cls
        use_slots_dealloc(self.cls)
        nd.unknown_slot = self.unknown_off
        nd.wire_slot = self.wire_off
        nd.flexible = self.flexible
        nd.nf = len(self.fields)
        nd.nt = len(self.tagged)
        nd.na = len(absent)
        nd.f = <Op*>PyMem_Calloc(nd.nf + 1, sizeof(Op))
        nd.t = <Op*>PyMem_Calloc(nd.nt + 1, sizeof(Op))
        nd.a = <Op*>PyMem_Calloc(nd.na + 1, sizeof(Op))
        self._node = nd
        if nd.f == NULL or nd.t == NULL or nd.a == NULL:
            raise MemoryError()
        if self.unknown_off < 0 or self.wire_off < 0:
            raise TypeError(f"{self.name}: unknown_tagged_fields or _wire is not a plain slot")
        for k, fp in enumerate(self.fields):
            self._fill(&nd.f[k], fp, attrs)
        for k, fp in enumerate(self.tagged):
            self._fill(&nd.t[k], fp, attrs)
        for k, fp in enumerate(absent):
            self._fill(&nd.a[k], fp, attrs)
        return nd


cdef object path_error(Cur* c):
    """The exception for the cursor's failure, with its field path."""
    exc = failure(c.fail, c.what, c.at, c.x, c.y, c.z)
    cdef int k
    cdef Step* s
    for k in range(c.depth):
        s = &c.path[k]
        if s.kind == P_INDEX:
            exc.add_path(f"[{s.value}]")
        else:
            exc.add_path((<object>(<Node*>s.node).cls)._ATTRS[s.value])
    return exc


kp_small_ints_init()

cdef object _UUID_NEW = _uuid.UUID.__new__
cdef object _UUID = _uuid.UUID
cdef object _SETATTR = object.__setattr__
cdef object _SAFE_UNKNOWN = _uuid.SafeUUID.unknown
cdef tuple _EMPTY = ()


def _make_uuid(bytes raw):
    u = _UUID_NEW(_UUID)
    _SETATTR(u, "int", int.from_bytes(raw, "big"))
    _SETATTR(u, "is_safe", _SAFE_UNKNOWN)
    return u


cdef object _MAKE_UUID = _make_uuid
# an interpreter whose UUID slots are not plain object fields goes through _make_uuid
cdef Py_ssize_t _UUID_INT = slot_offset(_UUID, "int")
cdef Py_ssize_t _UUID_SAFE = slot_offset(_UUID, "is_safe")


cdef int _reraise() except -1:
    return -1  # the object sink left a Python exception set


def decode_struct(Plan plan, data, Py_ssize_t offset=0, views=None):
    """Decode one struct/message with ``plan`` → (object, end offset).

    ``views``: a memoryview over ``data`` to slice zero-copy fields from
    (None: they are copied into ``bytes``).
    """
    cdef Node* nd = plan.node()
    cdef Py_buffer view
    cdef Cur c
    cdef Step steps[MAX_PATH]
    cdef kp_octx x
    cdef Dst root
    cdef int rc
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    if offset < 0 or offset > view.len:
        PyBuffer_Release(&view)
        raise ValueError(f"offset {offset} outside the buffer (0..{view.len})")
    cur_init(&c, <const unsigned char*>view.buf, offset, view.len)
    c.path = steps
    x.root = NULL
    x.views = <PyObject*>views if views is not None else NULL
    x.make_uuid = <PyObject*>_MAKE_UUID
    x.empty_tuple = <PyObject*>_EMPTY
    x.uuid_cls = <PyObject*>_UUID
    x.uuid_int = _UUID_INT
    x.uuid_safe = _UUID_SAFE
    x.safe_unknown = <PyObject*>_SAFE_UNKNOWN
    c.ctx = &x
    root.obj = NULL
    root.where = 0
    root.attr = NULL
    root.mode = KP_ROOT
    # the collector paused while the tree is built (it would only scan it)
    cdef int was_enabled = PyGC_Disable()
    try:
        rc = _w_struct(&c, nd, root)
    finally:
        if was_enabled:
            PyGC_Enable()
        PyBuffer_Release(&view)
    if rc:
        partial = <object>x.root if x.root != NULL else None
        Py_XDECREF(x.root)  # `partial` holds it now
        if c.fail == F_PYTHON:
            _reraise()
        exc = path_error(&c)
        exc.partial = partial  # the struct as far as it was read (see _runtime.partial_result)
        raise exc
    obj = <object>x.root
    Py_DECREF(x.root)  # `obj` holds it now
    return obj, c.pos


# ---------------------------------------------------------------------------
# encode

cdef inline object _get(object obj, str attr, Py_ssize_t off):
    cdef PyObject* p
    if off >= 0:
        p = kp_slot_get(<PyObject*>obj, off)
        if p != NULL:
            return <object>p
    return getattr(obj, attr)


cdef int _write_value(int kind, Writer w, object v, bint compact, bint nullable, object sub, bint tagged,
                      bint blob, bint canonical, bint lenient) except -1:
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
        if blob:
            # records and zeroCopy bytes: the writer may keep the caller's object (parts)
            w.write_blob(v, compact, nullable)
            return 0
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
        _encode(<Plan>sub, v, w, canonical, lenient)
    else:
        raise AssertionError(kind)
    return 0


cdef int _write_field(FieldPlan f, Writer w, object v, bint canonical, bint lenient) except -1:
    if f.kind != K_ARRAY:
        return _write_value(f.kind, w, v, f.compact, f.nullable, f.sub, f.tagged, f.zero_copy and not f.tagged,
                            canonical, lenient)
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
    # one snapshot of the items (references held, no copy of the list): the count
    # written is of the items written after it, whatever another thread, or
    # Python code run while encoding, does to the list meanwhile
    cdef PyObject* small[16]
    cdef PyObject** refs
    cdef Py_ssize_t n = take_items(v, small, 16, &refs)
    cdef int elem = f.elem
    cdef bint compact = f.compact
    cdef object sub = f.sub
    cdef Py_ssize_t i = 0
    try:
        if f.compact:
            w.write_compact_array_length(n)
        else:
            w.write_array_length(n)
        for i in range(n):
            _write_value(elem, w, <object>refs[i], compact, False, sub, False, False, canonical, lenient)
    except KafkaProtocolError as exc:
        exc.add_path(f"[{i}]")
        raise
    finally:
        drop_items(refs, n, small)
    return 0


cdef inline object _wire_of(object obj, Py_ssize_t off):
    """The tags' wire order a decoded struct kept (None: built, not decoded, or no tags)."""
    cdef PyObject* p = kp_slot_get(<PyObject*>obj, off)
    return <object>p if p != NULL else None


cdef int _encode(Plan plan, object obj, Writer w, bint canonical, bint lenient) except -1:
    if not isinstance(obj, plan.cls):
        raise EncodeError(f"expected {plan.name}, got {type(obj).__name__}", plan.name)
    cdef FieldPlan f = None
    cdef list entries
    cdef Writer sub
    cdef object wire
    try:
        for f in plan.fields:
            _write_field(f, w, _get(obj, f.attr, f.off), canonical, lenient)
        for f in plan.absent:
            if not f.tagged and not f.ignorable and not lenient:
                v = getattr(obj, f.attr)
                if not f.is_default(v):
                    raise EncodeError(f"{v!r} is not the default, and this version has no such field",
                                      f.attr)
        f = None
        unknown = obj.unknown_tagged_fields
        if plan.flexible:
            wire = None if canonical else _wire_of(obj, plan.wire_off)
            entries = []
            for f in plan.tagged:
                v = getattr(obj, f.attr)
                # canonical (Kafka's form): a tag only for a value other than the
                # default; faithful: also for every known tag the wire carried
                if not f.is_default(v) or (wire is not None and f.tag in wire):
                    sub = Writer()
                    _write_field(f, sub, v, canonical, lenient)
                    entries.append((f.tag, sub.getvalue()))
            f = None
            w.write_tagged_fields(tag_section(entries, unknown, wire) if unknown or wire is not None else entries)
        elif unknown:
            raise EncodeError(f"{len(unknown)} tagged fields set, but this version is not flexible", "tagged fields")
    except KafkaProtocolError as exc:
        if f is not None:
            exc.add_path(f.attr)
        raise
    return 0


def encode_struct(Plan plan, obj, Writer writer, bint canonical=False, bint lenient=False):
    """Encode ``obj`` with ``plan`` into ``writer``.  Unless ``canonical``, a
    decoded struct is written back as the wire had it (its tags' order, known
    tags at their defaults); a changed field is written as changed.
    ``lenient``: a field this version lacks is dropped even when Kafka marks
    it not ignorable (one response object for many versions)."""
    _encode(plan, obj, writer, canonical, lenient)
