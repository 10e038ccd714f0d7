"""Primitive types: fixed vectors, round trips, and every rejection, through the
active implementation (compiled in the first pass, the twin in the second)."""

import math
import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaproto import EncodeError, InvalidValueError, KafkaProtocolError, Reader, TruncatedError, Writer
from kafkaproto.primitives import (
    decode_uvarints,
    decode_varints,
    decode_varlongs,
    encode_uvarints,
    encode_varints,
    encode_varlongs,
    uvarint_size,
    varint_size,
    varlong_size,
)

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

# Unsigned varints as Kafka's ByteUtils writes them.
UVARINT_VECTORS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "8001"),
    (129, "8101"),
    (256, "8002"),
    (1024, "8008"),
    (100500, "949106"),
    (9999999, "fface204"),
    (2147483647, "ffffffff07"),
]

VARINT_VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-64, "7f"),
    (64, "8001"),
    (I32_MAX, "feffffff0f"),
    (I32_MIN, "ffffffff0f"),
]

VARLONG_VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (I32_MAX, "feffffff0f"),
    (I32_MIN, "ffffffff0f"),
    (I64_MAX, "feffffffffffffffff01"),
    (I64_MIN, "ffffffffffffffffff01"),
]


def written(method, value):
    w = Writer()
    getattr(w, method)(value)
    return w.getvalue()


@pytest.mark.parametrize("value,hexed", UVARINT_VECTORS)
def test_uvarint_vectors(value, hexed):
    assert written("write_uvarint", value).hex() == hexed
    r = Reader(bytes.fromhex(hexed))
    assert r.read_uvarint() == value
    assert r.remaining == 0
    assert uvarint_size(value) == len(hexed) // 2


@pytest.mark.parametrize("value,hexed", VARINT_VECTORS)
def test_varint_vectors(value, hexed):
    assert written("write_varint", value).hex() == hexed
    assert Reader(bytes.fromhex(hexed)).read_varint() == value
    assert varint_size(value) == len(hexed) // 2


@pytest.mark.parametrize("value,hexed", VARLONG_VECTORS)
def test_varlong_vectors(value, hexed):
    assert written("write_varlong", value).hex() == hexed
    assert Reader(bytes.fromhex(hexed)).read_varlong() == value
    assert varlong_size(value) == len(hexed) // 2


@pytest.mark.parametrize(
    "method,value,hexed",
    [
        ("int8", -1, "ff"),
        ("int16", -2, "fffe"),
        ("int16", 18, "0012"),
        ("int32", 7, "00000007"),
        ("int64", -(2**63), "8000000000000000"),
        ("uint16", 65535, "ffff"),
        ("uint32", 2**32 - 1, "ffffffff"),
        ("float64", 1.5, "3ff8000000000000"),
        ("bool", True, "01"),
        ("bool", False, "00"),
        ("string", "c1", "00026331"),
        ("string", None, "ffff"),
        ("string", "", "0000"),
        ("compact_string", "3.9.1", "06332e392e31"),
        ("compact_string", None, "00"),
        ("compact_string", "", "01"),
        ("bytes", b"\x01\x02", "0000000201 02".replace(" ", "")),
        ("bytes", None, "ffffffff"),
        ("compact_bytes", b"\x01\x02", "030102"),
        ("compact_bytes", None, "00"),
        ("array_length", 3, "00000003"),
        ("array_length", None, "ffffffff"),
        ("compact_array_length", 3, "04"),
        ("compact_array_length", None, "00"),
        ("uuid", uuid.UUID(int=1), "00000000000000000000000000000001"),
    ],
)
def test_fixed_vectors(method, value, hexed):
    assert written("write_" + method, value).hex() == hexed


def test_bool_reads_any_nonzero_as_true():
    # Kafka reads a boolean as "byte != 0".
    assert Reader(b"\x02").read_bool() is True
    assert Reader(b"\x00").read_bool() is False


