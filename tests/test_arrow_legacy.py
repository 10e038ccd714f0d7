"""Legacy (magic 0/1) message sets in kafkaproto.arrow.records: the compiled
walker, the pure twin and the object decoder (kafkaproto.records.decode) give
the same rows, and the same error text for every damaged set: every magic and
codec, nested and odd wrappers, log-append time, null keys and values, a byte
changed at every position, a cut at every length, the decompression limit.
(The sets come from tests/support/legacy_sets.py; the compiled-only
comparisons with the twin are in tests/twins/test_arrow.py.)"""

import random

import pyarrow as pa
import pytest

import kafkaproto
from kafkaproto import arrow
from support.legacy_sets import (
    ALL,
    damaged_versions,
    inner_set,
    legacy_sets,
    message,
    objects_agree,
    small_sets,
    twins_agree,
    wrapper,
)


@pytest.mark.parametrize("seed", range(3))
def test_legacy_sets_agree_with_objects(seed):
    blobs = legacy_sets(random.Random(seed))
    for check_crc in (True, False):
        objects_agree(blobs, check_crc)
    out = arrow.records(pa.array(blobs, pa.large_binary()))
    assert out.column("error").null_count < len(out)  # the error cases are errors
    assert out.filter(out.column("error").is_null()).num_rows > 60


@pytest.mark.parametrize("check_crc", [True, False])
def test_every_damaged_byte_and_cut_agrees_with_objects(check_crc):
    for blob in small_sets():
        blobs = damaged_versions(blob)
        objects_agree(blobs, check_crc)


def test_decompression_limit_agrees_with_objects():
    rng = random.Random(9)
    blobs = [wrapper(9, magic, codec, inner_set(magic, 10, rng)) for magic in (0, 1) for codec in (1, 2, 3)]
    blobs.append(wrapper(1, 1, 1, message(0, 1, value=b"\x00" * 5000) + message(1, 1, value=b"\x00" * 5000)))
    for limit in (100, 200, 400, 9000, 10_000, 10_100):
        objects_agree(blobs, True, limit)
        if kafkaproto.COMPILED:
            twins_agree(blobs, True, limit, wants=(ALL,))
