"""The walker's whole state as bytes: what ``Walker.save()`` writes and
``Walker.load()`` reads back (the compiled walker and its twin write the
same bytes for the same state).

A reader that stops between two reads of a growing capture (a streaming
query's micro-batches, each in a process that keeps nothing) saves the
walker's state where the next read finds it: every open connection's
reassembly (the next byte expected, the segments waiting behind a hole),
detection (the bytes held until the connection is known to be Kafka or
not), framing (the partial frame's bytes, whether the direction is in
step) and pairing (the requests waiting for their responses, the frames'
numbering), and the closed connections remembered.  The size is bounded
by the walker's own limits (``max_open_connections``,
``max_pending_total``, the detection window and a partial frame per
direction).

The layout: ``KPWS``, a version (uint16, big-endian), the CRC-32 of the
rest (uint32), then one value in a small tagged encoding (None; an integer
as a zig-zag varint; bytes; a UTF-8 string; a list of values), the list
``[limits, state]``: ``limits`` are the walker's (a state loads only into a
walker made with the same), ``state`` its connections (see
``walker/_resume_py.py``).
"""

from __future__ import annotations

import struct
import zlib

from ...errors import KafkaProtocolError

__all__ = ["MAGIC", "VERSION", "WalkerStateError", "dump", "load"]

MAGIC = b"KPWS"
VERSION = 1
_HEAD = struct.Struct(">4sHI")
_NONE, _INT, _BYTES, _STR, _LIST = 0, 1, 2, 3, 4


class WalkerStateError(KafkaProtocolError):
    """Bytes that are no walker state of this version, or a state saved by a
    walker with other limits."""


def _uvarint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _enc(out: bytearray, v) -> None:
    if v is None:
        out.append(_NONE)
    elif isinstance(v, int):
        out.append(_INT)
        v = int(v)
        _uvarint(out, (v << 1) if v >= 0 else ((-v) << 1) - 1)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        out.append(_BYTES)
        _uvarint(out, len(v))
        out += v
    elif isinstance(v, str):
        b = v.encode("utf-8", "surrogatepass")
        out.append(_STR)
        _uvarint(out, len(b))
        out += b
    elif isinstance(v, (list, tuple)):
        out.append(_LIST)
        _uvarint(out, len(v))
        for item in v:
            _enc(out, item)
    else:
        raise TypeError(f"a walker state holds no {type(v).__name__}")


def dump(limits: list, state: list) -> bytes:
    """The bytes of a state saved by a walker with ``limits``."""
    body = bytearray()
    _enc(body, [limits, state])
    return _HEAD.pack(MAGIC, VERSION, zlib.crc32(body)) + bytes(body)


class _Reader:
    __slots__ = ("b", "p", "n")

    def __init__(self, b: bytes, p: int) -> None:
        self.b, self.p, self.n = b, p, len(b)

    def fail(self, why: str):
        raise WalkerStateError(why, "walker state", self.p)

    def uvarint(self) -> int:
        b, p, shift, v = self.b, self.p, 0, 0
        while True:
            if p >= self.n:
                self.fail("a number runs past the end")
            c = b[p]
            p += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                break
            shift += 7
            if shift > 70:
                self.fail("a number of more than 10 bytes")
        self.p = p
        return v

    def value(self, depth: int = 0):
        if self.p >= self.n:
            self.fail("a value runs past the end")
        tag = self.b[self.p]
        self.p += 1
        if tag == _NONE:
            return None
        if tag == _INT:
            v = self.uvarint()
            return (v >> 1) if not v & 1 else -((v + 1) >> 1)
        if tag in (_BYTES, _STR):
            k = self.uvarint()
            if k > self.n - self.p:
                self.fail(f"{k} bytes claimed, {self.n - self.p} left")
            raw = self.b[self.p:self.p + k]
            self.p += k
            if tag == _BYTES:
                return raw
            try:
                return raw.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                self.fail("a text that is not UTF-8")
        if tag == _LIST:
            k = self.uvarint()
            if k > self.n - self.p or depth > 16:
                self.fail(f"a list of {k} values with {self.n - self.p} bytes left")
            return [self.value(depth + 1) for _ in range(k)]
        self.fail(f"unknown tag {tag}")


def load(data, limits: list) -> list:
    """The state in ``data`` (bytes of :func:`dump`), checked: saved by this
    version, undamaged, by a walker with ``limits``; else WalkerStateError."""
    data = bytes(data)
    if len(data) < _HEAD.size:
        raise WalkerStateError(f"{len(data)} bytes, no header", "walker state", 0)
    magic, version, crc = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise WalkerStateError(f"not a walker state (first bytes {data[:4].hex()})", "walker state", 0)
    if version != VERSION:
        raise WalkerStateError(f"version {version}, this library reads version {VERSION}", "walker state", 4)
    if zlib.crc32(memoryview(data)[_HEAD.size:]) != crc:
        raise WalkerStateError("damaged (its CRC does not match)", "walker state", 6)
    r = _Reader(data, _HEAD.size)
    got = r.value()
    if r.p != r.n:
        r.fail(f"{r.n - r.p} bytes after the state")
    if not isinstance(got, list) or len(got) != 2 or not isinstance(got[1], list):
        raise WalkerStateError("not a [limits, state] pair", "walker state", _HEAD.size)
    if got[0] != limits:
        raise WalkerStateError(f"saved by a walker with limits {got[0]}, loaded into one with {limits}",
                               "walker state", _HEAD.size)
    return got[1]
