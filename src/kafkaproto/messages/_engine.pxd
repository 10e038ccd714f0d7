# C-level interface of the compiled message engine (kafkaproto.messages._engine):
# the per-version programs that the one walker of message bodies runs
# (messages/_walk.pxi), for the object decoder here and the Arrow decoder
# (kafkaproto.arrow._messages), which builds columns from the same programs.

from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint32_t
from kafkaproto._wire cimport Cur

cdef enum:
    # field kinds: kafkaproto/_kinds.py, same numbers
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

cdef enum:
    # what a field holds when the wire does not say
    D_NULL = 0          # None
    D_VALUE = 1         # an immutable value (dobj; dint/dfloat/dptr for columns)
    D_LIST = 2          # a fresh empty list
    D_STRUCT = 3        # a fresh instance of the struct class (dobj)

cdef struct Node

cdef struct Op:
    int kind
    int elem            # array element kind
    bint nullable
    bint compact
    bint tagged
    bint zero_copy
    uint32_t tag
    Node* sub           # struct and struct-array fields
    int col             # the field's number in its class's _FIELDS (attribute, column)
    Py_ssize_t slot     # offset of its slot in instances; -1: set by name
    PyObject* attr
    int dkind
    PyObject* dobj
    int64_t dint
    double dfloat
    const uint8_t* dptr
    int64_t dlen

cdef struct Node:
    PyObject* cls
    Py_ssize_t unknown_slot
    Py_ssize_t wire_slot    # where a decoded struct keeps its tags' wire order
    int nf              # fields on the wire, in order
    Op* f
    int nt              # tagged fields, ascending tags
    Op* t
    int na              # fields this version lacks
    Op* a
    bint flexible


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
    cdef readonly bint zero_copy
    cdef Py_ssize_t off

    cdef object make_default(self)
    cdef bint is_default(self, v) except -1


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
    cdef Py_ssize_t wire_off
    cdef Node* _node
    cdef list _keep

    cdef int _fill(self, Op* op, FieldPlan fp, tuple attrs) except -1
    cdef Node* node(self) except NULL


cdef object path_error(Cur* c)
