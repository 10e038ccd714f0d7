# Inline C for building Python objects fast, shared by the compiled modules
# that fill the generated classes and Record: __slots__ offsets, allocation
# without __init__, slot stores.  (No module: everything here is inline.)

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
    """
    Py_ssize_t kp_slot_offset(object descr)
    PyObject* kp_new_object(PyObject* cls) nogil
    void kp_slot_put(PyObject* obj, Py_ssize_t off, PyObject* v) nogil
    PyObject* kp_slot_get(PyObject* obj, Py_ssize_t off) nogil
    PyObject* kp_new_ref(PyObject* o) nogil


cdef inline Py_ssize_t slot_offset(cls, str attr) except -2:
    """Where ``attr`` lives in instances of ``cls`` (-1: not a plain slot)."""
    for klass in cls.__mro__:
        d = klass.__dict__.get(attr)
        if d is not None:
            return kp_slot_offset(d)
    return -1