def test_uuid_reads_as_uuid():
    u = uuid.uuid4()
    got = Reader(u.bytes).read_uuid()
    assert isinstance(got, uuid.UUID) and got == u and str(got) == str(u) and hash(got) == hash(u)


def test_tagged_fields_section():
    w = Writer()
    w.write_tagged_fields([(0, b"\x01"), (5, b""), (300, b"abc")])
    data = w.getvalue()
    assert data.hex() == "03" + "000101" + "0500" + "ac0203616263"
    assert Reader(data).read_tagged_fields() == [(0, b"\x01"), (5, b""), (300, b"abc")]
    assert written("write_tagged_fields", []) == b"\x00"
    assert written("write_tagged_fields", None) == b"\x00"


def test_read_view_is_zero_copy():
    buf = bytearray(b"\x00\x01abcdef")
    r = Reader(buf, 2)
    v = r.read_view(3)
    assert bytes(v) == b"abc"
    buf[2] = ord("X")
    assert bytes(v) == b"Xbc"
    assert r.offset == 5


def test_reader_offset_and_end():
    r = Reader(b"\x00\x01\x00\x02\x00\x03", 2, 4)
    assert r.read_int16() == 2
    assert r.remaining == 0
    with pytest.raises(TruncatedError):
        r.read_int16()
    with pytest.raises(ValueError):
        Reader(b"abc", 5)


def test_reader_accepts_any_buffer():
    arr = np.array([1], dtype=">i4")
    assert Reader(arr).read_int32() == 1
    assert Reader(memoryview(b"\x00\x05")).read_int16() == 5
    assert Reader(bytearray(b"\x00\x05")).read_int16() == 5


# ---------------------------------------------------------------------------
# rejections: every one is a KafkaProtocolError naming the type and the offset


@pytest.mark.parametrize(
    "method,args,data,cls,message",
    [
        ("read_int32", (), "000000", TruncatedError, "int32 at byte 0: need 4 bytes, 3 left"),
        ("read_uvarint", (), "ffffffffff01", InvalidValueError, "unsigned varint at byte 0: longer than 5 bytes"),
        ("read_uvarint", (), "8080808010", InvalidValueError, "unsigned varint at byte 0: does not fit in 32 bits"),
        ("read_uvarint", (), "8080", TruncatedError, "unsigned varint at byte 0: need 3 bytes, 2 left"),
        ("read_varlong", (), "ff" * 10 + "01", InvalidValueError, "varlong at byte 0: longer than 10 bytes"),
        ("read_varlong", (), "ff" * 9 + "02", InvalidValueError, "varlong at byte 0: does not fit in 64 bits"),
        ("read_string", (), "ffff", InvalidValueError,
         "string at byte 0: null (length -1) in a non-nullable field"),
        ("read_string", (True,), "fffe", InvalidValueError, "string at byte 0: invalid length -2"),
        ("read_string", (), "000561", TruncatedError, "string at byte 0: need 5 bytes, 1 left"),
        ("read_string", (), "0002c328", InvalidValueError, "string at byte 0: invalid UTF-8"),
        ("read_compact_string", (), "00", InvalidValueError,
         "compact string at byte 0: null (length -1) in a non-nullable field"),
        ("read_compact_string", (), "818002" + "61" * 10, InvalidValueError,
         "compact string at byte 0: length 32768 above the 32767 limit"),
        ("read_bytes", (), "7fffffff00", TruncatedError, "bytes at byte 0: need 2147483647 bytes, 1 left"),
        ("read_bytes", (True,), "fffffff0", InvalidValueError, "bytes at byte 0: invalid length -16"),
        ("read_compact_bytes", (), "ffffffff0f", TruncatedError,
         "compact bytes at byte 0: need 4294967294 bytes, 0 left"),
        ("read_array_length", (), "7fffffff" + "00" * 8, InvalidValueError,
         "array length at byte 0: count 2147483647 larger than the 8 bytes left"),
        ("read_array_length", (), "ffffffff", InvalidValueError,
         "array length at byte 0: null (length -1) in a non-nullable field"),
        ("read_compact_array_length", (), "ffffffff0f", InvalidValueError,
         "compact array length at byte 0: count 4294967294 larger than the 0 bytes left"),
        ("read_tagged_fields", (), "05000100", InvalidValueError,
         "tagged fields at byte 0: count 5 larger than the 3 bytes left"),
        ("read_tagged_fields", (), "01000500", TruncatedError, "tagged field at byte 1: need 5 bytes, 1 left"),
    ],
)
def test_rejections(method, args, data, cls, message):
    with pytest.raises(cls) as info:
        getattr(Reader(bytes.fromhex(data)), method)(*args)
    assert str(info.value) == message
    assert info.value.offset is not None
    assert isinstance(info.value, KafkaProtocolError)


