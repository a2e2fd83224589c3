"""Shard selection, round seeds and round sizing."""

from __future__ import annotations

import pytest

from nightly.rounds import (
    CALIBRATION_BIAS,
    CALIBRATION_EXAMPLES,
    CAPPED_EXAMPLES,
    MIN_ROUND_SECONDS,
    Plan,
    Rate,
    calibration_examples,
    costliest_rate,
    exhausted,
    is_capped,
    next_round_seconds,
    round_overhead,
    weighted_plan,
    worker_seconds,
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


def test_a_round_gives_out_every_workers_time() -> None:
    assert worker_seconds(100, workers=16) == 1600
    assert worker_seconds(100, workers=0) == 100, "in-process: one worker"


def test_the_calibration_round_gives_every_worker_examples() -> None:
    assert calibration_examples(1) == CALIBRATION_EXAMPLES
    assert calibration_examples(16) == 32


def test_a_test_that_ran_out_of_examples_is_exhausted() -> None:
    plan = Plan(default=10, tests={"a": 100, "b": 100})
    assert exhausted(plan, {"a": 100, "b": 32, "c": 10, "d": 3}) == {"b", "d"}


def test_truth_tables_and_input_checks_are_capped_side_by_side_properties_are_not() -> None:
    assert is_capped(Rate(seconds=0.001, runs=1.0)), "hundreds of examples a second"
    assert is_capped(Rate(seconds=0.06, runs=0.0)), "no side-by-side run"
    assert not is_capped(Rate(seconds=0.3, runs=1.0))


def test_side_by_side_properties_share_what_the_capped_tests_leave() -> None:
    rates = {
        "p1": Rate(0.3, 1.0),
        "p4": Rate(0.1, 1.0),
        "gate": Rate(0.002, 0.0),
        "bad-indices": Rate(0.06, 0.0),
    }
    plan = weighted_plan(rates, budget=1600.0, fallback=7, exhausted_tests=set())
    assert plan.tests["gate"] == plan.tests["bad-indices"] == CAPPED_EXAMPLES
    left = 1600.0 - CAPPED_EXAMPLES * (0.002 + 0.06)
    assert plan.tests["p1"] == int(left / 2 / 0.3) and plan.tests["p4"] == int(left / 2 / 0.1)
    assert plan.for_test("new") == 7
    assert Plan.from_json(plan.to_json()) == plan


def test_a_capped_test_gets_no_more_than_an_equal_share_of_a_short_round() -> None:
    plan = weighted_plan({"p1": Rate(0.3, 1.0), "bad": Rate(0.06, 0.0)}, budget=10.0, fallback=7, exhausted_tests=set())
    assert plan.tests["bad"] == int(5.0 / 0.06)


def test_an_exhausted_test_is_capped_and_all_capped_means_none_is() -> None:
    plan = weighted_plan({"p1": Rate(0.3, 1.0), "p3": Rate(0.3, 1.0)}, 600.0, 7, exhausted_tests={"p3"})
    assert plan.tests["p3"] == CAPPED_EXAMPLES and plan.tests["p1"] == int((600.0 - CAPPED_EXAMPLES * 0.3) / 0.3)
    only_cheap = weighted_plan({"a": Rate(0.001, 0.0), "b": Rate(0.002, 0.0)}, 100.0, 7, exhausted_tests=set())
    assert only_cheap.tests == {"a": 50_000, "b": 25_000}


def test_the_costliest_round_sets_the_rate() -> None:
    assert costliest_rate([(1.8, 89), (14.1, 314), (0.0, 0)], calibration_only=False) == 14.1 / 314
    assert costliest_rate([(1.0, 10)], calibration_only=True) == 0.1 * CALIBRATION_BIAS
    assert costliest_rate([], calibration_only=False) == 0.0


def test_overhead_is_the_wall_time_the_busiest_worker_did_not_spend_in_tests() -> None:
    recs = [{"worker": "gw0", "seconds": 30.0}, {"worker": "gw1", "seconds": 50.0}, {"worker": "gw0", "seconds": 5.0}]
    assert round_overhead(62.0, recs) == 12.0
    assert round_overhead(5.0, []) == 5.0
