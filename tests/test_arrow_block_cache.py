"""The compiled Arrow layer's cache of large output blocks
(``kafkaproto/arrow/_columns.pyx``): blocks given back are kept by
power-of-two size for the next batch, eight of a size at most and up to a
cap in bytes, and a block that does not fit makes room by letting go of the
blocks given back longest ago.  The pure twin allocates through Python and
has no cache."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.compiled_only

MIB = 1 << 20


@pytest.fixture
def cache():
    from kafkaproto.arrow import _columns

    def blocks(*args):
        return _columns._cache_blocks(*args)

    old = blocks("max", 4 * MIB)
    try:
        yield blocks
    finally:
        blocks("max", old)


def test_a_block_given_back_is_the_next_one_handed_out(cache):
    a = cache("get", MIB - 5)  # rounded up to its size class
    cache("put", MIB, a)
    assert cache("kept")[1].get(MIB, 0) >= 1
    assert cache("get", MIB) == a
    cache("put", MIB, a)


def test_a_block_that_does_not_fit_lets_go_of_the_oldest_first(cache):
    ones = [cache("get", MIB) for _ in range(4)]
    for b in ones:  # given back in this order: ones[0] is the oldest
        cache("put", MIB, b)
    kept, sizes = cache("kept")
    assert kept == 4 * MIB and sizes == {MIB: 4}  # whatever was kept before is older still, and gone
    two = cache("get", 2 * MIB)
    cache("put", 2 * MIB, two)  # room for 2 MiB: the two oldest 1 MiB blocks go
    assert cache("kept") == (4 * MIB, {MIB: 2, 2 * MIB: 1})
    left = {cache("get", MIB), cache("get", MIB)}
    assert left == {ones[2], ones[3]}
    assert cache("get", 2 * MIB) == two
    for b in left:
        cache("put", MIB, b)
    cache("put", 2 * MIB, two)


def test_eight_blocks_of_a_size_at_most_the_oldest_let_go(cache):
    small = 1 << 16
    blocks = [cache("get", small) for _ in range(9)]
    for b in blocks:
        cache("put", small, b)
    assert cache("kept")[1][small] == 8
    again = {cache("get", small) for _ in range(8)}
    assert again == set(blocks[1:])
    for b in again:
        cache("put", small, b)


def test_a_block_larger_than_the_cap_is_not_kept(cache):
    before = cache("kept")
    big = cache("get", 8 * MIB)
    cache("put", 8 * MIB, big)
    assert cache("kept") == before
