"""The write side takes and refuses the same values in both engines (issue 22, row 9).

Before: the compiled writer encoded a NumPy or ``array.array`` records field
that the twin refused; the twin's ``encode_request_parts`` took a strided
memoryview that its ``encode_request`` refused; a non-contiguous view gave a
bare BufferError with no field path; ``assign_offsets`` past int64 a
``struct.error``, ``encode_*_into`` an OverflowError for an offset past
``ssize_t``.  Now any buffer is taken, as its bytes in C order (what
``bytes(memoryview(v))`` gives: a C-contiguous one by reference in parts,
another copied), by every encoder of both engines; what is no buffer is an
EncodeError naming the field; offsets past int64 are EncodeErrors.
"""

import array

import numpy as np
import pytest

from kafkaproto import EncodeError, records
from kafkaproto.messages import ListOffsetsRequest, MetadataRequest, ProduceRequest, SaslAuthenticateRequest
from kafkaproto.protocol import (
    encode_request,
    encode_request_into,
    encode_request_parts,
    request_size,
)
from support.fuzz_targets import IMPLS, check_encode

BATCH = records.encode([(b"key", b"value")], now=0)
EVEN = BATCH[:len(BATCH) // 8 * 8]


def buffers():
    """(name, value, the bytes it stands for)."""
    flat = np.frombuffer(EVEN, np.uint8)
    return [
        ("numpy uint8", flat, EVEN),
        ("numpy int32", np.frombuffer(EVEN, np.int32), EVEN),
        ("numpy 2-D", flat.reshape(2, -1), EVEN),
        ("numpy Fortran-ordered", np.asfortranarray(flat.reshape(2, -1)), flat.reshape(2, -1).tobytes()),
        ("numpy strided", flat[::2], EVEN[::2]),
        ("array B", array.array("B", EVEN), EVEN),
        ("array q", array.array("q", EVEN), EVEN),
        ("strided memoryview", memoryview(EVEN)[1::3], EVEN[1::3]),
        ("memoryview cast I", memoryview(EVEN).cast("I"), EVEN),
        ("bytearray", bytearray(EVEN), EVEN),
    ]


def produce(value):
    P = ProduceRequest
    return P(acks=-1, timeout_ms=1, topic_data=[P.TopicProduceData(name="t", partition_data=[
        P.PartitionProduceData(index=0, records=value)])])


def every_encoding(msg, version):
    """The frame from encode_request, encode_request_parts, encode_request_into
    (a bytearray, a writable memoryview) and its size from request_size."""
    whole = encode_request(msg, version, 1, "c")
    parts = b"".join(bytes(memoryview(p).cast("B")) for p in encode_request_parts(msg, version, 1, "c"))
    grown = bytearray()
    encode_request_into(grown, msg, version, 1, "c")
    room = memoryview(bytearray(len(whole) + 3))
    end = encode_request_into(room, msg, version, 1, "c", offset=3)
    return [whole, parts, bytes(grown), bytes(room[3:end])], request_size(msg, version, "c")


@pytest.mark.parametrize("name,value,expected", buffers(), ids=[b[0] for b in buffers()])
def test_any_buffer_is_its_bytes_in_c_order_in_every_encoder(name, value, expected):
    for msg, version, same_as in ((produce(value), 9, produce(expected)),
                                  (SaslAuthenticateRequest(auth_bytes=value), 2,
                                   SaslAuthenticateRequest(auth_bytes=expected))):
        frames, size = every_encoding(msg, version)
        want = encode_request(same_as, version, 1, "c")
        assert frames == [want] * 4 and size == len(want), name
        body = same_as.encode(version)
        assert want.endswith(body)
        for impl in IMPLS:  # the two engines side by side, whatever this pass runs
            assert impl.encode(msg, version) == impl.encode(msg, version, "parts") == body, (impl.name, name)
            assert impl.encode(msg, version, "size") == len(body)
    for impl in IMPLS:
        for magic in (2, 1):
            got = impl.records.encode_record_batch([(value, value, None, 5)], magic, 0, None, now=0)
            assert got == impl.records.encode_record_batch([(expected, expected, None, 5)], magic, 0, None,
                                                           now=0), (impl.name, name, magic)
    # a C-contiguous buffer is sent as the caller's own object; another is copied once
    parts = encode_request_parts(produce(value), 9, 1, "c")
    assert any(p is value for p in parts) == memoryview(value).c_contiguous


@pytest.mark.parametrize("value,typename", [("text", "str"), (7, "int"), (object(), "object"), ([1, 2], "int")])
def test_what_is_no_buffer_is_refused_with_its_field_path(value, typename):
    msg = produce(value)
    for fn in (lambda: encode_request(msg, 9, 1, "c"), lambda: encode_request_parts(msg, 9, 1, "c"),
               lambda: request_size(msg, 9, "c"), lambda: encode_request_into(bytearray(), msg, 9, 1, "c")):
        with pytest.raises(EncodeError) as e:
            fn()
        where = " in a list of buffers" if isinstance(value, list) else ""
        assert str(e.value) == (f"ProduceRequest v9 .topic_data[0].partition_data[0].records: expected bytes, "
                                f"got {typename}{where}")
    for impl in IMPLS:
        with pytest.raises(EncodeError, match=f"records\\[0\\].value: expected bytes, got {type(value).__name__}"):
            impl.records.encode_record_batch([(b"k", value)], 2, 0, None, now=0)


def test_offsets_past_int64_are_encode_errors():
    three = records.encode([(b"k", b"v")] * 3, now=0)
    for base in (2**63, -2**63 - 1):
        with pytest.raises(EncodeError, match=f"base offset: value {base} out of range"):
            records.assign_offsets(three, base)
    with pytest.raises(EncodeError, match=r"record batch at byte 0: its records would take offsets "
                                          r"9223372036854775806 to 9223372036854775808, past the int64 range"):
        records.assign_offsets(three, 2**63 - 2)
    assert records.assign_offsets(three, 2**63 - 3)[1] == 2**63  # the last is 2**63 - 1
    with pytest.raises(EncodeError, match="log append time: value"):
        records.assign_offsets(three, 0, log_append_time=2**63)
    L = ListOffsetsRequest
    msg = L(topics=[L.ListOffsetsTopic(name="t", partitions=[L.ListOffsetsPartition(timestamp=2**63)])])
    with pytest.raises(EncodeError, match=r"\.topics\[0\]\.partitions\[0\]\.timestamp: value 9223372036854775808"):
        encode_request(msg, 7, 1)
    for impl in IMPLS:
        for magic in (2, 1):
            with pytest.raises(EncodeError, match="out of range"):
                impl.records.encode_record_batch([(b"k", b"v")], magic, 0, 2**63, now=0)
    # the place to write at: a ValueError past any buffer, in both engines
    for target in (bytearray(10), memoryview(bytearray(10))):
        with pytest.raises(ValueError, match="offset 9223372036854775808 outside the buffer"):
            encode_request_into(target, MetadataRequest(topics=None), 4, 1, offset=2**63)
    with pytest.raises(TypeError, match="expected a writable C-contiguous buffer"):
        encode_request_into(memoryview(bytearray(100))[::2], MetadataRequest(topics=None), 4, 1)


def test_a_value_that_cannot_be_compared_with_a_default_is_not_it():
    # an absent (or tagged) field holding a NumPy array or a non-list: an
    # EncodeError, not the array's ValueError on ``==`` or a TypeError on len()
    msg = MetadataRequest(topics=[])
    msg.allow_auto_topic_creation = np.array([1, 2])  # absent at v0
    with pytest.raises(EncodeError, match="is not the default, and this version has no such field"):
        encode_request(msg, 0, 1)
    msg = MetadataRequest(topics=None, include_cluster_authorized_operations=object())  # absent at v11
    with pytest.raises(EncodeError, match="include_cluster_authorized_operations"):
        encode_request(msg, 11, 1)


def test_the_encode_target_finds_the_engines_agreeing():
    # a few of the fuzz target's inputs, beside its committed corpus
    for data in (bytes.fromhex("c56862cf620f29a4"), bytes.fromhex("4583335ad86850bb050b"),
                 bytes.fromhex("d0db393b770116"), bytes(range(4, 20))):
        check_encode(data)
