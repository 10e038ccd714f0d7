# Inline C for building Python objects fast, shared by the compiled modules
# that fill the generated classes and Record: __slots__ offsets, allocation
# without __init__, slot stores.  (No module: everything here is inline.)

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject

cdef extern from *:
    """
    #include <structmember.h>
    #ifndef Py_T_OBJECT_EX
    #define Py_T_OBJECT_EX T_OBJECT_EX
    #endif
    /* The byte offset of a __slots__ member inside its instances, or -1. */
    static Py_ssize_t kp_slot_offset(PyObject* descr) {
        if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        PyMemberDef* m = ((PyMemberDescrObject*)descr)->d_member;
        if (m->type != Py_T_OBJECT_EX || (m->flags & READONLY)) return -1;
        return m->offset;
    }
    /* An instance with every slot empty (no __init__). */
    static inline PyObject* kp_new_object(PyObject* cls) {
        PyTypeObject* t = (PyTypeObject*)cls;
        return t->tp_alloc(t, 0);
    }
    /* Put v (a new reference: stolen) into a slot of an instance not yet shared. */
    static inline void kp_slot_put(PyObject* obj, Py_ssize_t off, PyObject* v) {
        PyObject** p = (PyObject**)((char*)obj + off);
        PyObject* old = *p;
        *p = v;
        Py_XDECREF(old);
    }
    static inline PyObject* kp_slot_get(PyObject* obj, Py_ssize_t off) {
        return *(PyObject**)((char*)obj + off);
    }
    static inline PyObject* kp_new_ref(PyObject* o) { Py_INCREF(o); return o; }

    /* One consistent snapshot of a list's or a tuple's items (an encoder's
       count and the items written after it): new references to them in `out`,
       which has room for `room` → their count; a larger count is returned
       with nothing taken (grow `out` and call again).  Nothing here runs
       Python code, so the GIL is held throughout; in the free-threaded build
       the caller holds the sequence's critical section. */
    static Py_ssize_t kp_take_items(PyObject* seq, PyObject** out, Py_ssize_t room) {
        PyObject** items;
        Py_ssize_t n, i;
        if (PyTuple_Check(seq)) {
            n = PyTuple_GET_SIZE(seq);
            items = ((PyTupleObject*)seq)->ob_item;
        } else {
            n = PyList_GET_SIZE(seq);
            items = ((PyListObject*)seq)->ob_item;
        }
        if (n > room) return n;
        for (i = 0; i < n; i++) {
            out[i] = items[i];
            Py_INCREF(out[i]);
        }
        return n;
    }
    static void kp_drop_items(PyObject** refs, Py_ssize_t n) {
        for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(refs[i]);
    }

    /* A faster tp_dealloc for a __slots__ class whose instances hold nothing
       but object slots (the generated message classes, Record): the generic
       one of Python classes (subtype_dealloc) looks for finalizers, weak
       references and a __dict__, then walks each class's member table; this
       one clears the slots in one pass.  A subclass defined in Python keeps
       the generic dealloc, which calls this one for the slots of ours. */
    static void kp_slots_dealloc(PyObject* self) {
        PyTypeObject* t = Py_TYPE(self);
        PyTypeObject* own = t;
        while (own->tp_dealloc != kp_slots_dealloc) own = own->tp_base;
        PyObject_GC_UnTrack(self);
        Py_TRASHCAN_BEGIN(self, kp_slots_dealloc)
        PyObject** p = (PyObject**)((char*)self + sizeof(PyObject));
        PyObject** end = (PyObject**)((char*)self + own->tp_basicsize);
        for (; p < end; p++) Py_CLEAR(*p);
        t->tp_free(self);
        Py_DECREF(t);
        Py_TRASHCAN_END
    }
    /* Give cls that dealloc when it is safe: a Python class (its dealloc is
       `generic`, that of a plain __slots__ class) with no finalizer, no
       __dict__, no weak references, whose instances are a PyObject header
       followed by exactly `nslots` object slots.  1: installed (or already). */
    static int kp_use_slots_dealloc(PyObject* cls, destructor generic, Py_ssize_t nslots) {
        PyTypeObject* t = (PyTypeObject*)cls;
        if (t->tp_dealloc == kp_slots_dealloc) return 1;
        if (t->tp_dealloc != generic || !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || !(t->tp_flags & Py_TPFLAGS_HAVE_GC)
            || t->tp_finalize != NULL || t->tp_del != NULL || t->tp_dictoffset != 0 || t->tp_weaklistoffset != 0
            || t->tp_itemsize != 0 || (t->tp_flags & Py_TPFLAGS_MANAGED_DICT)
            || t->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + nslots * sizeof(PyObject*)))
            return 0;
        t->tp_dealloc = kp_slots_dealloc;
        return 1;
    }
    static inline destructor kp_dealloc_of(PyObject* cls) { return ((PyTypeObject*)cls)->tp_dealloc; }
    """
    Py_ssize_t kp_slot_offset(object descr)
    PyObject* kp_new_object(PyObject* cls) nogil
    void kp_slot_put(PyObject* obj, Py_ssize_t off, PyObject* v) nogil
    PyObject* kp_slot_get(PyObject* obj, Py_ssize_t off) nogil
    PyObject* kp_new_ref(PyObject* o) nogil
    Py_ssize_t kp_take_items(PyObject* seq, PyObject** out, Py_ssize_t room)
    void kp_drop_items(PyObject** refs, Py_ssize_t n)
    ctypedef void (*destructor)(PyObject*)
    int kp_use_slots_dealloc(PyObject* cls, destructor generic, Py_ssize_t nslots)
    destructor kp_dealloc_of(PyObject* cls)


