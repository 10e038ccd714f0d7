"""Pure-Python twin of ``_text.pyx``: DumpLogSegments' text for the batches of a segment.

The batches are walked by the records module's own twin
(``records._batches_py.decode_record_batches``); the lines are the compiled
module's, byte for byte.
"""

from __future__ import annotations

import struct
import zlib

from crc32c import crc32c as _crc32c

from .._limits import DEFAULT_MAX_HEADERS_PER_BATCH, DEFAULT_MAX_HEADERS_PER_RECORD, DEFAULT_MAX_RECORDS_PER_BATCH
from ..errors import KafkaProtocolError
from ..records import _compression
from ..records._batches_py import decode_record_batches
from ..records._common import CallBudget

COMPILED = False

T_DEEP, T_DATA, T_SKIP_META, T_CHECK_CRC, T_DECODE = 1, 2, 4, 8, 16
S_END, S_TRUNC, S_BAD, S_FRAMING = 0, 1, 2, 3

_I32_MAX = 2**31 - 1
_CODECS = (b"none", b"gzip", b"snappy", b"lz4", b"zstd", b"unknown", b"unknown", b"unknown")
_i32 = struct.Struct(">i")
_REPL = "\ufffd".encode("utf-8")


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _mal4_2(b1: int, b2: int) -> bool:
    return (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF)) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)


def java_string(data) -> bytes:
    """``data`` as Java's ``new String(data, UTF_8)`` reads it, encoded back to UTF-8: every
    malformed sequence becomes U+FFFD by the JDK's rule for how many bytes it takes (which is
    not the "maximal subpart" rule of Python's ``errors="replace"``)."""
    s = bytes(data)
    try:
        s.decode("utf-8")
        return s
    except UnicodeDecodeError:
        pass
    out = bytearray()
    i, n = 0, len(s)
    while i < n:
        b1 = s[i]
        if b1 < 0x80:
            out.append(b1)
            i += 1
            continue
        if (b1 >> 5) == 6 and (b1 & 0x1E) != 0:
            if n - i < 2:
                i = n
            elif not _cont(s[i + 1]):
                i += 1
            else:
                out += s[i:i + 2]
                i += 2
                continue
        elif (b1 >> 4) == 14:
            rem = n - i
            if rem < 3:
                i = i + 1 if rem > 1 and ((b1 == 0xE0 and (s[i + 1] & 0xE0) == 0x80) or not _cont(s[i + 1])) else n
            else:
                b2, b3 = s[i + 1], s[i + 2]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    i += 1 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 2
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    i += 3
                    if not 0xD800 <= c <= 0xDFFF:
                        out += s[i - 3:i]
                        continue
        elif (b1 >> 3) == 30:
            rem = n - i
            if rem < 4:
                if b1 > 0xF4 or (rem > 1 and _mal4_2(b1, s[i + 1])):
                    i += 1
                elif rem > 2 and not _cont(s[i + 2]):
                    i += 2
                else:
                    i = n
            else:
                b2, b3, b4 = s[i + 1], s[i + 2], s[i + 3]
                c = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if _cont(b2) and _cont(b3) and _cont(b4) and 0x10000 <= c <= 0x10FFFF:
                    out += s[i:i + 4]
                    i += 4
                    continue
                if b1 > 0xF4 or _mal4_2(b1, b2):
                    i += 1
                elif not _cont(b3):
                    i += 2
                else:
                    i += 3
        else:
            i += 1
        out += _REPL
    return bytes(out)


def _next_seq(base: int, delta: int) -> int:
    if base < 0:
        return -1
    seq = base + delta
    return seq - _I32_MAX - 1 if seq > _I32_MAX else seq


def _legacy_crcs(b, mv, limit) -> list[int]:
    """The own CRC of each record of a legacy batch (a compressed one's inner messages)."""
    if b.attributes & 7 == 0:
        return [b.crc]
    body = mv[b.offset + 12:b.offset + 12 + b.batch_length]
    p = 6 + (8 if b.magic == 1 else 0)
    klen = _i32.unpack_from(body, p)[0]
    p += 4 + max(klen, 0)
    vlen = _i32.unpack_from(body, p)[0]
    inner = _compression.decompress(b.attributes & 7, body[p + 4:p + 4 + vlen], b.magic, limit, 0)
    out, q = [], 0
    while q + 12 <= len(inner):
        out.append(struct.unpack_from(">I", inner, q + 12)[0])
        q += 12 + _i32.unpack_from(inner, q + 8)[0]
    return out


