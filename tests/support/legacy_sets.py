"""Legacy (magic 0/1) message sets for the Arrow records tests: valid and
invalid sets of every shape the walker distinguishes, damaged copies, and the
two comparisons (compiled walker vs pure twin, Arrow rows vs the object
decoder kafkaproto.records.decode).  Used by tests/test_arrow_legacy.py and
tests/twins/test_arrow.py."""

import random
import struct
import zlib

import cramjam
import numpy as np
import pyarrow as pa

from kafkaproto import arrow
from kafkaproto import records as R
from kafkaproto.errors import KafkaProtocolError
from kafkaproto.records import _compression

from .arrow_expected import US_LIMIT_MS, as_rows
from .twins import compiled_impl, plain_tree, plain_walk, pure_impl

C, P = compiled_impl(), pure_impl()

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
T0 = 1_700_000_000_000
ALL = [1] * 7


def message(offset, magic, attrs=0, ts=T0, key=b"k", value=b"v", crc=None):
    """One legacy message, CRC computed unless given."""
    body = bytes((magic, attrs & 0xFF))
    if magic == 1:
        body += struct.pack(">q", ts)
    for blob in (key, value):
        body += b"\xff\xff\xff\xff" if blob is None else struct.pack(">i", len(blob)) + blob
    if crc is None:
        crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def wrapper(offset, magic, codec, inner, attrs=0, ts=T0, raw_snappy=False):
    """A compressed message holding the message set ``inner``."""
    if raw_snappy:
        value = cramjam.snappy.compress_raw(inner)
    else:
        value = _compression.compress(codec, inner, magic)
    return message(offset, magic, codec | attrs, ts, None, bytes(value))


def inner_set(magic, n, rng, relative=True, first=0):
    out = b""
    for i in range(n):
        key = None if rng.random() < 0.25 else bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6)))
        value = None if rng.random() < 0.2 else b"v%d" % i * rng.randint(0, 3)
        out += message((i if relative else first + i), magic, rng.choice([0, 0, 0x08, 0x10]), T0 + i, key, value)
    return out


def legacy_sets(rng):
    """Valid and invalid legacy sets of every shape the walker distinguishes."""
    out = []
    for magic in (0, 1):
        for _name, codec in CODECS.items():
            for attrs in (0, 0x08):  # log-append time (magic 0 ignores the bit)
                n = rng.randint(1, 5)
                if codec == 0:
                    out.append(b"".join(message(40 + i, magic, attrs, T0 + i, *kv)
                                        for i, kv in enumerate([(b"a", b"b"), (None, b"x"), (b"k", None),
                                                                (None, None), (b"", b"")][:n])))
                    continue
                inner = inner_set(magic, n, rng, relative=magic == 1, first=100)
                last = (n - 1) if magic == 1 else 100 + n - 1
                out.append(wrapper(1000 + last if magic == 1 else last, magic, codec, inner, attrs, T0 + 77))
        # librdkafka's raw snappy block, no xerial framing
        out.append(wrapper(9 if magic else 2, magic, 2, inner_set(magic, 3, rng, relative=magic == 1),
                           raw_snappy=True))
        # a wrapper followed by plain messages and another wrapper, in one blob
        out.append(wrapper(3, magic, 1, inner_set(magic, 4, rng)) + message(4, magic)
                   + wrapper(7, magic, 3, inner_set(magic, 2, rng)))
        # and a partial message at the end (a Fetch response's cut)
        full = message(10, magic, key=b"x" * 30)
        out.append(message(9, magic) + full[:20])
    # magic 1 wrapper offset 0: inner offsets taken as they are
    out.append(wrapper(0, 1, 1, inner_set(1, 3, rng, relative=False, first=500)))
    # offsets that wrap around int64, as Java's long arithmetic does
    out.append(wrapper(2**63 - 1, 1, 2, message(-2**63, 1) + message(-1, 1)))
    out.append(wrapper(5, 1, 2, message(-7, 1) + message(-3, 1)))
    # timestamps beyond int64 microseconds: null
    out.append(message(1, 1, ts=2**63 - 1) + message(2, 1, ts=-2**63) + message(3, 1, ts=-1))
    out.append(wrapper(4, 1, 1, message(0, 1, ts=2**62), attrs=0x08, ts=-(2**62)))
    # attribute bits that do not matter, a negative attributes byte
    out.append(message(1, 0, 0x88) + message(2, 1, 0x80) + message(3, 1, 0xF8))
    # --- errors
    out.append(wrapper(2, 1, 1, message(0, 1) + wrapper(1, 1, 1, message(0, 1))))  # nested wrapper
    out.append(wrapper(2, 1, 2, message(0, 1) + message(1, 0)))  # inner magic differs
    out.append(wrapper(2, 0, 2, message(0, 0) + message(1, 1)))
    out.append(wrapper(0, 1, 3, b""))  # no inner messages
    out.append(wrapper(1, 1, 1, message(0, 1) + message(5, 1)))  # wrapper offset below the last inner
    out.append(wrapper(4, 1, 1, message(0, 1) + message(5, 1)))
    out.append(wrapper(5, 1, 1, message(0, 1) + message(5, 1)))  # (at the last inner offset: fine)
    out.append(wrapper(1, 1, 1, message(0, 1) + b"\x00" * 11))  # inner message cut short
    out.append(wrapper(1, 1, 1, message(0, 1) + message(1, 1)[:-1]))
    out.append(wrapper(1, 1, 1, message(0, 1) + struct.pack(">qi", 1, 13) + b"\x00" * 13))  # below the minimum
    out.append(wrapper(1, 1, 1, message(0, 1) + message(1, 2)))  # unknown inner magic
    out.append(wrapper(1, 1, 1, message(0, 1, crc=5)))  # inner CRC
    out.append(message(1, 1, 0x04, value=b"zstd"))  # zstd not allowed
    out.append(message(1, 1, 0x05))
    out.append(message(1, 1, 0x07))
    out.append(message(1, 0, 0x01, value=None))  # compressed, null value
    out.append(message(1, 1, 0x02, value=b"not snappy"))
    out.append(message(1, 1, 0x03, value=b"not lz4"))
    out.append(message(1, 0, 0x01, value=b"not gzip"))
    out.append(message(1, 1, crc=0))  # CRC
    out.append(message(1, 1, key=b"k")[:-1])  # a partial message only: no rows, no error
    good = message(1, 1, key=b"abc", value=b"defg")
    for size in (14, 21, 22, 25):  # sizes below / at the minimum, lengths that overrun
        b = bytearray(good)
        b[8:12] = struct.pack(">i", size)
        out.append(bytes(b[:12 + size]))
    out.append(message(1, 0, key=b"ab", value=None)[:-4] + b"\xff\xff")  # value length cut
    b = bytearray(message(1, 1))
    b[16] = 2  # magic 2 with a legacy size
    out.append(bytes(b))
    return out


