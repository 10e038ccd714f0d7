"""Varints and frame splitting against a plain C loop and the peers people use."""

import ctypes
import struct

import numpy as np
import pytest

from kafkaproto import _codec_py as pure
from kafkaproto.frames import frame_offsets
from kafkaproto.primitives import decode_varints, encode_varints

N_VARINTS = 1_000_000
N_FRAMES = 1_000_000


@pytest.fixture(scope="module")
def varint_buf():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.integers(-64, 64, N_VARINTS // 2), rng.integers(-(2**31), 2**31 - 1, N_VARINTS // 2)])
    rng.shuffle(values)
    data = encode_varints(values)
    return values.astype(np.int32), data


@pytest.fixture(scope="module")
def frame_buf():
    # 1,000,000 frames of 60 bytes of payload (64 MB)
    body = bytes(range(60))
    return (struct.pack(">i", 60) + body) * N_FRAMES


def test_varints_kafkaproto(benchmark, varint_buf):
    values, data = varint_buf
    benchmark.group = "decode 1M zig-zag varints"
    benchmark.extra_info["impl"] = "kafkaproto"
    arr, end = benchmark(decode_varints, data)
    assert end == len(data) and np.array_equal(arr, values)


def test_varints_c_reference(benchmark, varint_buf, cref):
    values, data = varint_buf
    out = np.empty(N_VARINTS, dtype=np.int32)
    fn = cref.ref_decode_varints
    fn.restype = ctypes.c_long
    benchmark.group = "decode 1M zig-zag varints"
    benchmark.extra_info["impl"] = "C loop"
    n = benchmark(fn, data, ctypes.c_size_t(len(data)), out.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(N_VARINTS))
    assert n == N_VARINTS and np.array_equal(out, values)


def test_varints_aiokafka_per_value(benchmark, varint_buf):
    from aiokafka.record.util import decode_varint

    values, data = varint_buf

    def run():
        out = []
        pos = 0
        n = len(data)
        append = out.append
        while pos < n:
            v, pos = decode_varint(data, pos)
            append(v)
        return out

    benchmark.group = "decode 1M zig-zag varints"
    benchmark.extra_info["impl"] = "aiokafka decode_varint"
    out = benchmark.pedantic(run, rounds=3, iterations=1)
    assert out[:100] == values[:100].tolist()


def test_frames_kafkaproto(benchmark, frame_buf):
    benchmark.group = "split 1M frames (64 MB) into offsets"
    benchmark.extra_info["impl"] = "kafkaproto"
    starts, sizes, consumed = benchmark(frame_offsets, frame_buf)
    assert len(starts) == N_FRAMES and consumed == len(frame_buf)


def test_frames_c_reference(benchmark, frame_buf, cref):
    starts = np.empty(N_FRAMES, dtype=np.int64)
    sizes = np.empty(N_FRAMES, dtype=np.int32)
    end = ctypes.c_int64()
    fn = cref.ref_split_frames
    fn.restype = ctypes.c_long
    benchmark.group = "split 1M frames (64 MB) into offsets"
    benchmark.extra_info["impl"] = "C loop"
    n = benchmark(fn, frame_buf, ctypes.c_size_t(len(frame_buf)), starts.ctypes.data_as(ctypes.c_void_p),
                  sizes.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(N_FRAMES), ctypes.byref(end))
    assert n == N_FRAMES and end.value == len(frame_buf)


def test_frames_struct_loop(benchmark, frame_buf):
    def run():
        unpack = struct.Struct(">i").unpack_from
        out = []
        pos, n = 0, len(frame_buf)
        while pos + 4 <= n:
            size = unpack(frame_buf, pos)[0]
            if pos + 4 + size > n:
                break
            out.append((pos + 4, size))
            pos += 4 + size
        return out

    benchmark.group = "split 1M frames (64 MB) into offsets"
    benchmark.extra_info["impl"] = "pure-Python struct loop"
    assert len(benchmark.pedantic(run, rounds=3, iterations=1)) == N_FRAMES


def test_frames_pure_twin(benchmark, frame_buf):
    benchmark.group = "split 1M frames (64 MB) into offsets"
    benchmark.extra_info["impl"] = "kafkaproto pure twin"
    starts, _, _ = benchmark.pedantic(pure.frame_offsets, (frame_buf,), rounds=3, iterations=1)
    assert len(starts) == N_FRAMES