class TextWalk:
    """Prints the batches of windows of one segment file as DumpLogSegments does (see ``_text.pyx``)."""

    def __init__(self, flags, hook=None, *, max_decompressed_size=_compression.DEFAULT_MAX_DECOMPRESSED_SIZE,
                 max_records_per_batch=DEFAULT_MAX_RECORDS_PER_BATCH,
                 max_headers_per_record=DEFAULT_MAX_HEADERS_PER_RECORD,
                 max_headers_per_batch=DEFAULT_MAX_HEADERS_PER_BATCH):
        self.flags = flags
        self.hook = hook
        self.limit = max_decompressed_size
        self.caps = {"max_records_per_batch": max_records_per_batch, "max_headers_per_record": max_headers_per_record,
                     "max_headers_per_batch": max_headers_per_batch}
        self.gaps = {}
        self.last = -1
        self.batches = 0

    def walk(self, buf, base, start, stop, write=None):
        mv = memoryview(buf).cast("B")
        stop = min(stop, base + len(mv))
        out = []
        flags = self.flags
        check = bool(flags & T_CHECK_CRC)
        status, need, error = S_END, 0, None
        nb, first, last, magic, last_ts = 0, (-1, -1), (-1, -1), -1, -1
        pos = start - base
        budget = CallBudget(1 << 62, 1 << 62, 1 << 62)
        batches = decode_record_batches(mv[pos:], check, self.limit, False, budget=budget, **self.caps)
        while pos + base < stop:
            try:
                b = next(batches)
            except StopIteration:
                break
            except KafkaProtocolError as exc:
                status, error = self._failure(mv, pos, exc)
                if status == S_BAD:
                    need = 12 + _i32.unpack_from(mv, pos + 8)[0]
                break
            if b.truncated:
                status = S_TRUNC
                need = 61 if b.size is None else b.size
                break
            try:
                text = self._lines(b, mv, pos, base, check)
            except KafkaProtocolError as exc:
                status, error, need = S_BAD, exc, 12 + b.batch_length
                break
            out.append(text)
            bfirst = b.base_offset
            if nb == 0:
                first = (bfirst, b.last_offset)
            last = (bfirst, b.last_offset)
            magic = b.magic
            last_ts = max([-1] + [r.timestamp for r in b.records])
            nb += 1
            pos += 12 + b.batch_length
        self.batches += nb
        text = b"".join(out)
        if write is not None:
            if text:
                write(text)
            text = None
        return (text, pos + base, status, need, nb, first[0], first[1], last[0], last[1], magic, last_ts,
                error)

    @staticmethod
    def _failure(mv, pos, exc):
        """Whether the batch at ``pos`` has a plausible extent (a bad batch) or none (the framing is lost)."""
        n = len(mv) - pos
        if n >= 17:
            size = _i32.unpack_from(mv, pos + 8)[0]
            magic = struct.unpack_from(">b", mv, pos + 16)[0]
            if 0 <= magic <= 2 and size >= (49 if magic == 2 else 14) and size <= n - 12:
                return S_BAD, exc
        return S_FRAMING, exc

    def _lines(self, b, mv, pos, base, check) -> bytes:
        flags = self.flags
        magic, attrs = b.magic, b.attributes
        if check:
            valid = True
        elif magic == 2:
            valid = _crc32c(mv[pos + 21:pos + 12 + b.batch_length]) == b.crc
        else:
            valid = zlib.crc32(mv[pos + 16:pos + 12 + b.batch_length]) == b.crc
        kind = b"NoTimestampType" if magic == 0 else b"LogAppendTime" if attrs & 8 else b"CreateTime"
        if magic == 2:
            dh = (b"OptionalLong[%d]" % b.base_timestamp) if attrs & 0x40 else b"OptionalLong.empty"
            line = (b"baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d "
                    b"producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %s isControl: %s "
                    b"deleteHorizonMs: %s" % (
                        b.base_offset, b.last_offset, b.record_count, b.base_sequence,
                        _next_seq(b.base_sequence, b.last_offset - b.base_offset), b.producer_id, b.producer_epoch,
                        b.partition_leader_epoch, b"true" if attrs & 0x10 else b"false",
                        b"true" if attrs & 0x20 else b"false", dh))
            max_ts = b.max_timestamp
        else:
            line = b"offset: %d" % b.last_offset
            max_ts = b.max_timestamp if magic == 1 else -1
        out = [line, b" position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %s\n" % (
            base + pos, kind, max_ts, 12 + b.batch_length, magic, _CODECS[attrs & 7], b.crc,
            b"true" if valid else b"false")]
        if not flags & T_DEEP:
            return b"".join(out)
        ctl = magic == 2 and bool(attrs & 0x20)
        records = list(b.records)
        crcs = _legacy_crcs(b, mv, self.limit) if magic < 2 else None
        for k, r in enumerate(records):
            if r.offset != self.last + 1:
                self.gaps[self.last] = r.offset
            self.last = r.offset
            first = True
            if not flags & T_SKIP_META:
                first = False
                out.append(b"| offset: %d %s: %d keySize: %d valueSize: %d" % (
                    r.offset, kind, r.timestamp, -1 if r.key is None else len(r.key),
                    -1 if r.value is None else len(r.value)))
                if magic == 2:
                    keys = b",".join(k.encode("utf-8") for k, _ in r.headers)
                    out.append(b" sequence: %d headerKeys: [%s]" % (
                        _next_seq(b.base_sequence, r.offset - b.base_offset), keys))
                else:
                    out.append(b" isValid: true crc: %d" % crcs[k])
                if ctl:
                    ctype = struct.unpack_from(">h", r.key, 2)[0]
                    if ctype in (0, 1):
                        out.append(b" endTxnMarker: %s coordinatorEpoch: %d" % (
                            b"ABORT" if ctype == 0 else b"COMMIT", struct.unpack_from(">i", r.value, 2)[0]))
                    else:
                        out.append(self.hook(ctype, r.offset, _blob(r.key), _blob(r.value)))
            if flags & T_DATA and not ctl:
                if flags & T_DECODE:
                    kt, vt = self.hook(-1, r.offset, _blob(r.key), _blob(r.value))
                else:
                    kt = None if r.key is None else java_string(r.key)
                    vt = None if r.value is None else java_string(r.value)
                if kt is not None:
                    out.append((b"| key: " if first else b" key: ") + kt)
                    first = False
                if vt is not None:
                    out.append((b"| payload: " if first else b" payload: ") + vt)
            out.append(b"\n")
        return b"".join(out)


