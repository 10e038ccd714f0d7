"""What the fuzzers found (issue 7), so that it stays fixed.

Each input is committed as tests/data/regressions/<target>-<what>.bin: the
whole check of tests/support/fuzz_targets.py runs on it (both implementations, round trip),
and a test below pins the behaviour that was fixed.  Inputs that only a
sanitizer saw misbehave are caught again by `make sanitize`, which runs this
file against the ASan/UBSan build.
"""

import os
import tracemalloc

import pyarrow as pa
import pytest

from kafkaproto import (
    CorruptRecordError,
    EncodeError,
    RequestHeader,
    ResponseHeader,
    arrow,
    decode_request,
    encode_request,
    records,
)
from kafkaproto.capture import Accounting, read_frames
from kafkaproto.headers import decode_request_header, decode_response_header, encode_request_header
from kafkaproto.messages import get
from support.fuzz_targets import IMPLS, TARGETS

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "regressions")

FILES = sorted(os.listdir(DATA))


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


@pytest.mark.parametrize("name", FILES)
def test_fuzz_check_passes_on_the_input(name):
    target = name.split("-", 1)[0]
    assert target in TARGETS, f"{name}: name it <target>-<what>.bin, target one of {sorted(TARGETS)}"
    TARGETS[target](read(name))


def test_unknown_tags_read_out_of_order_are_kept_in_write_order():
    # Found by the request target: unknown tags 152, 0, 0 on the wire decoded in
    # that order, but encoding writes tags ascending, so decode(encode(x)) != x.
    # Kafka reads any order and writes ascending; we now keep them sorted by tag
    # (stable: equal tags stay in wire order).
    data = read("request-unknown-tags-out-of-order.bin")
    header, msg = decode_request(data)
    assert msg.unknown_tagged_fields == ((0, b""), (0, b""), (152, b""))
    again = encode_request(msg, header.api_version, header.correlation_id, header.client_id)
    assert decode_request(again[4:])[1] == msg
    # the same in both engines, in nested structs too
    cls = get("ReadShareGroupStateSummaryRequest")
    # group "z", one topic (uuid 0, no partitions, tags 9 then 3), no tags at the top
    body = b"\x02z" + b"\x02" + b"\x00" * 16 + b"\x01" + b"\x02" + b"\x09\x01x" + b"\x03\x00" + b"\x00"
    for impl in IMPLS:
        top, _ = impl.decode(cls, body, 0)
        assert top.topics[0].unknown_tagged_fields == ((3, b""), (9, b"x")), impl.name
        assert top.unknown_tagged_fields == ()


def test_header_tags_read_out_of_order_are_kept_in_write_order():
    wire = b"\x00\x12\x00\x03\x00\x00\x00\x07\xff\xff" + b"\x03" + b"\x09\x01b" + b"\x02\x00" + b"\x09\x01a"
    header, end = decode_request_header(wire, 2)
    assert end == len(wire)
    assert header.unknown_tagged_fields == ((2, b""), (9, b"b"), (9, b"a"))
    assert decode_request_header(encode_request_header(header, 2), 2)[0] == header
    assert RequestHeader(1, 0, unknown_tagged_fields=[(5, b""), (1, b"")]).unknown_tagged_fields == ((1, b""), (5, b""))
    assert decode_response_header(b"\x00\x00\x00\x01\x02\x07\x00\x01\x00", 1)[0] == \
        ResponseHeader(1, [(1, b""), (7, b"")])


def test_frame_reader_with_nothing_left_to_buffer():
    # Found by `make sanitize` (UBSan): the compiled FrameReader called
    # memcpy(NULL, data, 0) when a feed ended exactly on a frame boundary
    # before it had ever buffered a byte.  Harmless in practice, undefined in C.
    data = read("frames-stream-ends-on-a-frame-boundary.bin")[1:]
    for impl in IMPLS:
        reader = impl.codec.FrameReader()
        assert reader.feed(b"") == [] and reader.buffered == 0
        assert reader.feed(data) == [b""] and reader.buffered == 0 and reader.consumed == 4
        assert reader.feed(b"") == []


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_forged_gzip_size_is_not_believed():
    # Found while writing the records target: the gzip ISIZE trailer (any 4
    # bytes) sized the output buffer, so an 89-byte batch allocated the whole
    # 64 MiB decompression limit.  A claimed size is now believed only up to
    # what the codec can expand the input to (deflate: 1032x); the same for the
    # zstd content size and LZ4 block sizes (tests/test_limits.py).
    data = read("records-forged-gzip-size.bin")
    for impl in IMPLS:
        def run():
            with pytest.raises(CorruptRecordError, match="gzip records at byte 61: cannot decompress"):
                list(impl.records.decode_record_batches(data[1:], True, records.DEFAULT_MAX_DECOMPRESSED_SIZE, True))
        assert _peak(run) < 256 * 1024, impl.name