def test_nullable_reads():
    assert Reader(b"\xff\xff").read_string(True) is None
    assert Reader(b"\x00").read_compact_string(True) is None
    assert Reader(b"\xff\xff\xff\xff").read_bytes(True) is None
    assert Reader(b"\x00").read_compact_bytes(True) is None
    assert Reader(b"\xff\xff\xff\xff").read_array_length(True) == -1
    assert Reader(b"\x00").read_compact_array_length(True) == -1


def test_error_offset_is_where_the_field_starts():
    r = Reader(b"\x00\x00\x00\x01" + b"\x00\x09abc")
    r.read_int32()
    with pytest.raises(TruncatedError) as info:
        r.read_string()
    assert info.value.offset == 4 and "need 9 bytes, 3 left" in str(info.value)


@pytest.mark.parametrize(
    "method,value,fragment",
    [
        ("write_int8", 128, "int8: value 128 out of range [-128, 127]"),
        ("write_int16", -32769, "out of range"),
        ("write_int32", 2**31, "out of range"),
        ("write_int64", 2**63, "out of range"),
        ("write_uint16", -1, "out of range"),
        ("write_uint32", 2**32, "out of range"),
        ("write_uvarint", -1, "out of range"),
        ("write_varint", 2**31, "out of range"),
        ("write_varlong", -(2**63) - 1, "out of range"),
        ("write_int32", "7", "expected an int, got str"),
        ("write_int32", True, "expected an int, got bool"),
        ("write_string", "x" * 32768, "length 32768 above the 32767 limit"),
        ("write_compact_string", b"bytes", "expected a str, got bytes"),
        ("write_string", "\ud800", "cannot encode as UTF-8"),
        ("write_bytes", "text", "expected bytes, got str"),
        ("write_uuid", "not-a-uuid", "expected a uuid.UUID"),
        ("write_float64", "1.0", "expected a float"),
    ],
)
def test_encode_rejections(method, value, fragment):
    with pytest.raises(EncodeError) as info:
        getattr(Writer(), method)(value)
    assert fragment in str(info.value)


def test_numpy_integers_are_accepted():
    assert written("write_int32", np.int64(5)) == b"\x00\x00\x00\x05"


# ---------------------------------------------------------------------------
# round trips


def roundtrip(write, read, value, *args):
    w = Writer()
    getattr(w, write)(value)
    r = Reader(w.getvalue())
    got = getattr(r, read)(*args)
    assert r.remaining == 0
    return got


@given(st.integers(-(2**7), 2**7 - 1))
def test_rt_int8(v):
    assert roundtrip("write_int8", "read_int8", v) == v


@given(st.integers(-(2**15), 2**15 - 1))
def test_rt_int16(v):
    assert roundtrip("write_int16", "read_int16", v) == v


@given(st.integers(I32_MIN, I32_MAX))
def test_rt_int32_and_varint(v):
    assert roundtrip("write_int32", "read_int32", v) == v
    assert roundtrip("write_varint", "read_varint", v) == v