def damaged_versions(blob):
    """The blob with each byte changed (three ways) and cut at every length."""
    out = []
    for i in range(len(blob)):
        for x in (0x01, 0x80, 0xFF):
            b = bytearray(blob)
            b[i] ^= x
            out.append(bytes(b))
    out += [blob[:cut] for cut in range(len(blob))]
    return out


def twins_agree(blobs, check_crc, limit=1 << 26, wants=(ALL, [0, 0, 1, 1, 0, 0, 1], [1, 0, 0, 0, 1, 1, 1])):
    arr = pa.array(blobs, pa.large_binary())
    for want in wants:
        sa, ta, ea, wa = C.arrow_records(arr, 1, check_crc, limit, want, True)
        sb, tb, eb, wb = P.arrow_records(arr, 1, check_crc, limit, want, True)
        bad = np.flatnonzero(sa != sb)
        assert not len(bad), [blobs[i].hex() for i in bad[:3]]
        assert ea == eb, [(i, ea.get(i), eb.get(i)) for i in set(ea) | set(eb) if ea.get(i) != eb.get(i)][:3]
        assert plain_walk(wa) == plain_walk(wb)
        assert plain_tree(ta) == plain_tree(tb)
        # stopping at the first bad batch of each blob, control records kept
        sa, ta, ea, wa = C.arrow_records(arr, 1, check_crc, limit, want, True, partial=True, control=True)
        sb, tb, eb, wb = P.arrow_records(arr, 1, check_crc, limit, want, True, partial=True, control=True)
        assert not sa.any() and not sb.any() and ea == eb == {}
        assert plain_walk(wa) == plain_walk(wb)
        assert plain_tree(ta) == plain_tree(tb)


def objects_agree(blobs, check_crc, limit=1 << 26):
    out = arrow.records(pa.array(blobs, pa.large_binary()), check_crc=check_crc, max_decompressed_size=limit)
    assert as_rows(out) == expected(blobs, check_crc, limit)


def expected(blobs, check_crc, limit):
    """The rows kafkaproto.records.decode gives (one error row for a blob it rejects)."""
    rows = []
    for i, blob in enumerate(blobs):
        base = {"topic": None, "partition": None, "row": i}
        try:
            recs = [r for b in R.decode(blob, check_crc=check_crc, max_decompressed_size=limit) for r in b.records]
        except KafkaProtocolError as exc:
            rows.append(dict(base, key=None, value=None, offset=None, timestamp=None, timestampType=None,
                             headers=None, error=str(exc)))
            continue
        for r in recs:
            assert r.control is None and not r.headers
            ts = r.timestamp * 1000 if abs(r.timestamp) <= US_LIMIT_MS else None
            rows.append(dict(base, key=r.key, value=r.value, offset=r.offset, timestamp=ts,
                             timestampType=r.timestamp_type, headers=None, error=None))
    return rows


def small_sets():
    rng = random.Random("small")
    out = [message(5, 0, key=None, value=b"abc") + message(6, 0, key=b"k", value=None),
           message(5, 1, 0x08, key=b"", value=b"xy")]
    for magic in (0, 1):
        for _name, codec in CODECS.items():
            if codec:
                out.append(wrapper(2 if magic else 1, magic, codec, inner_set(magic, 2, rng, relative=magic == 1),
                                   0x08 if magic else 0))
    out.append(wrapper(1, 1, 2, inner_set(1, 2, rng), raw_snappy=True))
    return out


def refix_crcs(blob):
    """Recompute the CRC of every top-level message whose framing still holds."""
    b = bytearray(blob)
    pos = 0
    while pos + 12 <= len(b):
        size = struct.unpack_from(">i", b, pos + 8)[0]
        if size < 4 or pos + 12 + size > len(b):
            break
        struct.pack_into(">I", b, pos + 12, zlib.crc32(b[pos + 16:pos + 12 + size]))
        pos += 12 + size
    return bytes(b)
