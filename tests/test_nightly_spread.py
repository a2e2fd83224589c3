"""Spreading a round: every worker's share of a test's examples, its seeds, who replays the
database, and each host's shard of the tests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from nightly.plugin import Slot, apply_plan, worker_settings, worker_slot
from nightly.rounds import Plan
from nightly.spread import Shard, parse_shard, replays_database, select_tests, share, worker_seed

NODEIDS = [f"properties/test_p{i}.py::test_{c}" for i in range(1, 9) for c in "ab"]


@pytest.mark.parametrize(("total", "count"), [(0, 3), (1, 16), (10, 3), (48, 16), (1000, 7)])
def test_shares_add_up_and_differ_by_at_most_one(total: int, count: int) -> None:
    parts = [share(total, k, count) for k in range(count)]
    assert sum(parts) == total and max(parts) - min(parts) <= 1
    assert share(total, count + 1, count) == parts[1], "a replacement worker takes the share its number wraps to"


def test_every_worker_round_host_and_test_draws_its_own_stream() -> None:
    seeds = {worker_seed(7, h, r, k, t) for h in (0, 1) for r in (1, 2) for k in range(16) for t in ("a", "b")}
    assert len(seeds) == 2 * 2 * 16 * 2 and all(0 <= s < 2**64 for s in seeds)
    assert worker_seed(7, 0, 1, 3, "a") == worker_seed(7, 0, 1, 3, "a"), "a run seed gives the same streams"


def test_the_slot_comes_from_xdist_and_is_the_only_one_outside_it() -> None:
    assert worker_slot(SimpleNamespace()) == ("main", 0, 1)
    assert worker_slot(SimpleNamespace(workerinput={"workerid": "gw5", "workercount": 16})) == ("gw5", 5, 16)


def test_only_the_first_worker_replays_the_database() -> None:
    assert replays_database(0, 16) and not replays_database(5, 16) and replays_database(16, 16)
    base = settings(max_examples=100, phases=list(Phase))
    first, other = worker_settings(base, 100, 0, 16), worker_settings(base, 100, 5, 16)
    assert set(first.phases) == set(Phase) and set(other.phases) == set(Phase) - {Phase.reuse}
    assert (first.max_examples, other.max_examples) == (7, 6)


def planned(examples: int, slot: Slot) -> list[SimpleNamespace]:
    """A Hypothesis test and a plain one as pytest items, after `apply_plan`."""

    @given(st.integers())
    def prop(x: int) -> None:
        pass

    items = [
        SimpleNamespace(obj=prop, nodeid="m::prop", marks=[]),
        SimpleNamespace(obj=lambda: None, nodeid="m::plain", marks=[]),
    ]
    for item in items:
        item.add_marker = item.marks.append
        item.get_closest_marker = lambda name, item=item: next((m for m in item.marks if m.name == name), None)
    apply_plan(items, Plan(default=examples), slot)  # type: ignore[arg-type]
    return items


def test_each_worker_runs_its_share_from_its_own_seed_and_the_first_runs_the_plain_tests() -> None:
    prop, plain = planned(3, Slot(index=0, count=2, host=1, round=2, seed=7))
    assert (prop.marks, plain.marks) == ([], [])
    assert prop.obj._hypothesis_internal_use_settings.max_examples == 2
    assert prop.obj._hypothesis_internal_use_seed == worker_seed(7, 1, 2, 0, "m::prop")
    prop, plain = planned(1, Slot(index=1, count=2))
    assert len(prop.marks) == len(plain.marks) == 1, "no examples left for the second worker, nor plain tests"
    prop, _ = planned(0, Slot())
    assert len(prop.marks) == 1, "a plan of no examples runs none"


def test_parse_shard_accepts_i_of_n_and_refuses_the_rest() -> None:
    assert parse_shard(" 2 / 4 ", "seeds") == Shard(2, 4, "seeds")
    for bad in ("4/4", "1/0", "-1/3", "1", "a/b"):
        with pytest.raises(ValueError, match="expected i/N"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="shard-by"):
        parse_shard("0/2", "hosts")


@pytest.mark.parametrize("count", [1, 2, 3, 5, 16, 40])
def test_test_shards_are_disjoint_even_and_cover_every_test(count: int) -> None:
    shards = [select_tests(NODEIDS, Shard(i, count)) for i in range(count)]
    flat = [n for s in shards for n in s]
    assert sorted(flat) == sorted(NODEIDS) and len(set(flat)) == len(flat)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards[0] == [n for n in NODEIDS if n in shards[0]], "the given order is kept"
    assert set(select_tests(list(reversed(NODEIDS)), Shard(0, count))) == set(shards[0]), "and does not matter"


def test_seed_shards_run_every_test() -> None:
    assert all(select_tests(NODEIDS, Shard(i, 4, "seeds")) == NODEIDS for i in range(4))
