"""A property's examples split over pytest cases (`properties.run.shards`): together at least the
profile's count, each case its own examples (under a derandomized profile, the nightly's run seed and
`--hypothesis-seed`), the same ones again for the same seed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nightly.rounds import Plan
from properties.config import RunConfig
from properties.generations import test_p9_generations as p9
from properties.hypothesis_internals import own_settings, seed_of
from properties.run import shards
from properties.run.shards import (
    GIVEN_SEED,
    case_seed,
    property_id,
    property_of,
    shard_examples,
    shard_ids,
    shard_seed,
    sharded,
    start_case,
)

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("shards", "total", "each"), [(3, 30, 11), (3, 100, 35), (2, 1, 2), (1, 7, 7), (4, 30, 9)])
def test_the_cases_run_at_least_the_profiles_count_of_different_examples(shards: int, total: int, each: int) -> None:
    assert shard_examples(shards, total) == each
    assert shards * each - (shards - 1) >= total, "the simplest example repeats in every case past the first"


def test_no_case_is_a_bad_shard_count() -> None:
    with pytest.raises(ValueError, match="shards must be at least 1, got 0"):
        shard_examples(0, 30)


def test_each_case_has_its_own_id_and_seed() -> None:
    assert shard_ids(3) == ["shard1of3", "shard2of3", "shard3of3"]
    assert len({shard_seed("P9 generations", k, given) for k in range(8) for given in (None, 1, 2)}) == 24
    assert shard_seed("P9 generations", 1) == shard_seed("P9 generations", 1)
    assert shard_seed("P9 generations", 1, 5) == shard_seed("P9 generations", 1, "5"), "an option's text or int"
    assert len({case_seed(given, f"m.py::t[{k}]") for k in shard_ids(4) for given in (1, 2)}) == 8
    assert case_seed("1234", "m.py::t") == case_seed(1234, "m.py::t")


def test_a_cases_node_id_names_its_property() -> None:
    assert [property_of(f"m.py::t[{k}]") for k in shard_ids(2)] == ["m.py::t", "m.py::t"]
    assert property_of("m.py::t[cpu]") is None and property_of("m.py::t") is None
    assert property_id("m.py::t[shard2of3]") == "m.py::t" and property_id("m.py::t[cpu]") == "m.py::t[cpu]"


SHARDED = """
import json, os
from hypothesis import given, strategies as st
from properties.run.shards import sharded

@sharded(3)
@given(x=st.binary(min_size=16, max_size=16))
def test_values(shard, x):
    with open(os.environ["SEEN"], "a") as f:
        f.write(json.dumps([shard, x.hex()]) + "\\n")
