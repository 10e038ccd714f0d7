import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaproto import FrameReader, FrameSizeError, frame, frame_offsets, split_frames
from kafkaproto.frames import DEFAULT_MAX_FRAME_SIZE

payloads = st.lists(st.binary(max_size=50), max_size=20)


def stream_of(parts):
    return b"".join(frame(p) for p in parts)


def test_frame_prefix():
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"") == b"\x00\x00\x00\x00"


@given(payloads, st.binary(max_size=3))
def test_split_whole_buffer(parts, tail):
    data = stream_of(parts)
    views, consumed = split_frames(data + tail)
    assert [bytes(v) for v in views] == parts
    assert consumed == len(data)  # a partial size prefix is not consumed
    starts, sizes, consumed2 = frame_offsets(data + tail)
    assert starts.dtype == np.int64 and sizes.dtype == np.int32
    assert [data[s:s + n] for s, n in zip(starts.tolist(), sizes.tolist())] == parts
    assert consumed2 == len(data)


def test_trailing_partial_frame_is_left():
    data = frame(b"one") + frame(b"two")[:-1]
    views, consumed = split_frames(data)
    assert [bytes(v) for v in views] == [b"one"] and consumed == 7
    _, sizes, consumed = frame_offsets(data)
    assert sizes.tolist() == [3] and consumed == 7


def test_views_are_zero_copy():
    buf = bytearray(frame(b"abc"))
    views, _ = split_frames(buf)
    buf[4] = ord("X")
    assert bytes(views[0]) == b"Xbc"


def test_offset_argument():
    data = b"junk" + frame(b"a")
    views, consumed = split_frames(data, offset=4)
    assert [bytes(v) for v in views] == [b"a"] and consumed == len(data)
    starts, _, _ = frame_offsets(data, offset=4)
    assert starts.tolist() == [8]


@pytest.mark.parametrize("fn", [split_frames, frame_offsets])
def test_bad_sizes(fn):
    with pytest.raises(FrameSizeError, match="frame at byte 5: negative size -1"):
        fn(frame(b"a") + b"\xff\xff\xff\xff")
    with pytest.raises(FrameSizeError, match="size 2147483647 above the limit 104857600"):
        fn(b"\x7f\xff\xff\xff")
    with pytest.raises(FrameSizeError, match="size 11 above the limit 10"):
        fn(frame(b"x" * 11), 10)
    assert fn(frame(b"x" * 11), -1)[-1] == 15  # -1: no limit


def test_many_frames_grow_buffers():
    parts = [bytes([i % 256]) * (i % 7) for i in range(5000)]
    data = stream_of(parts)
    starts, sizes, consumed = frame_offsets(data)
    assert len(starts) == 5000 and consumed == len(data)
    assert sizes.tolist() == [len(p) for p in parts]


@given(payloads, st.integers(1, 9))
def test_frame_reader_any_chunking(parts, chunk):
    data = stream_of(parts)
    fr = FrameReader()
    out = []
    for i in range(0, len(data), chunk):
        out += fr.feed(data[i:i + chunk])
    assert out == parts
    assert fr.buffered == 0 and fr.consumed == len(data)


def test_frame_reader_one_byte_at_a_time():
    parts = [b"hello", b"", b"x" * 300]
    data = stream_of(parts)
    fr = FrameReader()
    out = []
    for i in range(len(data)):
        out += fr.feed(data[i:i + 1])
    assert out == parts


@settings(deadline=None)
@given(st.lists(st.sampled_from([0, 1, 3, 7, 100, 1000, 70_000]), max_size=6),
       st.lists(st.integers(50, 30_000), min_size=1, max_size=40))
def test_frame_reader_frames_across_feeds(sizes, chunks):
    # large frames move from the reader's buffer into the bytes they are
    # returned as (a quarter in): every byte comes out once, in order, and
    # ``buffered`` counts what was fed and not returned at every step
    parts = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
    data = stream_of(parts)
    fr = FrameReader()
    out, pos, i = [], 0, 0
    scratch = bytearray(max(chunks))  # one receive buffer, reused as a proxy does
    while pos < len(data):
        step = chunks[i % len(chunks)]
        piece = data[pos:pos + step]
        scratch[:len(piece)] = piece
        got = fr.feed(memoryview(scratch)[:len(piece)])
        scratch[:] = b"\xee" * len(scratch)
        out += got
        pos += min(step, len(data) - pos)
        i += 1
        assert all(type(f) is bytes for f in got)
        assert fr.consumed == sum(4 + len(f) for f in out)
        assert fr.buffered == pos - fr.consumed
    assert out == parts
    assert fr.buffered == 0 and fr.unframed() == b""


@pytest.mark.parametrize("cut", [4, 5, 300, 2_000, 9_999])
def test_frame_reader_unframed_hands_over_a_partial_frame(cut):
    # what a proxy forwards when the stream stops framing, or ends mid-frame
    data = frame(b"a" * 7) + frame(bytes(range(256)) * 40)
    fr = FrameReader()
    assert fr.feed(data[:11]) == [b"a" * 7]
    out = []
    for i in range(11, 11 + cut, 997):
        out += fr.feed(data[i:min(i + 997, 11 + cut)])
    assert out == [] and fr.buffered == cut
    assert fr.unframed() == data[11:11 + cut]
    assert fr.buffered == 0 and fr.consumed == 11 + cut
    # framing resumes after the bytes handed over
    assert fr.feed(frame(b"next")) == [b"next"]


def test_frame_reader_partial_size_lets_a_proxy_take_a_frame_back():
    # what the tap does with a frame over its memory budget: take back what the
    # reader holds of it, pass the rest on itself, and frame again after it
    big = frame(b"h" * 9 + b"x" * 100_000)
    fr = FrameReader()
    assert fr.partial_size is None
    assert fr.feed(frame(b"a") + big[:2]) == [b"a"] and fr.partial_size is None
    assert fr.feed(big[2:300]) == [] and fr.partial_size == len(big) - 4
    assert fr.feed(big[300:40_000]) == [] and fr.partial_size == len(big) - 4  # allocated whole by now
    assert fr.unframed() == big[:40_000] and fr.partial_size is None and fr.buffered == 0
    assert fr.feed(frame(b"next")) == [b"next"]
    bad = FrameReader(max_frame_size=10)
    with pytest.raises(FrameSizeError):
        bad.feed(frame(b"y" * 11))
    assert bad.partial_size is None


def test_frame_reader_rejects_early_and_stays_failed():
    fr = FrameReader(max_frame_size=100)
    assert fr.feed(frame(b"ok")) == [b"ok"]
    # the limit is checked as soon as the size arrives, before the body is buffered
    with pytest.raises(FrameSizeError, match="frame at byte 6: size 1000 above the limit 100"):
        fr.feed(b"\x00\x00\x03\xe8")
    with pytest.raises(FrameSizeError):
        fr.feed(b"more")
    fr = FrameReader()
    fr.feed(b"\xff\xff")
    with pytest.raises(FrameSizeError, match="negative size"):
        fr.feed(b"\xff\xfe")
    assert FrameReader().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_frame_reader_keeps_partial():
    fr = FrameReader()
    assert fr.feed(b"\x00\x00\x00\x05ab") == []
    assert fr.buffered == 6
    assert fr.feed(b"cde\x00\x00\x00\x01z\x00") == [b"abcde", b"z"]
    assert fr.buffered == 1 and fr.consumed == 14
