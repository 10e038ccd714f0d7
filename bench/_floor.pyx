# cython: language_level=3
"""The allocation floor of object decoding (benchmark support, not shipped).

``Program(tree)`` flattens a decoded tree -- generated message classes,
``Record``, lists, tuples, ints, str, bytes, UUIDs -- into a C array of
values that are already parsed.  ``build()`` then makes the very same tree
again in one C loop: the same classes, the same number of objects (an object
the source tree shares, such as a header key reused from record to record, is
made once and shared again), the same values, the same GC tracking; structs
are allocated without ``__init__`` and filled slot by slot.  What it costs is
what any decoder that returns this tree must pay: the floor of the object rows
in ``bench_messages.py`` and ``bench_records.py``.
"""

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc

from kafkaproto._objects cimport kp_new_object, kp_slot_put, slot_offset

import gc
import uuid

cdef extern from *:
    """
    #include <Python.h>
    static inline PyObject* fl_uuid_int(const char* p) {
        return _PyLong_FromByteArray((const unsigned char*)p, 16, 0, 0);
    }
    """
    PyObject* fl_uuid_int(const char* p)
    PyObject* PyLong_FromLongLong(long long v)
    PyObject* PyUnicode_DecodeUTF8(const char* s, Py_ssize_t n, const char* errors)
    PyObject* PyBytes_FromStringAndSize(const char* s, Py_ssize_t n)
    PyObject* PyList_New(Py_ssize_t n)
    void PyList_SET_ITEM(PyObject* lst, Py_ssize_t i, PyObject* v)
    PyObject* PyTuple_New(Py_ssize_t n)
    void PyTuple_SET_ITEM(PyObject* t, Py_ssize_t i, PyObject* v)
    void PyObject_GC_UnTrack(void* o)
    int PyGC_Disable()
    int PyGC_Enable()
    void Py_DECREF(PyObject* o)
    void Py_XDECREF(PyObject* o)
    char* PyBytes_AS_STRING(PyObject* o)
    Py_ssize_t PyBytes_GET_SIZE(PyObject* o)
    PyObject* Py_None
    PyObject* Py_True
    PyObject* Py_False

cdef enum:
    O_NONE = 0
    O_TRUE = 1
    O_FALSE = 2
    O_INT = 3       # value, memo
    O_STR = 4       # obj (utf-8 bytes), memo
    O_BYTES = 5     # obj, memo
    O_UUID = 6      # obj (16 bytes), memo
    O_LIST = 7      # n, tracked, items
    O_TUPLE = 8     # n, tracked, items
    O_STRUCT = 9    # cls, nslots, (offset, item) * nslots
    O_REF = 10      # memo
    O_CONST = 11    # obj

cdef object _UUID = uuid.UUID
cdef Py_ssize_t _UUID_INT = slot_offset(uuid.UUID, "int")
cdef Py_ssize_t _UUID_SAFE = slot_offset(uuid.UUID, "is_safe")
cdef object _SAFE_UNKNOWN = uuid.SafeUUID.unknown


def _slots(cls):
    out = []
    for klass in reversed(cls.__mro__):
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__weakref__", "__dict__") and name not in out:
                out.append(name)
    return out


