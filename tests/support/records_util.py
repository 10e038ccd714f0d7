"""Helpers shared by the record-batch tests: records and batches as plain
data, CRC fix-ups, and blobs of every format and codec (valid and damaged)."""

import struct

import crc32c

from kafkaproto import records as R

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def rec_tuple(r):
    """A record as plain data (memoryviews → bytes) for comparisons."""
    def plain(v):
        return None if v is None else bytes(v)

    return (r.offset, r.timestamp, r.timestamp_type, r.attributes, plain(r.key), plain(r.value),
            [(k, plain(v)) for k, v in r.headers], r.control)


def batch_tuple(b):
    if b.truncated:
        return ("truncated", b.offset, b.available, b.size, b.base_offset)
    return ("batch", b.header(), [rec_tuple(r) for r in b.records])


def decode_plain(mod, blob, **kw):
    """Decode with an implementation module (_codec or _records_py) → plain data."""
    kw.setdefault("check_crc", True)
    kw.setdefault("max_decompressed_size", 64 << 20)
    kw.setdefault("copy", True)
    return [batch_tuple(b) for b in mod.decode_record_batches(blob, kw["check_crc"], kw["max_decompressed_size"],
                                                                kw["copy"])]


def fix_crc(blob: bytearray, at: int = 0) -> bytearray:
    """Recompute the CRC32C of the v2 batch at ``at`` (after editing it)."""
    size = struct.unpack_from(">i", blob, at + 8)[0]
    struct.pack_into(">I", blob, at + 17, crc32c.crc32c(bytes(blob[at + 21 : at + 12 + size])))
    return blob


def some_records(rng, n):
    out = []
    for i in range(n):
        key = None if rng.random() < 0.2 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))
        value = None if rng.random() < 0.1 else b"value-%d " % i * rng.randint(0, 4)
        headers = [("dup", b"a"), ("dup", None), ("é", b"")][: rng.randint(0, 3)]
        out.append((key, value, headers, T0 + rng.randint(-5, 5000)))
    return out


def blobs_for(rng):
    """Blobs of every kind: v2 in every codec (several batches, log-append time,
    control markers), legacy v0/v1, a partial batch at the end, an empty blob."""
    out = []
    for codec in CODECS:
        b1 = R.encode(some_records(rng, rng.randint(1, 6)), codec=codec, base_offset=rng.randint(0, 10**12))
        b2 = R.encode(some_records(rng, 3), codec=codec, timestamp_type=1, max_timestamp=T0 + 99, base_offset=7)
        out += [b1, b1 + b2, b1 + b2[: rng.randint(1, len(b2) - 1)]]
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            out.append(R.encode([(k, v, None, ts) for k, v, _, ts in some_records(rng, 3)], magic=magic, codec=codec,
                                base_offset=40))
    marker = R.encode([R.control_record(R.ControlType.COMMIT, 5)], control=True, transactional=True,
                      producer_id=9, base_offset=100)
    data = R.encode(some_records(rng, 2), transactional=True, producer_id=9, base_offset=98)
    out += [data + marker, b""]
    return out


def damaged(blobs, rng):
    out = []
    for b in blobs:
        if len(b) < 20:
            continue
        x = bytearray(b)
        x[rng.randrange(len(x))] ^= 1 << rng.randrange(8)
        out.append(bytes(x))
    return out + [b"\x00" * 12 + b"\x00\x00\x00\x05", None, b"\x00" * 16 + b"\x07" + b"\x00" * 60]


def raw_v2_batch(body: bytes, count: int, codec: str = "none", base_offset: int = 0) -> bytes:
    """A v2 batch around an already-written records region ``body`` (compressed
    here with ``codec``) declaring ``count`` records, with a valid CRC: what a
    hostile producer can send whatever its records hold."""
    from kafkaproto.records import _compression
    from kafkaproto.records._common import V2_HEADER_STRUCT, codec_number

    c = codec_number(codec)
    packed = bytes(_compression.compress(c, body, 2, None)) if c else bytes(body)
    head = V2_HEADER_STRUCT.pack(base_offset, 49 + len(packed), -1, 2, 0, c, max(count - 1, 0), T0, T0, -1, -1, -1,
                                 count)
    return bytes(fix_crc(bytearray(head + packed)))


#: the smallest v2 record: length 6, attributes, timestamp and offset deltas 0,
#: null key and value, no headers (7 bytes)
EMPTY_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"


def many_records(n: int, codec: str) -> bytes:
    """A batch of ``n`` empty 7-byte records (a records amplification bomb when n is large)."""
    return raw_v2_batch(EMPTY_RECORD * n, n, codec)


def many_headers(n: int, codec: str, records: int = 1) -> bytes:
    """A batch of ``records`` records each carrying ``n`` empty headers (key "",
    null value: 2 bytes each)."""
    def varint(v):
        u = (v << 1) ^ (v >> 63)
        out = bytearray()
        while u >= 0x80:
            out.append((u & 0x7F) | 0x80)
            u >>= 7
        out.append(u)
        return bytes(out)

    fields = b"\x00\x00\x00\x01\x01" + varint(n) + b"\x00\x01" * n
    return raw_v2_batch((varint(len(fields)) + fields) * records, records, codec)
