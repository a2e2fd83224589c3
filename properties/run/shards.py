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
property before it was split (`properties.run.shard_budget`). Together the cases run at least the loaded
profile's count of different examples (`shard_examples`): under a random profile each case draws
its own seed; under a derandomized one (`ci`, `mutants`) each case has its own seed too (the case's
node id for a `@given` test, which Hypothesis's pytest plugin adds to its digest; `shard_seed` for a
state machine). Under a given seed each case draws its own stream too, the same again for the same
seed (`start_case`): the nightly's, which it derives for each worker and case (`GIVEN_SEED`), or
`--hypothesis-seed`, which Hypothesis alone would give every case alike; a case's seed is a hash of
the given one and its node id (`case_seed`; `shard_seed` for a state machine).

This is the one way the suite spreads a property's examples: over its cases here, and over the
workers of a nightly round (`nightly.plugin`, where every worker runs every case on its `share` of
the case's examples, seeded by `case_seed` of the worker's own given seed)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest
from hypothesis import is_hypothesis_test, seed, settings

from properties.hypothesis_internals import seed_keeping_database

F = TypeVar("F", bound=Callable[..., object])
CASE_ID = re.compile(r"^(?P<prop>.+)\[shard\d+of\d+\]$")  # a case's node id (`shard_ids`)


def share(total: int, index: int, count: int) -> int:
    """Part `index` of `total` examples dealt over `count` parts (cases or workers): the parts
    differ by at most one and add up to `total`. An index past the count (a worker xdist starts in
    place of a crashed one) takes the part its index wraps to."""
    k = index % count
    return total // count + (1 if k < total % count else 0)


def shard_examples(shards: int, total: int | None = None) -> int:
    """Examples per case so that `shards` cases run at least `total` (default: the loaded profile's
    `max_examples`) different examples together: the largest `share`, and one more past the first
    case, as Hypothesis begins every case with the simplest example (every choice its least)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    total = settings().max_examples if total is None else total
    return share(total, 0, shards) + (1 if shards > 1 else 0)


def shard_ids(shards: int) -> list[str]:
    """The cases' ids: `shard1of3`, ..."""
    return [f"shard{k + 1}of{shards}" for k in range(shards)]


def property_of(nodeid: str) -> str | None:
    """The property a case's node id belongs to (the id without its case), None for any other."""
    m = CASE_ID.match(nodeid)
    return m.group("prop") if m else None


def property_id(nodeid: str) -> str:
    """The property test `nodeid` runs: a case's property (`property_of`), else the test itself."""
    return property_of(nodeid) or nodeid


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


def _hash64(text: str) -> int:
    """A 64-bit hash of `text`, the same in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def shard_seed(name: str, shard: int, given: object = None) -> int:
    """The seed of case `shard` of the test `name` split by hand (a state machine): under a
    derandomized profile (`given` None) fixed, under a given seed derived from it; different for
    every case, the same again for the same seed."""
    return _hash64(f"{name} {shard}" if given is None else f"{given}/{name} {shard}")


def case_seed(given: object, nodeid: str) -> int:
    """The seed of case `nodeid` under the given seed `given`: a 64-bit hash of both, so one given
    seed gives every case its own stream, and the same streams again."""
    return _hash64(f"{given}/{nodeid}")


GIVEN_SEED = pytest.StashKey[int]()
"""A seed a runner gives one case, in the item's stash (the nightly's seed of a case on a worker,
`nightly.plugin`): `start_case` seeds a `@given` test with it; a state machine split by hand
derives its cases' seeds from it (`running_seed`)."""


@dataclass(slots=True)
class Running:
    """The seed given to the case running now (None: none was given)."""

    seed: object = None


RUNNING = Running()


def given_seed(item: pytest.Item) -> object:
    """The seed given to case `item`: a runner's (`GIVEN_SEED`), else `--hypothesis-seed`'s unless
    the loaded profile is derandomized (Hypothesis puts `derandomize` before that option), else None
    (Hypothesis's own: a random seed, or the derandomized digest)."""
    if GIVEN_SEED in item.stash:
        return item.stash[GIVEN_SEED]
    option = item.config.getoption("hypothesis_seed", None)
    return None if option is None or settings().derandomize else option


def running_seed() -> object:
    """The seed given to the case running now (`start_case`); None where none was given."""
    return RUNNING.seed


def start_case(item: pytest.Item) -> None:
    """Before case `item` runs (the suite plugin's `pytest_runtest_call`): note its given seed for
    `running_seed`, and seed a `@given` test from it. A runner's seed of the case (`GIVEN_SEED`)
    seeds it as it is, keeping the example database the runner's workers share. Under
    `--hypothesis-seed` a split `@given` case (marked `shards`) takes a seed of its own,
    `case_seed(given, node id)`, through `hypothesis.seed` (which turns the database off, as that
    option does); tests that are not split keep Hypothesis's own use of the option."""
    given = RUNNING.seed = given_seed(item)
    fn = getattr(item, "obj", None)
    fn = getattr(fn, "__func__", fn)
    if given is None or not is_hypothesis_test(fn):
        return
    if GIVEN_SEED in item.stash:
        seed_keeping_database(fn, item.stash[GIVEN_SEED])
    elif item.get_closest_marker("shards") is not None:
        seed(case_seed(given, item.nodeid))(fn)
