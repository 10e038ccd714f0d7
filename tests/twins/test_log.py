"""The compiled dump-log walker (log._text) and its pure twin give the same
text and stop the same way (where, why, the same error): v2 batches of every
codec, legacy message sets, control batches, keys and values that are not
UTF-8, each printing option; segments with bytes changed, cut or inserted;
the search for the next readable batch; Java's UTF-8 rule."""

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaproto.log import dump as kdump
from support.kafka_log import T0, PartitionWriter
from support.twins import compiled_impl, pure_impl

pytestmark = pytest.mark.compiled_only

C, P = compiled_impl(), pure_impl()


def _segment(tmp_path) -> bytes:
    rng = random.Random(4)
    w = PartitionWriter(tmp_path, "twins", 0, segment_bytes=1 << 20)
    for k in range(150):
        recs = [(None if rng.random() < 0.2 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 9))),
                 None if rng.random() < 0.1 else (b"\xff\xfe bad utf-8 \xed\xa0\x80 " if i % 4 == 0
                                                   else "é ok ".encode()) * i,
                 [(f"h{j}", b"x") for j in range(i % 3)], T0 + k * 10 + i) for i in range(1 + k % 5)]
        magic = 2 if k % 6 else (k // 6) % 2
        if magic < 2:
            recs = [(key, value, [], ts) for key, value, _h, ts in recs]
        w.append(recs, codec=("none", "gzip", "lz4", "snappy", "zstd")[k % 5 if magic == 2 else k % 3],
                 magic=magic, producer_id=-1 if magic < 2 else 4, producer_epoch=0,
                 transactional=magic == 2 and k % 7 == 1, timestamp_type=k % 2 if magic else 0)
        if magic == 2 and k % 7 == 1:
            w.end_transaction(4, commit=k % 2 == 0)
    w.close()
    return w.segment_file(0).read_bytes()


def _hook(kind, offset, key, value):
    if kind >= 0:
        return b" control %d %d" % (kind, len(value or b""))
    return (None if key is None else key.hex().encode(), None if value is None else b"%d" % len(value))


def _walks(impl, data: bytes, flags: int, window: int):
    """Every walk over ``data`` in windows, as the segment walk makes them (stops, errors as text)."""
    walker = impl.module("log._text").TextWalk(flags, _hook)
    out, pos = [], 0
    while pos < len(data):
        got = walker.walk(data, 0, pos, min(len(data), pos + window))
        err = got[11]
        out.append(got[:11] + (None if err is None else (type(err).__name__, err.detail, tuple(err.path)),))
        if got[1] <= pos:
            pos += 1  # stopped where it started: step over a byte, as a resync would
        else:
            pos = got[1]
    return out, walker.gaps


@pytest.mark.parametrize("flags", [1 | 2 | 8, 1 | 8, 8, 1 | 2 | 4 | 8, 1 | 2 | 16 | 8, 1 | 2])
def test_text_walks_twins(tmp_path, flags):
    data = _segment(tmp_path)
    for window in (len(data), 4096):
        c, p = _walks(C, data, flags, window), _walks(P, data, flags, window)
        assert c == p
    text = b"".join(step[0] for step in c[0])
    assert text.count(b"\n") >= 150 and (b"\xef\xbf\xbd" in text or not flags & 2 or flags & 16)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_damaged_segments_twins(tmp_path_factory, data):
    clean = _segment(tmp_path_factory.mktemp("twins"))
    blob = bytearray(clean)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) - 1))
        what = data.draw(st.sampled_from(["byte", "size", "cut", "insert"]))
        if what == "byte":
            blob[at] = data.draw(st.integers(0, 255))
        elif what == "size" and at + 12 <= len(blob):
            struct.pack_into(">i", blob, at + 8, data.draw(st.sampled_from([0, 3, 48, 0x7FFFFFF0, -1, 200])))
        elif what == "cut":
            del blob[at:]
            break
        else:
            blob[at:at] = bytes(data.draw(st.integers(0, 255)) for _ in range(data.draw(st.integers(1, 30))))
    blob = bytes(blob)
    flags = data.draw(st.sampled_from([1 | 2 | 8, 8, 1 | 2, 1 | 4 | 2 | 8]))
    assert _walks(C, blob, flags, 4096) == _walks(P, blob, flags, 4096)
    # the search for the next readable batch after each place
    for start in sorted({data.draw(st.integers(0, max(0, len(blob) - 1))) for _ in range(5)}):
        for magic in (0, 1, 2):
            for after in (-1, 40):
                args = (blob, 0, start, len(blob), len(blob), after, magic)
                assert C.module("log._text").find_batch(*args) == P.module("log._text").find_batch(*args)
                window = blob[start:start + 2048]
                args = (window, start, start, len(blob), len(blob), after, magic)
                assert C.module("log._text").find_batch(*args) == P.module("log._text").find_batch(*args)


_SPECIAL = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF,
            0xF0, 0xF1, 0xF4, 0xF5, 0xF8, 0xFF]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_SPECIAL) | st.integers(0, 255), max_size=12).map(bytes))
def test_java_string_twins(raw):
    got = C.module("log._text").java_string(raw)
    assert got == P.module("log._text").java_string(raw)
    got.decode("utf-8")  # always valid UTF-8 out
    if len(raw) and raw.isascii():
        assert got == raw


def test_dump_options_make_the_same_text(tmp_path, monkeypatch):
    """Through dump(): both engines print the same for every option."""
    import io

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(_segment(tmp_path))
    for kw in (dict(print_data_log=True), dict(deep_iteration=True, skip_record_metadata=True),
               dict(print_data_log=True, value_encoding="hex")):
        out = {}
        for name, impl in (("c", C), ("p", P)):
            monkeypatch.setattr(kdump, "_TEXT", impl.module("log._text"))
            buf = io.StringIO()
            kdump.dump([str(seg)], buf, io.StringIO(), **kw)
            out[name] = buf.getvalue()
        assert out["c"] == out["p"]
