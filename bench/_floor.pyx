# cython: language_level=3, boundscheck=False, wraparound=False
"""The allocation floor of object decoding (benchmark support, not shipped).

``Program(tree)`` flattens a decoded tree -- generated message classes,
``Record``, lists, tuples, ints, str, bytes, UUIDs -- into a compact C array
of values that are already parsed (one 32-bit word for most values, a list of
int32s as its raw words).  ``build()`` then makes the very same tree again in
one C loop: the same classes, the same number of objects (an object the source
tree shares, such as a header key reused from record to record, is made once
and shared again), the same values, the same GC tracking; structs are
allocated without ``__init__`` and filled slot by slot.  No bounds, no
lengths, no UTF-8 to check: what it costs is what any decoder that returns
this tree must pay, the floor of the object rows of ``bench_messages.py`` and
``bench_records.py``.
"""

from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
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
    static inline PyObject* fl_ref(PyObject* o) { Py_INCREF(o); return o; }
    static PyObject* fl_small[262];
    static inline PyObject* fl_int(long long v) {
        if ((unsigned long long)(v + 5) < 262) return fl_ref(fl_small[v + 5]);
        return PyLong_FromLongLong(v);
    }
    static void fl_init(void) { for (int i = 0; i < 262; i++) fl_small[i] = PyLong_FromLong(i - 5); }
    """
    PyObject* fl_uuid_int(const char* p)
    PyObject* fl_ref(PyObject* o)
    PyObject* fl_int(long long v)
    void fl_init()
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

# A word: the op in its low 7 bits, UNTRACKED in bit 7 (containers the source
# tree kept out of the collector), a signed 24-bit argument above.
cdef enum:
    O_NONE = 0
    O_TRUE = 1
    O_FALSE = 2
    O_SINT = 3      # arg: the int
    O_INT = 4       # two words: the int64
    O_STR = 5       # arg: object (utf-8 bytes)
    O_BYTES = 6     # arg: object
    O_UUID = 7      # arg: object (16 bytes)
    O_LIST = 8      # arg: n; n values
    O_INTLIST = 9   # arg: n; n int32 words
    O_TUPLE = 10    # arg: n; n values
    O_STRUCT = 11   # arg: shape; its slots' values in order
    O_REF = 12      # arg: memo
    O_CONST = 13    # arg: object
    O_MEMO = 14     # arg: memo; the next value is kept there
    UNTRACKED = 0x80
    ARG_MAX = (1 << 23) - 1

ctypedef struct Shape:
    PyObject* cls
    int n
    Py_ssize_t* off

fl_init()
cdef object _UUID = uuid.UUID
cdef Py_ssize_t _UUID_INT = slot_offset(uuid.UUID, "int")
cdef Py_ssize_t _UUID_SAFE = slot_offset(uuid.UUID, "is_safe")
cdef object _SAFE_UNKNOWN = uuid.SafeUUID.unknown


def _slots(cls):
    out = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__weakref__", "__dict__") and name not in out:
                out.append(name)
    return out


def _small(x):
    return type(x) is int and -5 <= x <= 256


cdef class Program:
    """A decoded tree as parsed values, and the loop that builds it again."""

    cdef uint32_t* w
    cdef Py_ssize_t n, cap
    cdef list objs          # classes, str/bytes sources, constants (indexed by args)
    cdef PyObject** objp
    cdef dict shape_of      # (cls, slot names) -> shape index
    cdef list shape_keys
    cdef Shape* shapes
    cdef dict memo_of       # id(obj) -> memo index, for objects the tree shares
    cdef dict seen          # id(obj) -> how many times the tree holds it
    cdef Py_ssize_t nmemo
    cdef PyObject** memo
    cdef Py_ssize_t* starts  # where each item starts when the root is a list (records)
    cdef Py_ssize_t nitems
    cdef int uuid_tracked
    cdef readonly Py_ssize_t objects   # objects the build allocates

    def __cinit__(self):
        self.w = NULL
        self.memo = NULL
        self.starts = NULL
        self.shapes = NULL
        self.objp = NULL

    def __dealloc__(self):
        self._clear_memo()
        free(self.memo)
        free(self.w)
        free(self.starts)
        free(self.objp)
        if self.shapes != NULL:
            for k in range(len(self.shape_keys)):
                free(self.shapes[k].off)
            free(self.shapes)

    def __init__(self, tree):
        self.objs = []
        self.seen = {}
        self.memo_of = {}
        self.shape_of = {}
        self.shape_keys = []
        self.nmemo = 0
        self.objects = 0
        self.uuid_tracked = -1
        self._count(tree)
        items = None
        if type(tree) is list:
            items = []
            self._emit(O_LIST | (0 if gc.is_tracked(tree) else UNTRACKED) | len(tree) << 8)
            for x in tree:
                items.append(self.n)
                self._flat(x)
        else:
            self._flat(tree)
        self.seen = None
        self.memo = <PyObject**>realloc(NULL, (self.nmemo + 1) * sizeof(PyObject*))
        for k in range(self.nmemo + 1):
            self.memo[k] = NULL
        self.objp = <PyObject**>realloc(NULL, (len(self.objs) + 1) * sizeof(PyObject*))
        for k, o in enumerate(self.objs):
            self.objp[k] = <PyObject*>o
        self.shapes = <Shape*>realloc(NULL, (len(self.shape_keys) + 1) * sizeof(Shape))
        for k, (cls, names) in enumerate(self.shape_keys):
            self.shapes[k].cls = <PyObject*>cls
            self.shapes[k].n = len(names)
            self.shapes[k].off = <Py_ssize_t*>realloc(NULL, (len(names) + 1) * sizeof(Py_ssize_t))
            for j, name in enumerate(names):
                self.shapes[k].off[j] = slot_offset(cls, name)
        if items is not None:
            self.nitems = len(items)
            self.starts = <Py_ssize_t*>realloc(NULL, (self.nitems + 1) * sizeof(Py_ssize_t))
            for k in range(self.nitems):
                self.starts[k] = items[k]

    cdef void _clear_memo(self):
        if self.memo != NULL:
            for k in range(self.nmemo):
                Py_XDECREF(self.memo[k])
                self.memo[k] = NULL

    cdef _emit(self, int64_t v):
        if self.n == self.cap:
            self.cap = max(1024, 2 * self.cap)
            self.w = <uint32_t*>realloc(self.w, self.cap * sizeof(uint32_t))
            if self.w == NULL:
                raise MemoryError()
        self.w[self.n] = <uint32_t>v
        self.n += 1

    cdef int _obj(self, o) except -1:
        self.objs.append(o)
        return len(self.objs) - 1

    def _count(self, x):
        k = id(x)
        self.seen[k] = self.seen.get(k, 0) + 1
        if self.seen[k] > 1:
            return
        if type(x) in (list, tuple):
            for y in x:
                self._count(y)
        elif type(x) not in (int, bool, str, bytes, type(None)) and not isinstance(x, uuid.UUID):
            for name in _slots(type(x)):
                if hasattr(x, name):
                    self._count(getattr(x, name))

    def _flat(self, x):
        t = type(x)
        if x is None:
            self._emit(O_NONE)
            return
        if t is bool:
            self._emit(O_TRUE if x else O_FALSE)
            return
        if _small(x) or (t is tuple and not x):
            # the interpreter's own singletons: shared by every tree
            if t is int:
                self._emit(O_SINT | (x & 0xFFFFFF) << 8)
            else:
                self._emit(O_CONST | self._obj(x) << 8)
            return
        if id(x) in self.memo_of:
            self._emit(O_REF | self.memo_of[id(x)] << 8)
            return
        if self.seen.get(id(x), 0) > 1:
            self.memo_of[id(x)] = self.nmemo
            self._emit(O_MEMO | self.nmemo << 8)
            self.nmemo += 1
        self.objects += 1
        untracked = 0 if gc.is_tracked(x) else UNTRACKED
        if t is int:
            if -(1 << 23) <= x < (1 << 23):
                self._emit(O_SINT | (x & 0xFFFFFF) << 8)
            else:
                self._emit(O_INT)
                self._emit(x & 0xFFFFFFFF)
                self._emit((x >> 32) & 0xFFFFFFFF)
        elif t is str:
            self._emit(O_STR | self._obj(x.encode()) << 8)
        elif t is bytes:
            self._emit(O_BYTES | self._obj(x) << 8)
        elif t is _UUID:
            if self.uuid_tracked < 0:
                self.uuid_tracked = gc.is_tracked(x)
            self.objects += 1   # its int
            self._emit(O_UUID | self._obj(x.bytes) << 8)
        elif t is list and x and all(type(y) is int and -(1 << 31) <= y < (1 << 31) and self.seen[id(y)] == 1
                                     or _small(y) for y in x):
            self._emit(O_INTLIST | untracked | len(x) << 8)
            for y in x:
                if not _small(y):
                    self.objects += 1
                self._emit(y & 0xFFFFFFFF)
        elif t is list or t is tuple:
            self._emit((O_LIST if t is list else O_TUPLE) | untracked | len(x) << 8)
            for y in x:
                self._flat(y)
        else:
            names = tuple(name for name in _slots(t) if hasattr(x, name))
            key = (t, names)
            if key not in self.shape_of:
                for name in names:
                    if slot_offset(t, name) < 0:
                        raise TypeError(f"{t.__name__}.{name} is not a plain slot")
                self.shape_of[key] = len(self.shape_keys)
                self.shape_keys.append(key)
                self._obj(t)
            self._emit(O_STRUCT | untracked | self.shape_of[key] << 8)
            for name in names:
                self._flat(getattr(x, name))

    cdef inline PyObject* _item(self, Py_ssize_t* pi) noexcept:
        # the common leaves inline (small ints, shared constants, None), the rest through _value
        cdef uint32_t word = self.w[pi[0]]
        cdef int op = word & 0x7F
        if op == O_SINT:
            pi[0] += 1
            return fl_int((<int32_t>word) >> 8)
        if op == O_CONST:
            pi[0] += 1
            return fl_ref(self.objp[(<int32_t>word) >> 8])
        if op == O_NONE:
            pi[0] += 1
            return fl_ref(Py_None)
        return self._value(pi)

    cdef PyObject* _value(self, Py_ssize_t* pi) noexcept:
        cdef const uint32_t* w = self.w
        cdef Py_ssize_t i = pi[0]
        cdef uint32_t word = w[i]
        cdef int op = word & 0x7F
        cdef int32_t arg = (<int32_t>word) >> 8
        cdef int64_t k
        cdef PyObject* v
        cdef PyObject* src
        cdef Shape* sh
        i += 1
        if op == O_SINT:
            v = fl_int(arg)
        elif op == O_CONST:
            v = fl_ref(self.objp[arg])
        elif op == O_REF:
            v = fl_ref(self.memo[arg])
        elif op == O_NONE:
            v = fl_ref(Py_None)
        elif op == O_STRUCT:
            sh = &self.shapes[arg]
            v = kp_new_object(sh.cls)
            if word & UNTRACKED:
                PyObject_GC_UnTrack(v)
            for k in range(sh.n):
                kp_slot_put(v, sh.off[k], self._item(&i))
        elif op == O_INTLIST:
            v = PyList_New(arg)
            if word & UNTRACKED:
                PyObject_GC_UnTrack(v)
            for k in range(arg):
                PyList_SET_ITEM(v, k, fl_int(<int32_t>w[i + k]))
            i += arg
        elif op == O_LIST:
            v = PyList_New(arg)
            if word & UNTRACKED:
                PyObject_GC_UnTrack(v)
            for k in range(arg):
                PyList_SET_ITEM(v, k, self._item(&i))
        elif op == O_TUPLE:
            v = PyTuple_New(arg)
            if word & UNTRACKED:
                PyObject_GC_UnTrack(v)
            for k in range(arg):
                PyTuple_SET_ITEM(v, k, self._item(&i))
        elif op == O_STR:
            src = self.objp[arg]
            v = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src), NULL)
        elif op == O_BYTES:
            src = self.objp[arg]
            v = PyBytes_FromStringAndSize(PyBytes_AS_STRING(src), PyBytes_GET_SIZE(src))
        elif op == O_INT:
            v = fl_int(<int64_t>(<uint64_t>w[i] | (<uint64_t>w[i + 1]) << 32))
            i += 2
        elif op == O_UUID:
            v = kp_new_object(<PyObject*>_UUID)
            kp_slot_put(v, _UUID_INT, fl_uuid_int(PyBytes_AS_STRING(self.objp[arg])))
            kp_slot_put(v, _UUID_SAFE, fl_ref(<PyObject*>_SAFE_UNKNOWN))
            if self.uuid_tracked == 0:
                PyObject_GC_UnTrack(v)
        elif op == O_MEMO:
            pi[0] = i
            v = self._value(pi)
            Py_XDECREF(self.memo[arg])
            self.memo[arg] = fl_ref(v)
            return v
        elif op == O_TRUE:
            v = fl_ref(Py_True)
        else:
            v = fl_ref(Py_False)
        pi[0] = i
        return v

    def build(self):
        """The whole tree, made again (the collector paused, as decoding does)."""
        cdef Py_ssize_t i = 0
        cdef int was = PyGC_Disable()
        v = self._value(&i)
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
        return self.nitems


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
        v = self.p._value(&i)
        out = <object>v
        Py_DECREF(v)
        return out


# ---------------------------------------------------------------------------
# The floor of records -> Arrow (kafkaproto.arrow.records with
# columns=["offset", "timestamp", "key", "value"]): the same table, made the
# plainest way a compiled extension without Arrow's C++ can make it.  Every
# row's v2 batches: the header read, CRC32C checked by the crc32c package
# (as the decoder does), every record's varints, lengths and header key text
# checked, key and value copied into large_binary buffers (int64 offsets,
# validity only once a null appears), offset and microsecond timestamp (null
# beyond the int64 microsecond range); fresh pyarrow buffers every call,
# sized from the batches' headers; a row column, an all-null error column;
# the pa.Table built.  No caps, no error rows, no control batches, no codec:
# a floor for clean uncompressed input.

from libc.stdint cimport uint8_t, uintptr_t
from libc.stdlib cimport free
from libc.string cimport memcpy

import pyarrow as pa
from crc32c import crc32c as _crc32c

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>

    /* Strict UTF-8 (what Python's decoder accepts); ASCII 8 bytes at a time. */
    static int fl_utf8(const uint8_t *s, int64_t n) {
        int64_t i = 0;
        while (i < n) {
            if (i + 8 <= n) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
            }
            uint8_t c = s[i];
            if (c < 0x80) { i++; continue; }
            if (c < 0xC2) return 0;
            if (c < 0xE0) {
                if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
                i += 2; continue;
            }
            if (c < 0xF0) {
                if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
                if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0)) return 0;
                i += 3; continue;
            }
            if (c < 0xF5) {
                if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80
                        || (s[i + 3] & 0xC0) != 0x80) return 0;
                if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90)) return 0;
                i += 4; continue;
            }
            return 0;
        }
        return 1;
    }

    /* A zig-zag varint of at most 10 bytes (one and two bytes, the common
       sizes in records, read straight); -1 when cut or too long. */
    static inline __attribute__((always_inline)) int fl_var(const uint8_t *b, int64_t *pos, int64_t end,
                                                            int64_t *out) {
        int64_t p = *pos;
        uint64_t v = 0, x;
        if (p + 1 < end) {
            x = b[p];
            if (x < 0x80) { *pos = p + 1; *out = (int64_t)((x >> 1) ^ (0 - (x & 1))); return 0; }
            v = b[p + 1];
            if (v < 0x80) {
                v = (x & 0x7F) | (v << 7);
                *pos = p + 2; *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
                return 0;
            }
            v = 0;
        }
        for (int shift = 0;; shift += 7) {
            if (p >= end || shift > 63) return -1;
            x = b[p++];
            v |= (x & 0x7F) << shift;
            if (x < 0x80) break;
        }
        *pos = p;
        *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
        return 0;
    }

    typedef struct {
        int64_t *off, *ts, *row, *koffs, *voffs;
        uint8_t *kdata, *vdata;
        uint8_t *kbits, *vbits, *tbits;     /* malloc'ed at a column's first null */
        int64_t total, i, kl, vl, knull, vnull, tnull;
    } fl_out;

    static inline void fl_set(uint8_t *bits, int64_t i, int on) {
        if (on) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        else bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
    }

    /* Validity from slot i on: a bitmap made at the first null (every slot before valid). */
    static inline int fl_valid(uint8_t **bits, int64_t *nulls, int64_t total, int64_t i, int ok) {
        if (ok) {
            if (*bits) fl_set(*bits, i, 1);
            return 0;
        }
        if (!*bits) {
            *bits = malloc((size_t)(total + 7) / 8 + 1);
            if (!*bits) return -1;
            memset(*bits, 0xFF, (size_t)(total + 7) / 8 + 1);
        }
        fl_set(*bits, i, 0);
        ++*nulls;
        return 0;
    }

    #define FL_US 9223372036854775LL

    /* The records of one uncompressed v2 batch (b[q:end] its records region) into o; -1 if malformed. */
    static int fl_records(const uint8_t *b, int64_t q, int64_t end, int32_t count, int64_t base_off,
                          int64_t base_ts, int64_t row, fl_out *o) {
        int64_t i = o->i, kl = o->kl, vl = o->vl;
        for (int32_t j = 0; j < count; j++, i++) {
            int64_t length, tsd, od, klen, vlen, hc, x;
            if (fl_var(b, &q, end, &length) || length < 0 || length > end - q) return -1;
            int64_t rend = q + length;
            if (q >= rend) return -1;
            q++;  /* attributes */
            if (fl_var(b, &q, rend, &tsd) || fl_var(b, &q, rend, &od) || od != (int32_t)od) return -1;
            o->off[i] = (int64_t)((uint64_t)base_off + (uint64_t)od);
            int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)tsd);
            int ts_ok = -FL_US <= ts && ts <= FL_US;
            o->ts[i] = ts_ok ? ts * 1000 : 0;
            if (fl_valid(&o->tbits, &o->tnull, o->total, i, ts_ok)) return -1;
            if (fl_var(b, &q, rend, &klen) || klen < -1 || klen > rend - q) return -1;
            if (klen > 0) { memcpy(o->kdata + kl, b + q, (size_t)klen); kl += klen; q += klen; }
            o->koffs[i + 1] = kl;
            if (fl_valid(&o->kbits, &o->knull, o->total, i, klen >= 0)) return -1;
            if (fl_var(b, &q, rend, &vlen) || vlen < -1 || vlen > rend - q) return -1;
            if (vlen > 0) { memcpy(o->vdata + vl, b + q, (size_t)vlen); vl += vlen; q += vlen; }
            o->voffs[i + 1] = vl;
            if (fl_valid(&o->vbits, &o->vnull, o->total, i, vlen >= 0)) return -1;
            /* headers: checked (lengths, key text), not stored */
            if (fl_var(b, &q, rend, &hc) || hc < 0 || hc > rend - q) return -1;
            for (int64_t h = 0; h < hc; h++) {
                if (fl_var(b, &q, rend, &x) || x < 0 || x > rend - q || !fl_utf8(b + q, x)) return -1;
                q += x;
                if (fl_var(b, &q, rend, &x) || x < -1 || x > rend - q) return -1;
                if (x > 0) q += x;
            }
            if (q != rend) return -1;
            o->row[i] = row;
        }
        o->i = i; o->kl = kl; o->vl = vl;
        return q == end ? 0 : -1;
    }
    """
    ctypedef struct fl_out:
        int64_t* off
        int64_t* ts
        int64_t* row
        int64_t* koffs
        int64_t* voffs
        uint8_t* kdata
        uint8_t* vdata
        uint8_t* kbits
        uint8_t* vbits
        uint8_t* tbits
        int64_t total, i, kl, vl, knull, vnull, tnull
    int fl_records(const uint8_t* b, int64_t q, int64_t end, int32_t count, int64_t base_off, int64_t base_ts,
                   int64_t row, fl_out* o) nogil

