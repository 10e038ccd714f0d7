"""The compiled Arrow loops and their pure twin give the same arrays (and the same
buffers) on the same inputs, valid or damaged: messages, headers, frame
splitting, record batches and legacy message sets."""

import random
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kafkaproto import arrow, encode_request, encode_response
from kafkaproto import frames as kframes
from kafkaproto.messages import APIS, request_class, response_class
from support.legacy_sets import (
    ALL,
    damaged_versions,
    inner_set,
    legacy_sets,
    objects_agree,
    refix_crcs,
    small_sets,
    twins_agree,
    wrapper,
)
from support.message_values import random_message
from support.records_util import blobs_for, damaged
from support.twins import compiled_impl, plain_tree, plain_walk, pure_impl

C, P = compiled_impl(), pure_impl()

pytestmark = pytest.mark.compiled_only


def garble(frames, rng):
    out = []
    for f in frames:
        out.append(f)
        b = bytearray(f)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out += [bytes(b), f[: rng.randrange(len(f) + 1)]]
    return out + [None]


@pytest.mark.parametrize("kind", ["request", "response"])
def test_messages_twins(kind):
    rng = random.Random(kind)
    for key, (_rq, _rs) in sorted(APIS.items()):
        cls = request_class(key) if kind == "request" else response_class(key)
        vs = [v for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1) if cls.supports(v)]
        frames, vers = [], []
        for v in vs:
            msg = random_message(cls, v, rng)
            f = (encode_request(msg, v, 1, "c") if kind == "request" else encode_response(msg, v, 1))[4:]
            got = garble([f], rng)
            frames += got
            vers += [v] * len(got)
        arr = pa.array(frames, pa.large_binary())
        vv = np.ones(len(vers), dtype=np.uint8)
        v32 = np.array(vers, dtype=np.int32)
        a = arrow._message_column(C.module("arrow._messages"), arr, 1, cls, v32, vv)
        b = arrow._message_column(P.module("arrow._messages"), arr, 1, cls, v32, vv)
        assert a.equals(b), cls.NAME
        # the same buffers too, validity and null slots included
        sa, ta, ea, tra = C.arrow_messages(arr, 1, cls, v32, vv)
        sb, tb, eb, trb = P.arrow_messages(arr, 1, cls, v32, vv)
        assert ((sa == 0) == (sb == 0)).all()
        assert ea == eb, cls.NAME
        assert (tra == trb).all(), cls.NAME
        assert plain_tree(ta) == plain_tree(tb), cls.NAME
        # the one-call functions (kafkaproto.arrow.messages): chunked, with header sizes
        # (some null, one past its frame: read the header there, or an error row)
        chunked = pa.chunked_array([arr[:5], arr[5:]])
        hs = pa.array([None if i % 3 == 0 else (1 << 20) if i == 1 else 4 if kind == "response"
                       else None for i in range(len(arr))], pa.int32())
        for h in (None, hs):
            if kind == "request" and h is None:
                args = (None, None)
            else:
                args = (pa.array(vers, pa.int16()), h)
            a = C.module("arrow._messages").messages_array(chunked, cls, *args)
            b = P.module("arrow._messages").messages_array(chunked, cls, *args)
            assert a.equals(b), cls.NAME


def test_headers_twins():
    rng = random.Random(5)
    frames = []
    for key, (_rq, _) in sorted(APIS.items()):
        cls = request_class(key)
        frames.append(encode_request(cls(), cls.HIGHEST_VERSION, rng.randint(0, 99), "id")[4:])
    frames = garble(frames, rng)
    arr = pa.array(frames)
    heads = [arrow._request_headers(impl.module("arrow._headers"), arr, 0) for impl in (C, P)]
    assert heads[0].equals(heads[1])
    keys = np.array([rng.choice(list(APIS)) for _ in frames], dtype=np.int32)
    vers = np.array([rng.randint(0, 5) for _ in frames], dtype=np.int32)
    ok = np.ones(len(frames), dtype=np.uint8)
    assert arrow._response_headers(C.module("arrow._headers"), arr, 0, keys, ok, vers, ok).equals(
        arrow._response_headers(P.module("arrow._headers"), arr, 0, keys, ok, vers, ok))
    # the one-call functions (kafkaproto.arrow.request_headers / response_headers)
    chunked = pa.chunked_array([arr[:3], arr[3:]])
    assert C.module("arrow._headers").request_headers_array(chunked).equals(
        P.module("arrow._headers").request_headers_array(chunked))
    nk = pa.array([None if i == 2 else int(k) for i, k in enumerate(keys)], pa.int32())
    assert C.module("arrow._headers").response_headers_array(chunked, nk, pa.array(vers)).equals(
        P.module("arrow._headers").response_headers_array(chunked, nk, pa.array(vers)))


