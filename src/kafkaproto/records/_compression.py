"""Record-batch compression codecs, shared by the compiled core and its twin.

All four codecs go through cramjam.  Kafka wraps two of them in its own
framing, which cramjam does not know about, so the framing is done here:

* snappy: Java clients write xerial snappy-java's stream format (an 8-byte
  magic, two int32 versions, then int32-length-prefixed raw snappy chunks);
  librdkafka writes one raw snappy block.  Both are read; xerial is written,
  since every client reads it.
* lz4: the LZ4 frame format, written the way Kafka's own producer writes it
  (independent 64 KiB blocks, no checksums).  Magic-0 messages carry the
  header checksum that Kafka 0.8/0.9 computed over the frame magic too
  (KAFKA-3160): written that way for magic 0, and not checked on read.

Decompression is bounded: a batch whose decompressed size would pass
``limit`` raises :class:`RecordLimitError` (a :class:`CorruptRecordError`)
without allocating more than about the limit.  Every decompressed result is
a ``memoryview`` of unsigned bytes.
"""

from __future__ import annotations

import struct
import sys
import threading
import zlib

import cramjam

try:  # one reusable decompression context per thread (cramjam makes one per call)
    import zstandard
except ImportError:  # pragma: no cover - a dependency; cramjam takes over without it
    zstandard = None

try:  # ISA-L's inflate, zlib's interface: 1.4x zlib's speed on 40 kB batches (see _INFLATE_MAX above that)
    from isal import isal_zlib as _inflate
except ImportError:  # pragma: no cover - a dependency; zlib's own inflate without it
    _inflate = zlib

from ..errors import CorruptRecordError, RecordLimitError


