"""Field kinds shared by the message runtime and both engines (keep in sync with _engine.pxi)."""

BOOL, INT8, INT16, INT32, INT64, UINT16, UINT32, FLOAT64, UUID, STRING, BYTES, RECORDS, STRUCT, ARRAY = range(14)

BY_NAME = {
    "bool": BOOL, "int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64, "uint16": UINT16,
    "uint32": UINT32, "float64": FLOAT64, "uuid": UUID, "string": STRING, "bytes": BYTES, "records": RECORDS,
}
