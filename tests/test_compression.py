"""gzip batches inflate the same through ISA-L (the dependency) and through
zlib (what runs where isal is missing): the same bytes, the same errors, the
same limit, on either side of the size where cramjam's bounded inflate takes
over."""

from __future__ import annotations

import gzip
import random
import sys
import zlib

import pytest

from kafkaproto.errors import CorruptRecordError, RecordLimitError
from kafkaproto.records import _compression as C

try:
    from isal import isal_zlib
except ImportError:  # a dependency, but for Python 3.13 (pyproject.toml says why)
    isal_zlib = None

INFLATES = {"zlib": (zlib, 128 << 10)} | ({"isal": (isal_zlib, 1 << 20)} if isal_zlib else {})


@pytest.fixture(params=sorted(INFLATES))
def inflate(request, monkeypatch):
    module, most = INFLATES[request.param]
    monkeypatch.setattr(C, "_inflate", module)
    monkeypatch.setattr(C, "_INFLATE_MAX", most)
    return request.param


def _text(n: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 8))) for _ in range(200)]
    return b" ".join(rng.choice(words) for _ in range(n // 4))[:n]


def test_the_dependency_is_the_inflate_in_use():
    if isal_zlib is None:
        assert sys.version_info[:2] == (3, 13), "isal is a dependency of the package"
        assert C._inflate is zlib and C._INFLATE_MAX == 128 << 10
    else:
        assert C._inflate is isal_zlib and C._INFLATE_MAX == 1 << 20


@pytest.mark.parametrize("size", [0, 1, 40_000, 300_000, 3_000_000])
def test_a_batch_inflates_to_its_bytes(inflate, size):
    raw = _text(size)
    got = C.decompress(C.GZIP, gzip.compress(raw), 2, C.DEFAULT_MAX_DECOMPRESSED_SIZE)
    assert isinstance(got, memoryview) and got.format == "B" and bytes(got) == raw


def test_several_members_inflate_to_all_their_bytes(inflate):
    a, b = _text(5000, 1), _text(7000, 2)
    got = C.decompress(C.GZIP, gzip.compress(a) + gzip.compress(b), 2, 1 << 20)
    assert bytes(got) == a + b


def test_a_forged_trailer_does_not_change_the_bytes(inflate):
    raw = _text(50_000)
    blob = bytearray(gzip.compress(raw))
    blob[-4:] = (7).to_bytes(4, "little")  # ISIZE claims 7 bytes
    with pytest.raises(CorruptRecordError, match="gzip records"):
        C.decompress(C.GZIP, bytes(blob), 2, 1 << 20, 40)


@pytest.mark.parametrize("damage", ["deflate", "crc", "cut"])
def test_a_damaged_batch_is_a_corrupt_record_error(inflate, damage):
    blob = bytearray(gzip.compress(_text(20_000)))
    if damage == "deflate":
        blob[12:40] = bytes(28)
    elif damage == "crc":
        blob[-8] ^= 0xFF
    else:
        blob = blob[: len(blob) // 2]
    with pytest.raises(CorruptRecordError, match="gzip records") as err:
        C.decompress(C.GZIP, bytes(blob), 2, 1 << 20, 123)
    assert err.value.offset == 123


@pytest.mark.parametrize("size", [100_000, 900_000])
def test_past_the_limit_is_a_limit_error(inflate, size):
    blob = gzip.compress(_text(size))
    with pytest.raises(RecordLimitError, match="above the limit of 50000 bytes"):
        C.decompress(C.GZIP, blob, 2, 50_000)
    assert bytes(C.decompress(C.GZIP, blob, 2, size)) == _text(size)