cdef class Program:
    """A decoded tree as parsed values, and the loop that builds it again."""

    cdef int64_t* ops
    cdef Py_ssize_t n, cap
    cdef list objs          # classes, str/bytes sources, constants (PyObject* in ops)
    cdef dict memo_of       # id(obj) -> memo index, for objects the tree shares
    cdef dict seen          # id(obj) -> how many times the tree holds it
    cdef Py_ssize_t nmemo
    cdef PyObject** memo
    cdef list items         # start of each item when the root is a list (records)
    cdef Py_ssize_t* starts
    cdef Py_ssize_t nitems
    cdef readonly Py_ssize_t objects   # objects the build allocates

    def __cinit__(self):
        self.ops = NULL
        self.memo = NULL
        self.starts = NULL

    def __dealloc__(self):
        self._clear_memo()
        free(self.memo)
        free(self.ops)
        free(self.starts)

    def __init__(self, tree):
        self.objs = []
        self.seen = {}
        self.memo_of = {}
        self.nmemo = 0
        self.objects = 0
        self._count(tree)
        self.items = None
        if type(tree) is list:
            self.items = []
            self._emit(O_LIST)
            self._emit(len(tree))
            self._emit(gc.is_tracked(tree))
            for x in tree:
                self.items.append(self.n)
                self._flat(x)
        else:
            self._flat(tree)
        self.memo = <PyObject**>realloc(NULL, (self.nmemo + 1) * sizeof(PyObject*))
        for k in range(self.nmemo + 1):
            self.memo[k] = NULL
        self.seen = None
        if self.items is not None:
            self.nitems = len(self.items)
            self.starts = <Py_ssize_t*>realloc(NULL, (self.nitems + 1) * sizeof(Py_ssize_t))
            for k in range(self.nitems):
                self.starts[k] = self.items[k]

    cdef void _clear_memo(self):
        if self.memo != NULL:
            for k in range(self.nmemo):
                Py_XDECREF(self.memo[k])
                self.memo[k] = NULL

    cdef _emit(self, int64_t v):
        if self.n == self.cap:
            self.cap = max(1024, 2 * self.cap)
            self.ops = <int64_t*>realloc(self.ops, self.cap * sizeof(int64_t))
            if self.ops == NULL:
                raise MemoryError()
        self.ops[self.n] = v
        self.n += 1

    cdef _obj(self, o):
        self.objs.append(o)
        self._emit(<int64_t><PyObject*>o)

    def _count(self, x):
        self.seen[id(x)] = self.seen.get(id(x), 0) + 1
        if self.seen[id(x)] > 1:
            return
        if type(x) in (list, tuple):
            for y in x:
                self._count(y)
        elif type(x) not in (int, bool, str, bytes, type(None)) and not isinstance(x, uuid.UUID):
            for name in _slots(type(x)):
                if hasattr(x, name):
                    self._count(getattr(x, name))

    cdef _memo(self, x):
        # objects the tree shares are made once and shared again
        if self.seen.get(id(x), 0) > 1:
            self.memo_of[id(x)] = self.nmemo
            self._emit(self.nmemo)
            self.nmemo += 1
        else:
            self._emit(-1)

    def _flat(self, x):
        t = type(x)
        if x is None:
            self._emit(O_NONE)
            return
        if t is bool:
            self._emit(O_TRUE if x else O_FALSE)
            return
        if id(x) in self.memo_of:
            self._emit(O_REF)
            self._emit(self.memo_of[id(x)])
            return
        if t is tuple and not x:
            self._emit(O_CONST)
            self._obj(x)
            return
        self.objects += 1
        if t is int:
            if -5 <= x <= 256:
                self.objects -= 1   # the interpreter's own small ints
            self._emit(O_INT)
            self._emit(x)
            self._memo(x)
        elif t is str:
            self._emit(O_STR)
            self._obj(x.encode())
            self._memo(x)
        elif t is bytes:
            self._emit(O_BYTES)
            self._obj(x)
            self._memo(x)
        elif t is _UUID:
            self.objects += 1   # its int
            self._emit(O_UUID)
            self._obj(x.bytes)
            self._memo(x)
        elif t is list or t is tuple:
            self._emit(O_LIST if t is list else O_TUPLE)
            self._emit(len(x))
            self._emit(gc.is_tracked(x))
            for y in x:
                self._flat(y)
        else:
            names = [name for name in _slots(t) if hasattr(x, name)]
            self._emit(O_STRUCT)
            self._obj(t)
            self._emit(len(names))
            for name in names:
                off = slot_offset(t, name)
                if off < 0:
                    raise TypeError(f"{t.__name__}.{name} is not a plain slot")
                self._emit(off)
                self._flat(getattr(x, name))

    cdef PyObject* _build(self, Py_ssize_t* pi) except NULL:
        cdef int64_t* ops = self.ops
        cdef Py_ssize_t i = pi[0]
        cdef int64_t op = ops[i]
        cdef int64_t k, n, m = -1
        cdef PyObject* v = NULL
        cdef PyObject* src
        cdef PyObject* item
        i += 1
        if op == O_NONE:
            Py_INCREF(<object>Py_None)
            v = Py_None
        elif op == O_TRUE:
            Py_INCREF(<object>Py_True)
            v = Py_True
        elif op == O_FALSE:
            Py_INCREF(<object>Py_False)
            v = Py_False
        elif op == O_REF or op == O_CONST:
            v = self.memo[ops[i]] if op == O_REF else <PyObject*>ops[i]
            i += 1
            Py_INCREF(<object>v)
        elif op == O_INT:
            v = PyLong_FromLongLong(ops[i])
            m = ops[i + 1]
            i += 2
        elif op == O_STR or op == O_BYTES:
            src = <PyObject*>ops[i]
            if op == O_STR:
                v = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src), NULL)
            else:
                v = PyBytes_FromStringAndSize(PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src))
            m = ops[i + 1]
            i += 2
        elif op == O_UUID:
            v = kp_new_object(<PyObject*>_UUID)
            kp_slot_put(v, _UUID_INT, fl_uuid_int(PyBytes_AS_STRING(<PyObject*>ops[i])))
            Py_INCREF(_SAFE_UNKNOWN)
            kp_slot_put(v, _UUID_SAFE, <PyObject*>_SAFE_UNKNOWN)
            m = ops[i + 1]
            i += 2
        elif op == O_LIST or op == O_TUPLE:
            n = ops[i]
            v = PyList_New(n) if op == O_LIST else PyTuple_New(n)
            if not ops[i + 1]:
                PyObject_GC_UnTrack(v)
            i += 2
            for k in range(n):
                item = self._build(&i)
                if op == O_LIST:
                    PyList_SET_ITEM(v, k, item)
                else:
                    PyTuple_SET_ITEM(v, k, item)
        elif op == O_STRUCT:
            v = kp_new_object(<PyObject*>ops[i])
            n = ops[i + 1]
            i += 2
            for k in range(n):
                m = ops[i]
                i += 1
                kp_slot_put(v, m, self._build(&i))
            m = -1
        else:
            raise AssertionError(op)
        if m >= 0:
            Py_INCREF(<object>v)
            Py_XDECREF(self.memo[m])
            self.memo[m] = v
        pi[0] = i
        return v

    def build(self):
        """The whole tree, made again (the collector paused, as decoding does)."""
        cdef Py_ssize_t i = 0
        cdef int was = PyGC_Disable()
        try:
            v = self._build(&i)
        finally:
            if was:
                PyGC_Enable()
        out = <object>v
        Py_DECREF(v)
        self._clear_memo()
        return out

    def __iter__(self):
        """The root list's items, each made when asked for (as a RecordList does)."""
        return _Items(self)

    def __len__(self):
        return len(self.items)


cdef class _Items:
    cdef Program p
    cdef Py_ssize_t k

    def __init__(self, Program p):
        self.p = p
        self.k = 0

    def __dealloc__(self):
        if self.p is not None:
            self.p._clear_memo()

    def __iter__(self):
        return self

    def __next__(self):
        cdef Py_ssize_t i
        if self.k >= self.p.nitems:
            raise StopIteration
        i = self.p.starts[self.k]
        self.k += 1
        v = self.p._build(&i)
        out = <object>v
        Py_DECREF(v)
        return out
