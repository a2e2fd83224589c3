"""Shard selection, round seeds and round sizing."""

from __future__ import annotations

import pytest

from nightly.rounds import (
    CALIBRATION_BIAS,
    MIN_ROUND_SECONDS,
    Plan,
    exhausted,
    next_round_seconds,
    round_overhead,
    seconds_per_example,
    seconds_per_test,
    sized_plan,
)
from nightly.shard import Shard, parse_shard, select_tests

NODEIDS = [f"properties/test_p{i}.py::test_{c}" for i in range(1, 9) for c in "ab"]


def test_parse_shard_accepts_i_of_n_and_refuses_the_rest() -> None:
    assert parse_shard("2/4") == Shard(2, 4, "tests")
    assert parse_shard(" 0 / 1 ", "seeds") == Shard(0, 1, "seeds")
    for bad in ("4/4", "1/0", "-1/3", "1", "a/b"):
        with pytest.raises(ValueError, match="expected i/N"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="shard by"):
        parse_shard("0/2", "hosts")


@pytest.mark.parametrize("count", [1, 2, 3, 5, 16, 40])
def test_test_shards_are_disjoint_and_cover_every_test(count: int) -> None:
    shards = [select_tests(NODEIDS, Shard(i, count)) for i in range(count)]
    flat = [n for s in shards for n in s]
    assert sorted(flat) == sorted(NODEIDS)
    assert len(set(flat)) == len(flat)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1, "round-robin keeps shards even"


def test_selection_keeps_the_given_order_and_does_not_depend_on_it() -> None:
    mine = select_tests(NODEIDS, Shard(1, 3))
    assert mine == [n for n in NODEIDS if n in mine]
    assert set(select_tests(list(reversed(NODEIDS)), Shard(1, 3))) == set(mine)


def test_seed_shards_run_every_test() -> None:
    assert all(select_tests(NODEIDS, Shard(i, 4, "seeds")) == NODEIDS for i in range(4))


def test_the_last_round_takes_what_is_left_and_none_starts_without_time() -> None:
    assert next_round_seconds(remaining=3600, budget=3600, overhead=10) == 900
    assert next_round_seconds(remaining=60, budget=3600, overhead=10) == 50
    assert next_round_seconds(remaining=MIN_ROUND_SECONDS, budget=3600, overhead=10) == 0.0
    assert next_round_seconds(remaining=300, budget=300, overhead=10) == 75
    assert next_round_seconds(remaining=100, budget=300, overhead=10) == 90, "too little would be left after 75 s"


def test_every_test_gets_an_equal_share_and_no_worker_more_than_the_round() -> None:
    assert seconds_per_test(100, workers=8, n_tests=16) == 50
    assert seconds_per_test(100, workers=8, n_tests=4) == 100, "a test never runs on two workers"
    assert seconds_per_test(100, workers=2, n_tests=3) == 50, "one worker runs two tests"
    assert seconds_per_test(100, workers=0, n_tests=4) == 25, "in-process: one worker"


def test_a_test_that_ran_out_of_examples_is_exhausted() -> None:
    plan = Plan(default=10, tests={"a": 100, "b": 100})
    assert exhausted(plan, {"a": 100, "b": 32, "c": 10, "d": 3}) == {"b", "d"}


def test_plans_fill_the_share_at_each_tests_rate() -> None:
    plan = sized_plan({"slow": 2.0, "fast": 0.01, "glacial": 1e6}, test_seconds=100, fallback=7)
    assert plan.tests == {"slow": 50, "fast": 10_000, "glacial": 1}
    assert plan.for_test("new") == 7
    assert Plan.from_json(plan.to_json()) == plan


def test_a_rate_from_the_calibration_round_alone_is_taken_as_low() -> None:
    assert seconds_per_example(10.0, 100, calibration_only=False) == 0.1
    assert seconds_per_example(10.0, 100, calibration_only=True) == 0.1 * CALIBRATION_BIAS


def test_overhead_is_the_wall_time_the_busiest_worker_did_not_spend_in_tests() -> None:
    recs = [{"worker": "gw0", "seconds": 30.0}, {"worker": "gw1", "seconds": 50.0}, {"worker": "gw0", "seconds": 5.0}]
    assert round_overhead(62.0, recs) == 12.0
    assert round_overhead(5.0, []) == 5.0