cdef object _allocate = pa.allocate_buffer
cdef object _from_buffers = pa.Array.from_buffers
cdef object _from_arrays = pa.Table.from_arrays
cdef object _LB = pa.large_binary()
cdef object _LS = pa.large_string()
cdef object _I64 = pa.int64()
cdef object _TS = pa.timestamp("us", tz="UTC")
KVOT_SCHEMA = pa.schema([("key", _LB), ("value", _LB), ("offset", _I64), ("timestamp", _TS), ("row", _I64),
                         ("error", _LS)])
cdef object _SCHEMA = KVOT_SCHEMA
cdef list _zeros = [pa.py_buffer(bytes(1 << 16))]


cdef inline uint32_t _be32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t _be64(const uint8_t* p) noexcept nogil:
    return (<uint64_t>_be32(p) << 32) | _be32(p + 4)


cdef inline uint8_t* _addr(buf):
    return <uint8_t*><uintptr_t>buf.address


cdef object _bits(uint8_t* bits, int64_t n):
    """A scratch validity bitmap → a fresh pyarrow buffer (None: no null)."""
    if bits == NULL:
        return None
    out = _allocate((n + 7) >> 3)
    memcpy(_addr(out), bits, (n + 7) >> 3)
    return out


cdef object _zeros_of(int64_t size):
    if _zeros[0].size < size:
        _zeros[0] = pa.py_buffer(bytes(size))
    return _zeros[0].slice(0, size)