def _blob(v):
    return None if v is None else bytes(v)


def _plausible(mv, at, n, size_left, after, magic) -> bool:
    size = _i32.unpack_from(mv, at + 8)[0]
    base = struct.unpack_from(">q", mv, at)[0]
    if size < (49 if magic == 2 else 22 if magic == 1 else 14) or size > size_left - 12 or at + 12 + size > n:
        return False
    if magic == 2:
        lod, count = _i32.unpack_from(mv, at + 23)[0], _i32.unpack_from(mv, at + 57)[0]
        codec = struct.unpack_from(">H", mv, at + 21)[0] & 7
        return base > after and lod >= 0 and 0 <= count <= size and codec <= 4
    return base > after


def find_batch(buf, base, start, stop, size, after, magic):
    """See ``_text.pyx``."""
    mv = memoryview(buf).cast("B")
    n = len(mv)
    at = start - base
    hi = min(stop - base, n - 17)
    want = bytes([magic & 0xFF])
    hay = bytes(mv[max(at, 0):max(hi, 0) + 16]) if hi > at else b""
    while at < hi:
        k = hay.find(want, at + 16 - (start - base))
        if k < 0 or k + (start - base) - 16 >= hi:
            at = hi
            break
        at = k + (start - base) - 16
        if at + 61 > n:
            return (2, at + base)
        bsize = _i32.unpack_from(mv, at + 8)[0]
        if 14 <= bsize <= size - (at + base) - 12 and at + 12 + bsize > n:
            return (2, at + base)
        if _plausible(mv, at, n, size - (at + base), after, magic):
            if magic == 2:
                if _crc32c(mv[at + 21:at + 12 + bsize]) == struct.unpack_from(">I", mv, at + 17)[0]:
                    return (0, at + base)
            elif zlib.crc32(mv[at + 16:at + 12 + bsize]) == struct.unpack_from(">I", mv, at + 12)[0]:
                return (0, at + base)
        at += 1
    return (1, base + max(at, hi))
