"""Small strategies the world strategies share (`properties.worlds.strategies`, `model_strategies`,
`seq_strategies`, the aimed and wide worlds): bounded integers, permutations, index sets, mix sizes
and weighted booleans, each built once (cached by its bounds where it has any): building a strategy
on every draw costs more than the draw."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

SLOT_BUCKETS = (8, 16, 64, 256)
WIDE_SLOT_SPACE = 512  # slot ids of the wide worlds and of `strategies.in_wide_slot_space`


def slots_for(n: int) -> int:
    return next(b for b in SLOT_BUCKETS if b >= n)


@functools.lru_cache(maxsize=512)
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """`st.integers(lo, hi)`, built once per pair of bounds."""
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=64)
def permutations_of(n: int) -> st.SearchStrategy[list[int]]:
    return st.permutations(range(n))


@functools.lru_cache(maxsize=64)
def index_sets(n: int, min_size: int) -> st.SearchStrategy[frozenset[int]]:
    return st.frozensets(st.integers(0, n - 1), min_size=min_size, max_size=n)


@functools.lru_cache(maxsize=64)
def mix_sizes(lo: int, hi: int) -> st.SearchStrategy[int]:
    """A size in [lo, hi], from the upper half of it two times in three: Hypothesis draws the lower
    bound of a range often, and two groups of a cap of 2 need four batchable rows or more."""
    anywhere, upper = st.integers(lo, hi), st.integers(max(lo, (lo + hi + 1) // 2), hi)
    return st.sampled_from((False, True, True)).flatmap(lambda up: upper if up else anywhere)


def one_in(k: int) -> st.SearchStrategy[bool]:
    """True once in `k` draws; shrinks to False."""
    return st.integers(0, k - 1).map(lambda x: x == k - 1)


BOOLS = st.booleans()
ONE_IN_3, ONE_IN_4, ONE_IN_8 = one_in(3), one_in(4), one_in(8)
MOSTLY_ON = st.sampled_from((True, True, True, False))
TOKEN_SEEDS = st.integers(0, 2**16)


@functools.lru_cache(maxsize=8)
def dtypes(choices: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(choices)