def test_an_empty_batch_decodes():
    # Found by the records target: a v2 batch of 0 records (Kafka's log
    # cleaner leaves such batches to keep producer state) decodes, but the
    # encoder writes no empty batch, so its round trip is not checked.
    [batch, tail] = records.decode(read("records-empty-batch.bin")[1:], check_crc=False)
    assert batch.record_count == 0 and batch.records == [] and tail.truncated
    with pytest.raises(EncodeError, match="no records to encode"):
        records.encode([])


def test_a_pcapng_option_running_past_its_block(tmp_path):
    # Found by the capture target: an interface block whose if_tsresol option
    # claimed more bytes than the block held raised IndexError.  Options past
    # the block's end are now ignored (default microsecond resolution).
    path = tmp_path / "cut-option.pcapng"
    path.write_bytes(read("capture-pcapng-option-past-its-block.bin"))
    acc = Accounting()
    assert list(read_frames(path, acc=acc)) == []
    assert "block type 0x28 with bad length" in acc.errors[0]  # the damage further on ends the file
    acc.check()


def test_a_capture_record_claiming_200_mib(tmp_path):
    # Found while checking the limits: a 43-byte pcap whose record claimed
    # 200 MiB made the reader allocate 200 MiB (file.read(n) sizes its buffer
    # from n).  Claimed lengths are now read in 1 MiB steps.
    path = tmp_path / "claims-200mib.pcap"
    path.write_bytes(read("capture-record-claims-200mib.bin"))
    acc = Accounting()
    assert _peak(lambda: list(read_frames(path, acc=acc))) < 2 << 20
    assert acc.errors and "record 1 cut short: 3 of 209715200 bytes" in acc.errors[0]


def test_a_truncated_batch_claiming_2_gib():
    # Found by the records target (a divergence): a batch cut short whose size
    # field is 0x7fffffff reported size -2147483637 from the compiled core
    # (size + 12 computed in int32) and 2147483659 from the twin.
    blob = read("records-truncated-batch-of-2-gib.bin")[1:]
    for impl in IMPLS:
        [tail] = impl.records.decode_record_batches(blob, False, 4096, False)
        assert tail.truncated and tail.size == 0x7FFFFFFF + 12 and tail.available == len(blob), impl.name


def test_a_self_connected_socket(tmp_path):
    # Found by the capture target: one packet from 127.0.0.1:58082 to itself
    # made a flow whose two ends are one; both Kafka halves were fed from the
    # same held bytes and 31 of them were never accounted for.  A socket
    # connected to itself is now classified as not Kafka.
    path = tmp_path / "self.pcap"
    path.write_bytes(read("capture-self-connected-socket.bin"))
    acc = Accounting()
    assert list(read_frames(path, acc=acc)) == []
    acc.check()
    assert acc.bytes["not_kafka"] == acc.payload_bytes_total == 146


def test_arrow_split_of_empty_pieces():
    # Found by `make sanitize` (UBSan, in test_arrow_frames): the Arrow frame
    # splitter called memcpy with a NULL buffer for empty pieces and empty
    # frames (a carry or output buffer not allocated yet).  The inputs here
    # reproduce it; `make sanitize` replays them against the ASan/UBSan build.
    stream = [b"", b"\x00\x00", b"\x00\x00", b"", b"\x00\x00\x00\x00", b"\x00\x00\x00\x02a", b"b", None, b""]
    for impl in IMPLS:
        for zero_copy in (False, True):
            got = arrow._split(impl.arrow_frames, pa.array(stream, pa.large_binary()), 1 << 20, zero_copy)
            assert got.frames.to_pylist() == [b"", b"", b"ab"] and got.tail == b"" and got.error is None
