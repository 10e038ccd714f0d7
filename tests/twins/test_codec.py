"""The compiled core and its pure twin agree: same value, or same error class,
message and offset, on valid and on garbage input (kafkaproto._codec:
primitives, varint batches, frames, headers)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.outcomes import outcome

pytestmark = pytest.mark.compiled_only

READS = [
    ("read_int8", ()), ("read_int16", ()), ("read_int32", ()), ("read_int64", ()),
    ("read_uint16", ()), ("read_uint32", ()), ("read_float64", ()), ("read_bool", ()), ("read_uuid", ()),
    ("read_uvarint", ()), ("read_varint", ()), ("read_varlong", ()),
    ("read_string", (False,)), ("read_string", (True,)),
    ("read_compact_string", (False,)), ("read_compact_string", (True,)),
    ("read_bytes", (False,)), ("read_bytes", (True,)),
    ("read_compact_bytes", (False,)), ("read_compact_bytes", (True,)),
    ("read_array_length", (False,)), ("read_array_length", (True,)),
    ("read_compact_array_length", (False,)), ("read_compact_array_length", (True,)),
    ("read_tagged_fields", ()),
]


def _nan_safe(x):
    # NaN != NaN: compare NaNs by their bit pattern instead
    if isinstance(x, float) and x != x:
        return ("nan", __import__("struct").pack(">d", x))
    if isinstance(x, tuple):
        return tuple(_nan_safe(v) for v in x)
    return x


def same(a, b):
    return _nan_safe(a) == _nan_safe(b)


# Garbage biased towards the interesting bytes (continuation bits, -1 lengths).
garbage = st.lists(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0x02, 0x61, 0xC3, 0x0F]) | st.integers(0, 255),
                   max_size=24).map(bytes)


@settings(max_examples=300)
@given(garbage)
def test_reads_agree_on_garbage(compiled, pure, data):
    for method, args in READS:
        for offset in (0, 1):
            if offset > len(data):
                continue

            def run(mod):
                r = mod.Reader(data, offset)
                # read twice: the second read starts where the first one stopped
                return getattr(r, method)(*args), getattr(r, method)(*args), r.offset

            a, b = outcome(lambda: run(compiled)), outcome(lambda: run(pure))
            assert same(a, b), (method, args, data.hex(), a, b)


@settings(max_examples=200)
@given(garbage, st.integers(-1, 6))
def test_batch_decoders_agree(compiled, pure, data, count):
    for name in ("decode_uvarints", "decode_varints", "decode_varlongs"):
        a = outcome(lambda: (lambda r: (r[0].tolist(), r[1]))(getattr(compiled, name)(data, count)))
        b = outcome(lambda: (lambda r: (r[0].tolist(), r[1]))(getattr(pure, name)(data, count)))
        assert a == b, (name, data.hex(), count)


values = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                   st.text(max_size=5), st.binary(max_size=5), st.uuids())
WRITES = ["write_int8", "write_int16", "write_int32", "write_int64", "write_uint16", "write_uint32", "write_float64",
          "write_bool", "write_uuid", "write_uvarint", "write_varint", "write_varlong", "write_string",
          "write_compact_string", "write_bytes", "write_compact_bytes", "write_array_length",
          "write_compact_array_length"]


@settings(max_examples=300)
@given(values)
def test_writes_agree(compiled, pure, value):
    for method in WRITES:
        def run(mod):
            w = mod.Writer()
            getattr(w, method)(value)
            return w.getvalue()

        a, b = outcome(lambda: run(compiled)), outcome(lambda: run(pure))
        assert a == b, (method, value, a, b)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 40), max_size=6).map(lambda xs: b"".join(x.to_bytes(4, "big") + bytes(x) for x in xs)),
       st.binary(max_size=12), st.integers(-1, 64))
def test_frames_agree(compiled, pure, stream, tail, limit):
    data = stream + tail

    def offsets(mod):
        s, z, c = mod.frame_offsets(data, limit)
        return s.tolist(), z.tolist(), c

    def views(mod):
        frames, c = mod.split_frames(data, limit)
        return [bytes(f) for f in frames], c

    def incremental(mod):
        fr = mod.FrameReader(limit)
        out = []
        for i in range(len(data)):
            out += fr.feed(data[i:i + 1])
        return out, fr.buffered, fr.consumed

    for fn in (offsets, views, incremental):
        assert outcome(lambda: fn(compiled)) == outcome(lambda: fn(pure)), fn.__name__


@settings(max_examples=200)
@given(st.lists(st.integers(0, 3000), max_size=5), st.binary(max_size=12), st.integers(-1, 4000),
       st.lists(st.integers(1, 2000), min_size=1, max_size=10), st.booleans())
def test_frame_reader_agrees_on_any_chunking(compiled, pure, sizes, tail, limit, chunks, hand_over):
    # frames larger than a feed (the compiled reader fills the returned bytes
    # directly once a quarter has arrived), the state after every feed, and
    # the bytes handed over at the end
    data = b"".join(n.to_bytes(4, "big") + bytes([n % 251]) * n for n in sizes) + tail

    def incremental(mod):
        fr = mod.FrameReader(limit)
        steps = []
        pos = i = 0
        while pos < len(data):
            step = chunks[i % len(chunks)]
            steps.append((outcome(lambda: fr.feed(data[pos:pos + step])), fr.buffered, fr.consumed))
            pos += step
            i += 1
        if hand_over:
            steps.append((fr.unframed(), fr.buffered, fr.consumed))
        return steps

    assert incremental(compiled) == incremental(pure)


@settings(max_examples=200)
@given(garbage, st.integers(0, 2))
def test_headers_agree(compiled, pure, data, version):
    a = outcome(lambda: compiled.decode_request_header(data, version))
    b = outcome(lambda: pure.decode_request_header(data, version))
    assert a == b
    if version < 2:
        a = outcome(lambda: compiled.decode_response_header(data, version))
        b = outcome(lambda: pure.decode_response_header(data, version))
        assert a == b


# --------------------------------------------------------------------------
# writer modes: growable, counting, sized, into a buffer; blobs by reference

def _write_all(w, blob):
    w.write_int32(0)
    w.write_compact_string("héllo")
    w.write_blob(blob, True)
    w.write_string("x" * 300)
    w.write_blob(None, False)
    w.write_blob(blob, False)
    w.write_blob(b"", True)
    w.write_blob([blob, b"xy", b""], False)  # one field made of several buffers
    w.write_uvarint(300)
    w.set_int32(0, len(w) - 4)


def _summary(w, blob):
    parts = w.parts()
    return (len(w), w.external, b"".join(bytes(p) for p in parts), [p is blob for p in parts],
            [at for at, _ in w.blobs])


def test_writer_modes_agree(compiled, pure):
    blob = b"b" * 1000
    got = {}
    for name, mod in (("compiled", compiled), ("pure", pure)):
        count = mod.Writer.counting()
        _write_all(count, blob)
        kept = mod.Writer(keep_blobs=True)
        _write_all(kept, blob)
        sized = mod.Writer.sized(len(kept) - kept.external, keep_blobs=True)
        _write_all(sized, blob)
        copied = mod.Writer()
        _write_all(copied, blob)
        target = bytearray(len(copied) + 3)
        into = mod.Writer.into(target, 3)
        _write_all(into, blob)
        into.release()
        got[name] = ((len(count), count.external), _summary(kept, blob), _summary(sized, blob),
                     copied.getvalue(), bytes(target))
        assert got[name][1][2] == got[name][3] == got[name][4][3:] and got[name][0][0] == len(copied)
    assert got["compiled"] == got["pure"]


def test_writer_mode_errors_agree(compiled, pure):
    def overflow(mod):
        w = mod.Writer.sized(5)
        w.write_int32(1)
        w.write_int16(2)

    def readonly(mod):
        mod.Writer.into(b"abc")

    def counting_value(mod):
        mod.Writer.counting().getvalue()

    def kept_value(mod):
        w = mod.Writer(keep_blobs=True)
        w.write_blob(b"x", True)
        w.getvalue()

    def bad_blob(mod):
        mod.Writer().write_blob(3, False)

    def null_blob(mod):
        mod.Writer().write_blob(None, True, False)

    def bad_piece(mod):
        mod.Writer().write_blob([b"x", 3], True)

    for case in (overflow, readonly, counting_value, kept_value, bad_blob, null_blob, bad_piece):
        a, b = outcome(lambda: case(compiled)), outcome(lambda: case(pure))
        assert a == b, (case.__name__, a, b)
        assert a[0] == "err", case.__name__