def records_kvot(arr):
    """Rows of uncompressed v2 record batches (a large_binary array) → the table of
    ``arrow.records(arr, columns=["offset", "timestamp", "key", "value"])``."""
    cdef const uint8_t* base
    cdef const int64_t* offs
    cdef const uint8_t* p
    cdef int64_t nrows = len(arr), row, total = 0, nbytes = 0, end, pos, size, count
    cdef fl_out o
    cdef int st
    bufs = arr.buffers()
    if arr.type != _LB or arr.null_count or arr.offset:
        raise ValueError("the floor reads a plain large_binary array")
    offs = <const int64_t*>_addr(bufs[1])
    base = _addr(bufs[2])
    mv = memoryview(bufs[2])
    # sizes from the batches' headers: records, and their bytes (bounding the keys' and the values')
    for row in range(nrows):
        pos, end = offs[row], offs[row + 1]
        while pos < end:
            if end - pos < 61 or base[pos + 16] != 2:
                raise ValueError("the floor reads whole v2 batches")
            size = <int32_t>_be32(base + pos + 8)
            if size < 49 or size > end - pos - 12:
                raise ValueError("bad batch size")
            count = <int32_t>_be32(base + pos + 57)
            if count < 0 or count > size - 49:
                raise ValueError("bad record count")
            total += count
            nbytes += size - 49
            pos += 12 + size
    b_off, b_ts, b_row = _allocate(total * 8), _allocate(total * 8), _allocate(total * 8)
    b_koffs, b_voffs = _allocate((total + 1) * 8), _allocate((total + 1) * 8)
    b_kdata, b_vdata = _allocate(nbytes), _allocate(nbytes)
    o.off, o.ts, o.row = <int64_t*>_addr(b_off), <int64_t*>_addr(b_ts), <int64_t*>_addr(b_row)
    o.koffs, o.voffs = <int64_t*>_addr(b_koffs), <int64_t*>_addr(b_voffs)
    o.kdata, o.vdata = _addr(b_kdata), _addr(b_vdata)
    o.kbits = o.vbits = o.tbits = NULL
    o.total = total
    o.i = o.kl = o.vl = o.knull = o.vnull = o.tnull = 0
    o.koffs[0] = o.voffs[0] = 0
    try:
        for row in range(nrows):
            pos, end = offs[row], offs[row + 1]
            while pos < end:
                p = base + pos
                size = <int32_t>_be32(p + 8)
                if _be32(p + 17) != _crc32c(mv[pos + 21:pos + 12 + size]):
                    raise ValueError("CRC mismatch")
                if p[22] & 0x27:  # the attributes' low byte: a codec, or a control batch
                    raise ValueError("the floor reads uncompressed, non-control batches")
                with nogil:
                    st = fl_records(base, pos + 61, pos + 12 + size, <int32_t>_be32(p + 57), <int64_t>_be64(p),
                                    <int64_t>_be64(p + 27), row, &o)
                if st:
                    raise ValueError("malformed records")
                pos += 12 + size
        bk, bv, bt = _bits(o.kbits, total), _bits(o.vbits, total), _bits(o.tbits, total)
    finally:
        free(o.kbits)
        free(o.vbits)
        free(o.tbits)
    zb = _zeros_of(max((total + 7) >> 3, (total + 1) * 8))
    cols = [
        _from_buffers(_LB, total, [bk, b_koffs, b_kdata], null_count=o.knull),
        _from_buffers(_LB, total, [bv, b_voffs, b_vdata], null_count=o.vnull),
        _from_buffers(_I64, total, [None, b_off], null_count=0),
        _from_buffers(_TS, total, [bt, b_ts], null_count=o.tnull),
        _from_buffers(_I64, total, [None, b_row], null_count=0),
        _from_buffers(_LS, total, [zb, zb, zb.slice(0, 0)], null_count=total),
    ]
    return _from_arrays(cols, schema=_SCHEMA)


def repeat(f, Py_ssize_t n):
    """Call ``f()`` n times: under ``valgrind --tool=callgrind --toggle-collect='*_floor*repeat*'``
    the instructions counted are those of the calls alone."""
    for _ in range(n):
        f()
