"""Sizing the rounds of a time budget from what the tests showed so far."""

from __future__ import annotations

from nightly.results import Case
from nightly.rounds import (
    CALIBRATION_BIAS,
    CALIBRATION_EXAMPLES,
    CAPPED_EXAMPLES,
    MIN_ROUND_SECONDS,
    Plan,
    Rate,
    RoundInfo,
    calibration_examples,
    exhausted,
    is_capped,
    next_plan,
    next_round_seconds,
    overhead,
    rates,
    weighted_plan,
)
from properties.run.shards import shard_examples, shard_ids


def case(nodeid: str, round_no: int, seconds: float, examples: int, runs: int = 0, worker: str = "gw0") -> Case:
    return Case(round_no, nodeid, worker, "passed", seconds, {"examples": examples, "runs": runs})


def test_the_last_round_takes_what_is_left_and_none_starts_without_time() -> None:
    assert next_round_seconds(remaining=3600, budget=3600, overhead=10) == 900
    assert next_round_seconds(remaining=60, budget=3600, overhead=10) == 50
    assert next_round_seconds(remaining=MIN_ROUND_SECONDS, budget=3600, overhead=10) == 0.0
    assert next_round_seconds(remaining=300, budget=300, overhead=10) == 75
    assert next_round_seconds(remaining=100, budget=300, overhead=10) == 90, "too little would be left after 75 s"


def test_the_calibration_round_gives_every_worker_examples() -> None:
    assert calibration_examples(1) == CALIBRATION_EXAMPLES and calibration_examples(16) == 32


def test_truth_tables_and_input_checks_are_capped_side_by_side_properties_are_not() -> None:
    assert is_capped(Rate(seconds=0.001, runs=1.0)), "hundreds of examples a second"
    assert is_capped(Rate(seconds=0.06, runs=0.0)), "no side-by-side run"
    assert not is_capped(Rate(seconds=0.3, runs=1.0))


def test_side_by_side_properties_share_what_the_capped_tests_leave() -> None:
    known = {"p1": Rate(0.3, 1.0), "p4": Rate(0.1, 1.0), "gate": Rate(0.002, 0.0), "bad-indices": Rate(0.06, 0.0)}
    plan = weighted_plan(known, budget=1600.0, fallback=7, exhausted_tests=set())
    assert plan.tests["gate"] == plan.tests["bad-indices"] == CAPPED_EXAMPLES
    left = 1600.0 - CAPPED_EXAMPLES * (0.002 + 0.06)
    assert plan.tests["p1"] == int(left / 2 / 0.3) and plan.tests["p4"] == int(left / 2 / 0.1)
    assert plan.for_test("new") == 7 and Plan.from_json(plan.to_json()) == plan
    short = weighted_plan({"p1": Rate(0.3, 1.0), "bad": Rate(0.06, 0.0)}, 10.0, 7, set())
    assert short.tests["bad"] == int(5.0 / 0.06), "no more than an equal share of a short round"


def test_an_exhausted_test_is_capped_and_all_capped_means_none_is() -> None:
    plan = weighted_plan({"p1": Rate(0.3, 1.0), "p3": Rate(0.3, 1.0)}, 600.0, 7, exhausted_tests={"p3"})
    assert plan.tests["p3"] == CAPPED_EXAMPLES and plan.tests["p1"] == int((600.0 - CAPPED_EXAMPLES * 0.3) / 0.3)
    only_cheap = weighted_plan({"a": Rate(0.001, 0.0), "b": Rate(0.002, 0.0)}, 100.0, 7, exhausted_tests=set())
    assert only_cheap.tests == {"a": 50_000, "b": 25_000}


def test_the_costliest_round_sets_the_rate_over_every_worker() -> None:
    cases = [case("p1", 1, 1.0, 5, 5), case("p1", 1, 0.8, 5, 5, "gw1"), case("p1", 2, 14.1, 314, 314)]
    cases += [case("gate", 1, 0.02, 10), case("idle", 1, 0.1, 0)]
    assert rates(cases, calibration_only=False) == {"p1": Rate(1.8 / 10, 1.0), "gate": Rate(0.002, 0.0)}
    assert rates(cases[:2], calibration_only=True)["p1"].seconds == 0.18 * CALIBRATION_BIAS


def test_overhead_and_exhausted_tests_come_from_the_last_round() -> None:
    cases = [case("a", 1, 30.0, 100), case("b", 1, 50.0, 32, worker="gw1"), case("c", 1, 5.0, 10)]
    assert overhead(62.0, cases) == 12.0 and overhead(5.0, []) == 5.0
    assert exhausted(Plan(default=10, tests={"a": 100, "b": 100}), cases) == {"b"}


def test_a_time_budget_calibrates_then_sizes_rounds_and_an_example_budget_repeats_until_time_is_up() -> None:
    assert next_plan([], [], 5, None, 16, 300) == (Plan(32), "32 examples per test (calibration)")
    calibration = [RoundInfo(1, "", Plan(10), seconds=30.0)]
    cases = [case("p1", 1, 1.5, 5, 5), case("p1", 1, 1.5, 5, 5, "gw1"), case("gate", 1, 0.02, 10)]
    plan, text = next_plan(calibration, cases, 10, None, 2, 570)
    assert plan == weighted_plan(rates(cases, calibration_only=True), 150 * 2, CALIBRATION_EXAMPLES, set())
    assert text.startswith("sized for 150 s on 2 worker(s)") and text.endswith("1 cheap test(s) capped")
    assert next_plan([RoundInfo(1, "", Plan(10), stopped="time limit")], cases, 10, None, 2, 570) is None
    assert next_plan(calibration, cases, None, 20, 2, float("inf")) is None, "no time budget: one round"
    assert next_plan(calibration, cases, 10, 20, 2, 31) == (Plan(20), "20 examples per test")
    assert next_plan(calibration, cases, 10, 20, 2, 29) is None, "not enough time for another such round"


def test_a_split_property_is_sized_as_one_test_over_its_cases() -> None:
    """A property split over cases runs its plan dealt over them (`shard_examples`): its cases are one
    test of the rounds, their times and examples added up, so it gets one test's time and is not
    taken for exhausted because each case ran its part only."""
    p9 = [f"m.py::p9[{k}]" for k in shard_ids(3)]
    each = shard_examples(3, 10)
    cases = [case(nodeid, 1, 2.0, each, each) for nodeid in p9] + [case("m.py::p1", 1, 2.0, 10, 10)]
    assert rates(cases, calibration_only=False) == {"m.py::p9": Rate(6.0 / (3 * each), 1.0), "m.py::p1": Rate(0.2)}
    assert exhausted(Plan(default=10), cases) == set()
    assert exhausted(Plan(default=10), cases[1:]) == set(), "two of its cases already ran the plan"
    assert exhausted(Plan(default=10), [case(p9[0], 1, 2.0, 4)]) == {"m.py::p9"}