def _empty(size: int):
    """An uninitialised uint8 array when numpy is loaded already; else a bytearray
    (a process that never needs numpy, ``kafkaproto dump-log``, does not load it
    for this)."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return bytearray(size)
    return numpy.empty(size, numpy.uint8)

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

#: Default cap on one batch's decompressed size (bytes).
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_BLOCK = 64 * 1024
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LZ4_RAW = 0x80000000
_u32le = struct.Struct("<I")
_u32be = struct.Struct(">I")

# The most each codec can expand its input: deflate 1032:1; zstd 32768:1 (a
# 4-byte RLE block for 128 KiB); LZ4 255 bytes per byte of match length.  A
# size a header claims is believed only up to that, so a forged one costs no
# more memory than a real bomb of the same size would.
_MAX_RATIO = {GZIP: 1032, ZSTD: 32768, LZ4: 255}

# cramjam reports an output buffer that is too small with these words.
_TOO_SMALL = ("failed to write whole buffer", "smaller than required")


# ---------------------------------------------------------------------------
# xxHash32, needed for the 1-byte LZ4 frame header checksum only (a handful
# of bytes, so plain Python is fast enough).

_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            lanes = struct.unpack_from("<4I", data, i)
            v1 = (_rotl((v1 + lanes[0] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + lanes[1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + lanes[2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + lanes[3] * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + _u32le.unpack_from(data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


_HC: dict[bytes, int] = {}


def _lz4_hc(descriptor: bytes) -> int:
    # a frame's descriptor is one of a few: each hashed once
    got = _HC.get(descriptor)
    if got is None:
        got = (xxh32(descriptor) >> 8) & 0xFF
        if len(_HC) < 4096:
            _HC[descriptor] = got
    return got


# ---------------------------------------------------------------------------
# errors


def _corrupt(detail: str, codec: int, at) -> CorruptRecordError:
    return CorruptRecordError(detail, f"{CODEC_NAMES[codec]} records", at)


def _limit_error(codec: int, limit: int, at) -> CorruptRecordError:
    return RecordLimitError(f"decompressed size above the limit of {limit} bytes", f"{CODEC_NAMES[codec]} records",
                            at, limit="max_decompressed_size", value=limit, count=limit + 1)


def _too_small(exc: Exception) -> bool:
    msg = str(exc)
    return any(word in msg for word in _TOO_SMALL)


# ---------------------------------------------------------------------------
# compress


def compress(codec: int, data, magic: int = 2, level: int | None = None):
    """Compress a records section (v2) or an inner message set (v0/v1)."""
    if codec == GZIP:
        return cramjam.gzip.compress(data, level=level)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return _lz4_compress(data, magic, level)
    if codec == ZSTD:
        return cramjam.zstd.compress(data, level=level)
    raise ValueError(f"no compressor for codec {codec}")


def _xerial_compress(data) -> bytes:
    mv = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for i in range(0, len(mv), _XERIAL_BLOCK):
        block = cramjam.snappy.compress_raw(mv[i : i + _XERIAL_BLOCK])
        parts.append(_u32be.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_compress(data, magic: int, level: int | None) -> bytes:
    mv = memoryview(data).cast("B")
    descriptor = _LZ4_MAGIC + b"\x60\x40"  # version 01, independent blocks; 64 KiB blocks
    # Kafka before 0.10 hashed the frame magic into the header checksum.
    hc = _lz4_hc(descriptor if magic == 0 else descriptor[4:])
    parts = [descriptor, bytes((hc,))]
    kwargs = {} if level is None else {"mode": "high_compression", "compression": level}
    for i in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[i : i + _LZ4_BLOCK]
        block = cramjam.lz4.compress_block(chunk, store_size=False, **kwargs)
        if len(block) >= len(chunk):
            parts.append(_u32le.pack(len(chunk) | _LZ4_RAW))
            parts.append(chunk)
        else:
            parts.append(_u32le.pack(len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# ---------------------------------------------------------------------------
# decompress


def decompress(codec: int, data, magic: int, limit: int, at=None) -> memoryview:
    """Decompress ``data`` (any buffer) into a new buffer of at most ``limit`` bytes.

    ``at`` is the byte offset reported in errors.
    """
    if codec == GZIP:
        return _gzip_decompress(data, limit, at)
    if codec == SNAPPY:
        return _snappy_decompress(data, limit, at)
    if codec == LZ4:
        return _lz4_decompress(data, magic, limit, at)
    if codec == ZSTD:
        return _zstd_decompress(data, limit, at)
    raise _corrupt(f"unknown compression codec {codec}", NONE, at)


# A batch's codec call is paid per batch: small batches (a producer lingering
# a few milliseconds, a consumer's short fetches) make its fixed cost the
# cost.  gzip goes through ISA-L's (else zlib's) bounded inflate (cramjam's
# sets up its decoder for about 10x longer); zstd through python-zstandard with one
# decompression context per thread, reused (cramjam makes a context per call,
# about 25 us).


def _gzip_decompress(data, limit: int, at) -> memoryview:
    # ISA-L's (zlib's) inflate for what fits the size the trailer claims (as
    # believed by _bounded); a stream that would not (a forged trailer, several
    # members) goes the bounded way, whose buffer grows in steps of its own
    mv = memoryview(data).cast("B")
    n = mv.nbytes
    guess = min(max(min(_gzip_hint(mv), _MAX_RATIO[GZIP] * n), 4 * n, 1024) + 1, limit + 1)
    if guess > _INFLATE_MAX:
        # the inflate gathers its output in blocks and joins them: twice the size at the end
        return _bounded(cramjam.gzip.decompress_into, data, limit, _gzip_hint(data), GZIP, at)
    d = _inflate.decompressobj(31)
    try:
        out = d.decompress(mv, guess)
    except _inflate.error:
        out = None
    if out is None or not d.eof or d.unused_data or d.unconsumed_tail or len(out) > limit:
        return _bounded(cramjam.gzip.decompress_into, data, limit, _gzip_hint(data), GZIP, at)
    return memoryview(out)


# outputs up to this go through the inflate above: zlib's fixed cost per call is less than cramjam's (the small
# batches); ISA-L is also 2-3x cramjam's speed up to a megabyte (its output gathered in blocks and joined then)
_INFLATE_MAX = 128 << 10 if _inflate is zlib else 1 << 20
_ZSTD_LOCAL = threading.local()


def _zstd_decompress(data, limit: int, at) -> memoryview:
    if zstandard is None:
        return _bounded(cramjam.zstd.decompress_into, data, limit, _zstd_hint(data), ZSTD, at)
    dctx = getattr(_ZSTD_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _ZSTD_LOCAL.dctx = zstandard.ZstdDecompressor()
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise _corrupt(f"cannot decompress ({exc})", ZSTD, at) from None
    n = memoryview(data).nbytes
    if size > limit or size > _MAX_RATIO[ZSTD] * n:
        if size > _MAX_RATIO[ZSTD] * n:
            # a size no frame of this length can decompress to: the frame decides
            return _bounded(cramjam.zstd.decompress_into, data, limit, 0, ZSTD, at)
        raise _limit_error(ZSTD, limit, at)
    guess = max(64 * 1024, 4 * n) + 1
    while True:
        try:
            if size >= 0:
                out = dctx.decompress(data, allow_extra_data=False)
            else:
                out = dctx.decompress(data, max_output_size=min(guess, limit + 1), allow_extra_data=False)
        except zstandard.ZstdError as exc:
            text = str(exc)
            if size < 0 and "did not decompress full frame" in text and guess <= limit:
                guess *= 4
                continue
            if size < 0 and "did not decompress full frame" in text:
                raise _limit_error(ZSTD, limit, at) from None
            if "extra" in text:
                # more than one frame: the frame-by-frame decoder takes them all
                return _bounded(cramjam.zstd.decompress_into, data, limit, _zstd_hint(data), ZSTD, at)
            raise _corrupt(f"cannot decompress ({exc})", ZSTD, at) from None
        if len(out) > limit:
            raise _limit_error(ZSTD, limit, at)
        return memoryview(out)


def _bounded(fn, data, limit: int, hint: int, codec: int, at) -> memoryview:
    # Decompress into a fixed buffer; cramjam stops when it is full, so a
    # bomb costs at most `limit` bytes.  Too small → retry 4x larger.
    n = memoryview(data).nbytes
    size = max(min(hint, _MAX_RATIO[codec] * n), 64 * 1024, 4 * n) + 1
    while True:
        size = min(size, limit + 1)
        out = _empty(size)
        try:
            n = fn(data, out)
        except cramjam.DecompressionError as exc:
            if not _too_small(exc):
                raise _corrupt(f"cannot decompress ({exc})", codec, at) from None
            if size > limit:
                raise _limit_error(codec, limit, at) from None
            size *= 4
            continue
        if n > limit:
            raise _limit_error(codec, limit, at)
        return memoryview(out)[:n]


def _gzip_hint(data) -> int:
    # ISIZE, the last 4 bytes, is the size mod 2**32 of the last member.
    mv = memoryview(data).cast("B")
    return _u32le.unpack_from(mv, len(mv) - 4)[0] if len(mv) >= 18 else 0


def _zstd_hint(data) -> int:
    # Frame_Content_Size from the first frame header, when the writer set it.
    mv = memoryview(data).cast("B")
    if len(mv) < 6 or bytes(mv[:4]) != b"\x28\xb5\x2f\xfd":
        return 0
    fhd = mv[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or pos + width > len(mv):
        return 0
    value = int.from_bytes(mv[pos : pos + width], "little")
    return value + 256 if width == 2 else value


def _snappy_decompress(data, limit: int, at) -> memoryview:
    mv = memoryview(data).cast("B")
    if bytes(mv[:8]) == _XERIAL_MAGIC:
        if len(mv) < 16:
            raise _corrupt("xerial snappy header cut short", SNAPPY, at)
        chunks = []
        pos = 16
        total = 0
        while pos < len(mv):
            if pos + 4 > len(mv):
                raise _corrupt(f"xerial chunk length cut short at byte {pos}", SNAPPY, at)
            size = _u32be.unpack_from(mv, pos)[0]
            if size > len(mv) - pos - 4:
                raise _corrupt(f"xerial chunk of {size} bytes at byte {pos} runs past the end", SNAPPY, at)
            chunk = mv[pos + 4 : pos + 4 + size]
            total += _snappy_len(chunk, at)
            if total > limit:
                raise _limit_error(SNAPPY, limit, at)
            chunks.append(chunk)
            pos += 4 + size
    else:
        chunks = [mv]
        total = _snappy_len(mv, at)
        if total > limit:
            raise _limit_error(SNAPPY, limit, at)
    out = _empty(total)
    omv = memoryview(out)
    pos = 0
    for chunk in chunks:
        try:
            pos += cramjam.snappy.decompress_raw_into(chunk, omv[pos:])
        except cramjam.DecompressionError as exc:
            raise _corrupt(f"cannot decompress ({exc})", SNAPPY, at) from None
    return omv[:pos]


def _snappy_len(chunk, at) -> int:
    try:
        return cramjam.snappy.decompress_raw_len(chunk)
    except cramjam.DecompressionError as exc:
        raise _corrupt(f"cannot decompress ({exc})", SNAPPY, at) from None


def _lz4_decompress(data, magic: int, limit: int, at) -> memoryview:
    mv = memoryview(data).cast("B")
    n = len(mv)
    if n < 7 or bytes(mv[:4]) != _LZ4_MAGIC:
        raise _corrupt("not an LZ4 frame (bad magic)", LZ4, at)
    flg, bd = mv[4], mv[5]
    if flg >> 6 != 1:
        raise _corrupt(f"unsupported LZ4 frame version {flg >> 6}", LZ4, at)
    pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if pos >= n:
        raise _corrupt("LZ4 frame header cut short", LZ4, at)
    if magic != 0 and mv[pos] != _lz4_hc(bytes(mv[4:pos])):
        raise _corrupt("LZ4 frame header checksum mismatch", LZ4, at)
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
    if block_max is None:
        raise _corrupt(f"unsupported LZ4 block size id {(bd >> 4) & 7}", LZ4, at)
    if not flg & 0x20 or flg & 0x15:
        # Linked blocks, checksums or a dictionary: cramjam's frame decoder
        # handles (and checks) those; it wants a correct header checksum.
        if magic == 0:
            fixed = bytearray(mv)
            fixed[pos] = _lz4_hc(bytes(mv[4:pos]))
            mv = memoryview(bytes(fixed))
        return _bounded(cramjam.lz4.decompress_into, mv, limit, 0, LZ4, at)
    pos += 1
    # Independent blocks (what Kafka and librdkafka write): find them first,
    # so the output is sized before anything is decompressed.
    blocks = []
    bound = 0
    while True:
        if pos + 4 > n:
            raise _corrupt(f"LZ4 block size cut short at byte {pos}", LZ4, at)
        word = _u32le.unpack_from(mv, pos)[0]
        pos += 4
        if word == 0:
            break
        size = word & ~_LZ4_RAW
        if size > block_max:
            raise _corrupt(f"LZ4 block of {size} bytes above the frame's {block_max}", LZ4, at)
        if size > n - pos:
            raise _corrupt(f"LZ4 block of {size} bytes at byte {pos - 4} runs past the end", LZ4, at)
        raw = bool(word & _LZ4_RAW)
        # what this block can decompress to, at most (its share of the output buffer)
        most = size if raw else min(block_max, _MAX_RATIO[LZ4] * size)
        blocks.append((raw, mv[pos : pos + size], most))
        bound += most
        pos += size
    cap = min(bound, limit)
    out = _empty(cap)
    omv = memoryview(out)
    scratch = None
    pos = 0
    for raw, block, most in blocks:
        room = cap - pos
        if raw:
            if len(block) > room:
                raise _limit_error(LZ4, limit, at)
            omv[pos : pos + len(block)] = block
            pos += len(block)
            continue
        spill = room < most
        if spill:
            if scratch is None or len(scratch) < most:
                scratch = memoryview(_empty(most))
            target = scratch[:most]
        else:
            target = omv[pos : pos + most]
        try:
            got = cramjam.lz4.decompress_block_into(block, target, output_len=len(target))
        except cramjam.DecompressionError as exc:
            raise _corrupt(f"cannot decompress an LZ4 block ({exc})", LZ4, at) from None
        if spill:
            if got > room:
                raise _limit_error(LZ4, limit, at)
            omv[pos : pos + got] = scratch[:got]
        pos += got
    return omv[:pos]