cdef inline Py_ssize_t take_items(object seq, PyObject** small, Py_ssize_t room, PyObject*** refs) except -1:
    """A snapshot of ``seq`` (a list or a tuple) → its count, and new references
    to its items in ``refs[0]``: ``small`` (room for ``room``) or, past that, a
    PyMem block (free it after kp_drop_items when it is not ``small``).  What
    an encoder writes a count and then items from: another thread, or Python
    code the encoder runs, may change the list meanwhile."""
    cdef Py_ssize_t n
    cdef PyObject** out = small
    while True:
        with cython.critical_section(seq):
            n = kp_take_items(<PyObject*>seq, out, room)
        if n <= room:
            refs[0] = out
            return n
        if out != small:
            PyMem_Free(out)
        out = <PyObject**>PyMem_Malloc(n * sizeof(PyObject*))
        if out == NULL:
            raise MemoryError()
        room = n


cdef inline void drop_items(PyObject** refs, Py_ssize_t n, PyObject** small) noexcept:
    """Give back what take_items took."""
    kp_drop_items(refs, n)
    if refs != small:
        PyMem_Free(refs)


cdef inline Py_ssize_t slot_offset(cls, str attr) except -2:
    """Where ``attr`` lives in instances of ``cls`` (-1: not a plain slot)."""
    for klass in cls.__mro__:
        d = klass.__dict__.get(attr)
        if d is not None:
            return kp_slot_offset(d)
    return -1


cdef inline bint use_slots_dealloc(cls) except -1:
    """Give ``cls`` the one-pass dealloc of slot-only classes, when its layout
    allows it (every slot a plain object slot); False: it keeps its own."""
    cdef Py_ssize_t n = 0
    cdef tuple mro = cls.__mro__
    for klass in mro[:len(mro) - 1]:  # all but object
        for attr in klass.__dict__.get("__slots__", ()):
            if slot_offset(klass, attr) < 0:
                return False
            n += 1
    probe = type("_probe", (), {"__slots__": ("a",)})
    return kp_use_slots_dealloc(<PyObject*>cls, kp_dealloc_of(<PyObject*>probe), n) == 1
