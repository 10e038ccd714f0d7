"""Pure-Python twin of the compiled stream splitter (``_frames.pyx``), on the twin's frame rule."""

from __future__ import annotations

import struct

import numpy as np

from .._codec_py import FRAME_BAD_SIZE, FRAME_COMPLETE, frame_at

COMPILED = False

_WIN_SHIFT = 30


def arrow_split_frames(arr, kind, max_frame_size, views):
    """Same buffers as the compiled splitter: a view per frame (region 0 = the
    input's data buffer, side buffer for frames that straddle chunks), or
    copied bodies with int64 offsets."""
    bufs = arr.buffers()
    data_len = bufs[2].size if len(bufs) > 2 and bufs[2] is not None else 0
    side_base = (data_len >> _WIN_SHIFT) + 1
    offsets = arr.buffers()[1]
    wide = kind == 1
    view_out, offs, out = bytearray(), [0], bytearray()
    carry = bytearray()
    consumed = 0
    stream_at = 0
    bad_at, bad_size = -1, 0
    mask = (1 << _WIN_SHIFT) - 1

    def emit(body, region_pos):
        if not views:
            out.extend(body)
            offs.append(len(out))
            return
        size = len(body)
        if size <= 12:
            view_out.extend(struct.pack("<i", size) + bytes(body) + bytes(12 - size))
            return
        if region_pos is None:
            pos = len(out)
            out.extend(body)
            bi = side_base + (pos >> _WIN_SHIFT)
        else:
            pos = region_pos
            bi = pos >> _WIN_SHIFT
        view_out.extend(struct.pack("<i", size) + bytes(body[:4]) + struct.pack("<ii", bi, pos & mask))

    for j, chunk in enumerate(arr.to_pylist()):
        if chunk is None:
            continue
        idx = arr.offset + j
        base = int(np.frombuffer(offsets, dtype="<i8" if wide else "<i4", count=idx + 1)[idx])
        n = len(chunk)
        pos = 0
        if bad_at >= 0:
            carry.extend(chunk)
            stream_at += n
            continue
        if carry:
            if len(carry) < 4:
                need = min(4 - len(carry), n)
                carry.extend(chunk[:need])
                pos = need
                if len(carry) < 4:
                    stream_at += n
                    continue
            st, size = frame_at(carry, 0, len(carry), max_frame_size)
            if st == FRAME_BAD_SIZE:
                bad_at, bad_size = consumed, size
                carry.extend(chunk[pos:])
                stream_at += n
                continue
            need = 4 + size - len(carry)
            if need > n - pos:
                carry.extend(chunk[pos:])
                stream_at += n
                continue
            carry.extend(chunk[pos:pos + need])
            pos += need
            emit(bytes(carry[4:]), None)
            consumed += len(carry)
            carry = bytearray()
        while True:
            st, size = frame_at(chunk, pos, n, max_frame_size)
            if st == FRAME_BAD_SIZE:
                bad_at, bad_size = stream_at + pos, size
                break
            if st != FRAME_COMPLETE:
                break
            emit(chunk[pos + 4:pos + 4 + size], base + pos + 4)
            pos += 4 + size
            consumed = stream_at + pos
        carry.extend(chunk[pos:])
        stream_at += n
    count = len(view_out) // 16 if views else len(offs) - 1
    return {
        "n": count,
        "views": bytes(view_out) if views else None,
        "offsets": None if views else np.array(offs, dtype="<i8").tobytes(),
        "data": bytes(out),
        "side_base": side_base,
        "tail": bytes(carry),
        "consumed": consumed,
        "bad_at": bad_at,
        "bad_size": bad_size,
    }