@given(st.integers(I64_MIN, I64_MAX))
def test_rt_int64_and_varlong(v):
    assert roundtrip("write_int64", "read_int64", v) == v
    assert roundtrip("write_varlong", "read_varlong", v) == v
    assert len(written("write_varlong", v)) == varlong_size(v)


@given(st.integers(0, 2**16 - 1))
def test_rt_uint16(v):
    assert roundtrip("write_uint16", "read_uint16", v) == v


@given(st.integers(0, 2**32 - 1))
def test_rt_uint32_and_uvarint(v):
    assert roundtrip("write_uint32", "read_uint32", v) == v
    assert roundtrip("write_uvarint", "read_uvarint", v) == v
    assert len(written("write_uvarint", v)) == uvarint_size(v)


@given(st.floats(allow_nan=True))
def test_rt_float64(v):
    got = roundtrip("write_float64", "read_float64", v)
    assert got == v or (math.isnan(v) and math.isnan(got))


@given(st.booleans())
def test_rt_bool(v):
    assert roundtrip("write_bool", "read_bool", v) is v


@given(st.uuids())
def test_rt_uuid(v):
    assert roundtrip("write_uuid", "read_uuid", v) == v


short_text = st.text(max_size=300)


@given(st.one_of(st.none(), short_text))
def test_rt_strings(v):
    assert roundtrip("write_string", "read_string", v, True) == v
    assert roundtrip("write_compact_string", "read_compact_string", v, True) == v


@given(st.one_of(st.none(), st.binary(max_size=300)))
def test_rt_bytes(v):
    assert roundtrip("write_bytes", "read_bytes", v, True) == v
    assert roundtrip("write_compact_bytes", "read_compact_bytes", v, True) == v


@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.binary(max_size=40)), max_size=10))
def test_rt_tagged_fields(v):
    assert roundtrip("write_tagged_fields", "read_tagged_fields", v) == v


def test_longest_string_round_trips():
    s = "é" * (32767 // 2)
    assert roundtrip("write_string", "read_string", s) == s
    assert roundtrip("write_compact_string", "read_compact_string", s) == s


# ---------------------------------------------------------------------------
# batch varint codecs


@given(st.lists(st.integers(I32_MIN, I32_MAX), max_size=200))
def test_batch_varints(values):
    data = encode_varints(values)
    arr, end = decode_varints(data)
    assert arr.dtype == np.int32 and arr.tolist() == values and end == len(data)
    arr2, _ = decode_varints(data, len(values))
    assert arr2.tolist() == values


@given(st.lists(st.integers(I64_MIN, I64_MAX), max_size=200))
def test_batch_varlongs(values):
    data = encode_varlongs(values)
    arr, end = decode_varlongs(data)
    assert arr.dtype == np.int64 and arr.tolist() == values and end == len(data)


@given(st.lists(st.integers(0, 2**32 - 1), max_size=200))
def test_batch_uvarints(values):
    data = encode_uvarints(values)
    arr, end = decode_uvarints(data)
    assert arr.dtype == np.uint32 and arr.tolist() == values and end == len(data)


def test_batch_count_and_offset():
    data = b"\xaa" + encode_varints([1, -2, 3, 4])
    arr, end = decode_varints(data, 2, 1)
    assert arr.tolist() == [1, -2] and end == 3


def test_batch_errors():
    with pytest.raises(InvalidValueError, match="count 10 larger than the 2 bytes left"):
        decode_varints(b"\x00\x00", 10)
    with pytest.raises(TruncatedError, match="varint at byte 2: need 2 bytes, 1 left"):
        decode_varints(b"\x00\x02\x80")
    with pytest.raises(InvalidValueError, match="varlong at byte 1: longer than 10 bytes"):
        decode_varlongs(b"\x00" + b"\xff" * 11)
    with pytest.raises(EncodeError, match="out of range"):
        encode_varints([2**31])