"""
# Bytes, not small integers: Hypothesis favours small and boundary values, which two streams of their
# own share at times; two streams of 16 random bytes share only the simplest, which every case begins with.
SIMPLEST = "00" * 16
NIGHTLY = ["-p", "nightly.plugin", "--hypothesis-profile", "nightly", "--nightly-seed", "{seed}", "--nightly-plan"]
RUNS = {  # how the toy property runs: pytest's arguments ("{seed}", "{plan}" filled in), and its examples in all
    "nightly": ([*NIGHTLY, "{plan}"], 30),  # a nightly round of one worker, its plan 30 examples of the property
    "hypothesis-seed": (["--hypothesis-profile", "dev", "--hypothesis-seed", "{seed}"], 30),  # dev's 30
    "ci": (["--hypothesis-profile", "ci"], 100),  # derandomized, its 100
}


def _seen(pytester: pytest.Pytester, mode: str, seed: int, run: int) -> dict[int, list[str]]:
    """The examples each case of the toy `@sharded(3)` property drew, run as `RUNS[mode]` says."""
    path, plan = pytester.path / f"seen-{mode}-{run}.jsonl", pytester.path / "plan.json"
    plan.write_text(Plan(default=RUNS[mode][1]).to_json())
    pytester.makepyfile(test_sharded=SHARDED)
    args = [a.format(seed=seed, plan=plan) for a in RUNS[mode][0]]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEEN", str(path))
        mp.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))  # `nightly`
        result = pytester.runpytest_subprocess("-p", "properties.run.plugin", *args, "-q")
    result.assert_outcomes(passed=3)
    out: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for line in path.read_text().splitlines():
        shard, x = json.loads(line)
        out[shard].append(x)
    return out


@pytest.mark.parametrize("mode", sorted(RUNS))
def test_each_case_draws_its_own_examples_and_the_same_again_under_the_same_seed(
    pytester: pytest.Pytester, mode: str
) -> None:
    total = RUNS[mode][1]
    first, again = _seen(pytester, mode, 1234, 1), _seen(pytester, mode, 1234, 2)
    assert [len(first[k]) for k in range(3)] == [shard_examples(3, total)] * 3
    for a, b in combinations(range(3), 2):
        shared = set(first[a]) & set(first[b])
        assert shared <= {SIMPLEST}, f"{mode}: cases {a} and {b} drew {len(shared)} same examples beyond the simplest"
    assert len(set().union(*first.values())) >= total, "together fewer different examples than the profile's"
    assert first == again, f"{mode}: a case drew other examples on a second run with the same seed"


def _item(nodeid: str, fn: object, option: str | None = None, **stash: int) -> SimpleNamespace:
    """A pytest item of test `fn` (its `shards` marker, if any), run with `--hypothesis-seed option`."""
    marks = getattr(fn, "pytestmark", [])
    return SimpleNamespace(
        nodeid=nodeid,
        obj=fn,
        stash={GIVEN_SEED: stash["given"]} if "given" in stash else {},
        config=SimpleNamespace(getoption=lambda name, default=None: option if name == "hypothesis_seed" else default),
        get_closest_marker=lambda name: next((m for m in marks if m.name == name), None),
    )


def _drawn(item: SimpleNamespace, shard: int) -> list[bytes]:
    """The examples the case `item` (`shard`) draws after `start_case`."""
    start_case(item)  # type: ignore[arg-type]
    out: list[bytes] = []
    item.obj(shard=shard, out=out)
    return out


def test_under_hypothesis_seed_each_case_of_a_split_property_and_only_those_take_a_seed_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shards, "RUNNING", shards.Running())
    settings.register_profile("shards-random", max_examples=6, database=None, derandomize=False)
    settings.register_profile("shards-derandomized", max_examples=6, database=None, derandomize=True)
    previous = settings.get_current_profile_name()
    settings.load_profile("shards-random")
    try:

        @sharded(2)
        @given(x=st.binary(min_size=16, max_size=16))
        def prop(shard: int, x: bytes, out: list[bytes]) -> None:
            out.append(x)

        cases = [_item(f"m.py::prop[{k}]", prop, "1234") for k in shard_ids(2)]
        one, two = _drawn(cases[0], 0), _drawn(cases[1], 1)
        assert set(one) & set(two) <= {bytes(16)}, "two cases of one given seed drew the same examples"
        assert one == _drawn(cases[0], 0) and shards.running_seed() == "1234", "the same seed, the same examples"
        assert one != _drawn(_item(cases[0].nodeid, prop, "99"), 0), "another seed, other examples"
        plain = _item("m.py::plain", given(st.integers())(lambda x: None), "1234")
        start_case(plain)  # type: ignore[arg-type]
        assert seed_of(plain.obj) is None, "a test not split keeps Hypothesis's own"
        start_case(_item("m.py::p9[shard1of6]", lambda: None, "1234", given=7))  # type: ignore[arg-type]
        assert shards.running_seed() == 7, "a runner's seed of the case comes first"
        settings.load_profile("shards-derandomized")
        start_case(_item(cases[0].nodeid, prop, "1234"))  # type: ignore[arg-type]
        assert shards.running_seed() is None, "Hypothesis puts derandomize before --hypothesis-seed"
    finally:
        settings.load_profile(previous)


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


def _p9_seeds(given: object, monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The seeds of P9's cases under the seed `given` to the case running now (None: none)."""
    monkeypatch.setattr(shards, "RUNNING", shards.Running(given))
    return [seed_of(p9.machine(RunConfig(), k)) for k in range(p9.SHARDS)]


@pytest.mark.parametrize("profile", [True, False], indirect=True, ids=["derandomized", "random"])
def test_p9_cases_are_seeded_apart_under_a_derandomized_profile_or_a_given_seed(
    profile: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = _p9_seeds(None, monkeypatch)
    if profile:
        assert None not in seeds and len(set(seeds)) == p9.SHARDS, seeds
    else:  # each case draws its own random seed
        assert seeds == [None] * p9.SHARDS
    given = _p9_seeds(1234, monkeypatch)
    assert None not in given and len(set(given)) == p9.SHARDS, f"a given seed's cases draw alike: {given}"
    assert given == _p9_seeds(1234, monkeypatch), "the same given seed, the same seeds"
    assert not set(given) & set(_p9_seeds(99, monkeypatch)), "another given seed, other seeds"


def test_a_nightly_round_gives_each_case_its_part_of_the_planned_examples() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from nightly.plugin import Slot, share_test

    @sharded(2)
    @given(x=st.integers())
    def prop(shard: int, x: int) -> None:
        pass

    marker = next(m for m in prop.pytestmark if m.name == "shards")  # type: ignore[attr-defined]
    assert share_test(prop, 10, Slot(), marker.args[0])
    assert own_settings(prop).max_examples == shard_examples(2, 10) == 6
