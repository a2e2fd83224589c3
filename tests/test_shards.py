"""A property's examples split over pytest cases (`properties.shards`): together at least the
profile's count, each case its own examples, the same ones again under a derandomized profile."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import settings

from properties.config import RunConfig
from properties.generations import test_p9_generations as p9
from properties.shards import shard_examples, shard_ids, shard_seed, sharded

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(("shards", "total", "each"), [(3, 30, 11), (3, 100, 35), (2, 1, 2), (1, 7, 7), (4, 30, 9)])
def test_the_cases_run_at_least_the_profiles_count_of_different_examples(shards: int, total: int, each: int) -> None:
    assert shard_examples(shards, total) == each
    assert shards * each - (shards - 1) >= total, "the simplest example repeats in every case past the first"


def test_no_case_is_a_bad_shard_count() -> None:
    with pytest.raises(ValueError, match="shards must be at least 1, got 0"):
        shard_examples(0, 30)


def test_each_case_has_its_own_id_and_seed() -> None:
    assert shard_ids(3) == ["shard1of3", "shard2of3", "shard3of3"]
    assert len({shard_seed("P9 generations", k) for k in range(8)}) == 8
    assert shard_seed("P9 generations", 1) == shard_seed("P9 generations", 1)


SHARDED = """
import json, os
from hypothesis import given, strategies as st
from properties.shards import sharded

@sharded(2)
@given(x=st.integers(0, 10**12))
def test_values(shard, x):
    with open(os.environ["SEEN"], "a") as f:
        f.write(json.dumps([shard, x]) + "\\n")
"""


def _seen(pytester: pytest.Pytester, run: int) -> dict[int, list[int]]:
    path = pytester.path / f"seen{run}.jsonl"
    pytester.makepyfile(test_sharded=SHARDED)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEEN", str(path))
        result = pytester.runpytest_subprocess("-p", "properties.plugin", "--hypothesis-profile", "ci", "-q")
    result.assert_outcomes(passed=2)
    out: dict[int, list[int]] = {0: [], 1: []}
    for line in path.read_text().splitlines():
        shard, x = json.loads(line)
        out[shard].append(x)
    return out


def test_derandomized_cases_draw_apart_and_again_alike(pytester: pytest.Pytester) -> None:
    first, again = _seen(pytester, 1), _seen(pytester, 2)
    each = shard_examples(2, 100)  # the ci profile's 100
    assert [len(first[0]), len(first[1])] == [each, each]
    shared = set(first[0]) & set(first[1])
    assert shared == {0}, f"the two cases drew the same examples beyond the simplest: {sorted(shared)[:5]}"
    assert len(set(first[0]) | set(first[1])) >= 100, "together fewer different examples than the profile's"
    assert first == again, "a derandomized case drew other examples on a second run"


@pytest.fixture
def profile(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The loaded profile for the test, derandomized or not (`request.param`); then the previous one."""
    previous = settings.get_current_profile_name()
    name = f"shards-derandomize-{request.param}"
    settings.register_profile(name, derandomize=request.param, database=None)
    settings.load_profile(name)
    try:
        yield request.param
    finally:
        settings.load_profile(previous)


@pytest.mark.parametrize("profile", [True, False], indirect=True, ids=["derandomized", "random"])
def test_p9_cases_are_seeded_apart_only_under_a_derandomized_profile(profile: bool) -> None:
    seeds = [getattr(p9.machine(RunConfig(), k), "_hypothesis_internal_use_seed", None) for k in range(p9.SHARDS)]
    if profile:
        assert None not in seeds and len(set(seeds)) == p9.SHARDS, seeds
    else:  # each case draws its own random seed
        assert seeds == [None] * p9.SHARDS


def test_a_nightly_round_gives_each_case_its_part_of_the_planned_examples() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from nightly.plugin import Slot, share_test

    @sharded(2)
    @given(x=st.integers())
    def prop(shard: int, x: int) -> None:
        pass

    marker = next(m for m in prop.pytestmark if m.name == "shards")  # type: ignore[attr-defined]
    assert share_test(prop, 10, Slot(), "m.py::prop[shard1of2]", marker.args[0])
    assert prop._hypothesis_internal_use_settings.max_examples == shard_examples(2, 10) == 6  # type: ignore[attr-defined]
