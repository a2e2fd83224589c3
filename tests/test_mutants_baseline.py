"""The baseline in parts (`mutants.baseline`): every test once, each part in suite order, the parts
balanced on the last run's times; the merged result passes only when every part passed; the times
kept in the memo beside the killers, which they leave alone."""

from __future__ import annotations

from pathlib import Path

from mutants import baseline
from mutants.execute import Result
from mutants.order import SuiteTest, load_killers, record_killers

TESTS = [SuiteTest(f"t{i}.py::test_{i}", frozenset()) for i in range(7)]


def test_every_test_runs_once_in_suite_order_within_its_part() -> None:
    parts = baseline.split(TESTS, 3, {})
    assert sorted(t.nodeid for p in parts for t in p) == sorted(t.nodeid for t in TESTS)
    for p in parts:
        assert p == sorted(p, key=TESTS.index)
    assert len(parts) == 3 and max(map(len, parts)) - min(map(len, parts)) <= 1  # no times: equal counts


def test_the_parts_balance_on_the_last_times_and_a_long_test_has_a_part_of_its_own() -> None:
    seconds = {"t0.py::test_0": 60.0} | {t.nodeid: 10.0 for t in TESTS[1:]}
    parts = baseline.split(TESTS, 2, seconds)
    loads = sorted(sum(seconds[t.nodeid] for t in p) for p in parts)
    assert loads == [60.0, 60.0]
    assert [TESTS[0]] in parts


def test_never_more_parts_than_tests_nor_an_empty_one() -> None:
    assert baseline.split(TESTS[:2], 8, {}) == [[TESTS[0]], [TESTS[1]]]
    assert baseline.split(TESTS, 1, {}) == [TESTS]


def part(status: str, tests: list[tuple[str, float]], seconds: float) -> Result:
    r = Result.of(None, status)
    r.tests = [{"nodeid": n, "seconds": s, "examples": 1} for n, s in tests]
    r.tests_run, r.examples_total, r.seconds = len(tests), len(tests), seconds
    return r


def test_the_merged_baseline_passes_only_when_every_part_passed() -> None:
    ok = part("survived", [("a.py::test_a[shard1of2]", 1.0), ("a.py::test_a[shard2of2]", 2.0)], 3.0)
    bad = part("killed", [("b.py::test_b", 0.5)], 0.5)
    bad.killer, bad.reason = "b.py::test_b", "AssertionError: boom"
    both = baseline.merged([ok, bad])
    assert (both.status, both.killer, both.reason) == ("killed", "b.py::test_b", "AssertionError: boom")
    assert both.tests_run == 3 and both.seconds == 3.0  # side by side: the longest part's time
    assert baseline.merged([ok, part("survived", [], 1.0)]).status == "survived"
    assert baseline.merged([part("error", [], 1.0), ok]).status == "error"


def test_the_times_are_kept_per_function_and_per_mode_beside_the_killers(tmp_path: Path) -> None:
    memo = tmp_path / "killers.json"
    record_killers(memo, "exact-default-cpu", {"m1": "a.py::test_a"})
    ok = part("survived", [("a.py::test_a[shard1of2]", 1.0), ("a.py::test_a[shard2of2]", 2.0)], 3.0)
    baseline.record_times(memo, "exact-default-cpu-subset", ok)
    assert baseline.load_times(memo, "exact-default-cpu") == {"a.py::test_a": 3.0}
    assert baseline.load_times(memo, "fast-bfloat16-cpu") == {}
    assert load_killers(memo, "exact-default-cpu") == {"m1": "a.py::test_a"}
    baseline.record_times(memo, "exact-default-cpu", part("killed", [("a.py::test_a", 9.0)], 9.0))
    assert baseline.load_times(memo, "exact-default-cpu") == {"a.py::test_a": 3.0}  # a failed baseline's are not kept