@pytest.mark.parametrize("seed", range(4))
def test_split_twins(seed):
    rng = random.Random(seed)
    stream = b"".join(kframes.frame(bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 12, 13, 40]))))
                      for _ in range(50))
    stream += rng.choice([b"", b"\x00", b"\xff\xff\xff\xff rest", b"\x00\x00\x00\x09abc"])
    cuts = sorted(rng.sample(range(1, len(stream)), 20))
    chunks = pa.array([stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])])
    for zero_copy in (True, False):
        a = arrow._split(C.module("arrow._frames"), chunks, 1000, zero_copy)
        b = arrow._split(P.module("arrow._frames"), chunks, 1000, zero_copy)
        assert a.frames.equals(b.frames) and a.tail == b.tail and a.error == b.error
        assert a.frames.buffers()[1] == b.frames.buffers()[1]  # views / offsets, byte for byte


def test_split_views_beyond_1_gib_of_input():
    """Views use int32 offsets: the input is exposed as windows every GiB, and
    frames past the first GiB point into later windows."""
    big = 600 * 2**20
    small = b"".join(kframes.frame(bytes([i]) * 20) for i in range(5))
    stream = np.zeros(2 * (4 + big) + len(small), dtype=np.uint8)
    for at in (0, 4 + big):
        stream[at:at + 4] = np.frombuffer(big.to_bytes(4, "big"), dtype=np.uint8)
    stream[2 * (4 + big):] = np.frombuffer(small, dtype=np.uint8)
    got = arrow.split_frames(memoryview(stream), max_frame_size=2**30, zero_copy=True)
    assert len(got.frames) == 7 and got.tail == b""
    assert got.frames[2:].to_pylist() == [bytes([i]) * 20 for i in range(5)]
    assert len(got.frames.buffers()) == 2 + 2 + 1  # views, 2 input windows, 1 side window
    assert pc.binary_length(got.frames[:2].cast(pa.large_binary())).to_pylist() == [big, big]


@pytest.mark.parametrize("check_crc", [True, False])
def test_records_twins(check_crc):
    rng = random.Random(f"records{check_crc}")
    blobs = blobs_for(rng)
    blobs += damaged(blobs, rng)
    arr = pa.array(blobs, pa.large_binary())
    for want in ([1] * 7, [0, 0, 1, 1, 0, 0, 1], [1, 0, 0, 0, 0, 1, 1]):
        for partial, control in ((False, False), (True, False), (False, True), (True, True)):
            sa, ta, ea, wa = C.arrow_records(arr, 1, check_crc, 1 << 26, want, True, partial=partial, control=control)
            sb, tb, eb, wb = P.arrow_records(arr, 1, check_crc, 1 << 26, want, True, partial=partial, control=control)
            assert (sa == sb).all() and ea == eb
            assert plain_walk(wa) == plain_walk(wb)
            assert plain_tree(ta) == plain_tree(tb)
            if not partial:
                blob_errors = set(ea)
            else:  # the same blobs fail, at one of their batches (none has an error row)
                assert not ea and not sa.any() and blob_errors
                assert {int(wa["row"][k]) for k in wa["error"]} == blob_errors


# ---------------------------------------------------------------------------
# legacy (magic 0/1) message sets (tests/support/legacy_sets.py; their
# agreement with the object decoder: tests/test_arrow_legacy.py)


@pytest.mark.compiled_only
@pytest.mark.parametrize("seed", range(3))
def test_legacy_sets_twins(seed):
    blobs = legacy_sets(random.Random(seed))
    for check_crc in (True, False):
        twins_agree(blobs, check_crc)


@pytest.mark.compiled_only
@pytest.mark.parametrize("check_crc", [True, False])
def test_every_damaged_byte_and_cut_twins(check_crc):
    for blob in small_sets():
        twins_agree(damaged_versions(blob), check_crc, wants=(ALL,))


@pytest.mark.compiled_only
def test_random_sets_twins_and_objects():
    """Random legacy sets, then random damage to them, with CRCs fixed up so the
    damage reaches the walker's other checks."""
    rng = random.Random(11)
    blobs = []
    for _ in range(60):
        magic = rng.randint(0, 1)
        codec = rng.choice([0, 0, 1, 2, 3])
        n = rng.randint(1, 6)
        if codec:
            blob = wrapper(rng.choice([0, n - 1, n + 50, 2**40]), magic, codec, inner_set(magic, n, rng),
                           rng.choice([0, 0x08]))
        else:
            blob = inner_set(magic, n, rng, relative=False, first=rng.randint(0, 10**9))
        blobs.append(blob)
        for _ in range(4):
            b = bytearray(blob)
            for _ in range(rng.randint(1, 2)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            blobs.append(refix_crcs(bytes(b)))
    for check_crc in (True, False):
        twins_agree(blobs, check_crc, wants=(ALL,))
        objects_agree(blobs, check_crc)


@pytest.mark.compiled_only
def test_crc32_is_zlibs():

    rng = random.Random(3)
    for n in list(range(0, 70)) + [1000, 4099, 65_537]:
        data = rng.randbytes(n)
        assert C.crc32(data) == zlib.crc32(data)
        assert C.crc32(memoryview(data)[1:]) == zlib.crc32(data[1:])
