"""One property's examples split over several pytest cases, so that pytest-xdist runs them on several
workers at once. The job takes as long as its longest test, and a test's examples run one after
another in one process: a property whose examples take most of the job would hold it up while the
other workers idle, and more so when xdist queues it behind another long one.

Which are split: every property whose examples are side-by-side runs of mixes up to 64, so that a
case takes about 5-15 s in the main job on one GPU (16 workers; `docs/benchmarks.md`), where a
worker holds a test queued behind the one it runs and the last long tests handed out set the job's
end. By their weight: P9 (a whole generation an example) over six cases; P6's two tests (three runs
an example) over four; P5's D4 and D1 tests, P4's argmax-path faults and P2's gate corner over
three; the other properties of mixed worlds over two. The tests of few examples (P1's wide worlds,
P7's fresh processes) are not split.

The near-tie budget of fast numerics holds over a property's cases together, as it held over the
property before it was split (`properties.shard_budget`). Together the cases run at least the loaded
profile's count of different examples (`shard_examples`): under a random profile each case draws
its own seed; under a derandomized one (`ci`, `mutants`) each case has its own seed too (the case's
node id for a `@given` test, which Hypothesis's pytest plugin adds to its digest; `shard_seed` for a
state machine)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

import pytest
from hypothesis import settings

F = TypeVar("F", bound=Callable[..., object])


def shard_examples(shards: int, total: int | None = None) -> int:
    """Examples per case so that `shards` cases run at least `total` (default: the loaded profile's
    `max_examples`) different examples together. Hypothesis begins every case with the simplest
    example (every choice its least), the same in each case, so each case past the first runs one
    more."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    total = settings().max_examples if total is None else total
    return -(-total // shards) + (1 if shards > 1 else 0)


def shard_ids(shards: int) -> list[str]:
    """The cases' ids: `shard1of3`, ..."""
    return [f"shard{k + 1}of{shards}" for k in range(shards)]


def sharded(shards: int) -> Callable[[F], F]:
    """Decorate a `@given` test (placed above `@given`, with no `@settings` of its own): `shards`
    pytest cases with the parameter `shard` (0-based), each running `shard_examples(shards)`
    examples of the loaded profile, marked `shards(n)` so that a runner that plans a property's
    examples (the nightly's rounds) gives each case its share."""

    def wrap(test: F) -> F:
        with_count = settings(max_examples=shard_examples(shards))(test)
        cases = pytest.mark.parametrize("shard", range(shards), ids=shard_ids(shards))(with_count)
        return pytest.mark.shards(shards)(cases)  # for a runner that plans the property's examples

    return wrap


def shard_seed(name: str, shard: int) -> int:
    """The seed of case `shard` of the test `name` under a derandomized profile: fixed, and
    different for every case."""
    return int.from_bytes(hashlib.sha256(f"{name} {shard}".encode()).digest()[:8], "big")
