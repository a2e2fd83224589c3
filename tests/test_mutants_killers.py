"""The killers' memo orders a mutant's suite and never decides it: the last killer runs first, a
memo naming a test the suite no longer has is ignored, every test still runs once."""

from __future__ import annotations

from pathlib import Path

from mutants.order import SuiteTest, ordered_nodeids
from mutants.order import load_killers as load
from mutants.order import record_killers as record

TESTS = [
    SuiteTest("a.py::test_a", frozenset({"B1"})),
    SuiteTest("b.py::test_b", frozenset({"B2"})),
    SuiteTest("c.py::test_c", frozenset()),
]


def test_the_last_killer_runs_first_then_the_covering_tests_then_the_rest() -> None:
    assert ordered_nodeids(TESTS, ("B2",), "c.py::test_c") == ["c.py::test_c", "b.py::test_b", "a.py::test_a"]
    assert ordered_nodeids(TESTS, ("B2",), "b.py::test_b") == ["b.py::test_b", "a.py::test_a", "c.py::test_c"]


def test_a_parametrized_last_killer_brings_its_whole_test_first() -> None:
    """A case of a parametrized test (a promoted regression, say) kills before any longer test runs."""
    order = ordered_nodeids(TESTS, ("B2",), "c.py::test_c[regression-7]")
    assert order == ["c.py::test_c", "b.py::test_b", "a.py::test_a"]
    assert ordered_nodeids(TESTS, ("B2",), "gone.py::test_gone[x]") == ordered_nodeids(TESTS, ("B2",))


def test_a_last_killer_the_suite_no_longer_has_is_ignored() -> None:
    assert ordered_nodeids(TESTS, ("B2",), "gone.py::test_gone") == ordered_nodeids(TESTS, ("B2",))


def test_the_memo_merges_per_mode_and_a_subset_run_shares_the_whole_runs_entry(tmp_path: Path) -> None:
    memo = tmp_path / "killers.json"
    assert load(memo, "exact-default-cpu") == {}
    record(memo, "exact-default-cpu", {"m1": "a.py::test_a"})
    record(memo, "exact-default-cpu-subset", {"m2": "b.py::test_b"})
    record(memo, "fast-bfloat16-cpu", {"m1": "c.py::test_c"})
    assert load(memo, "exact-default-cpu") == {"m1": "a.py::test_a", "m2": "b.py::test_b"}
    assert load(memo, "fast-bfloat16-cpu-subset") == {"m1": "c.py::test_c"}


def test_each_kill_is_recorded_as_it_comes_so_a_stopped_run_keeps_its_order(tmp_path: Path) -> None:
    from mutants.catalogue import CATALOGUE
    from mutants.execute import Result
    from mutants.run import memo_writer

    memo, first, second = tmp_path / "killers.json", CATALOGUE[0], CATALOGUE[1]
    killed = Result.of(first, "killed")
    killed.killer = "a.py::test_a"
    memo_writer(memo, "exact-default-cpu", on=False)(killed)
    assert load(memo, "exact-default-cpu") == {}
    write = memo_writer(memo, "exact-default-cpu", on=True)
    write(killed)
    assert load(memo, "exact-default-cpu") == {first.id: "a.py::test_a"}  # before any later result
    write(Result.of(second, "survived"))
    assert load(memo, "exact-default-cpu") == {first.id: "a.py::test_a"}


def test_a_case_that_killed_last_runs_before_its_functions_earlier_cases(tmp_path: Path) -> None:
    """`--mutants-first` (the counting plugin): the memo's case first, then the rest in their order."""
    import subprocess
    import sys

    cases = "import pytest\n\n@pytest.mark.parametrize('k', range(4))\ndef test_case(k):\n    pass\n"
    (tmp_path / "test_cases.py").write_text(cases + "\n\ndef test_plain():\n    pass\n")
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "mutants.plugin", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += ["--mutants-first", "test_cases.py::test_case[2]", "test_cases.py"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120).stdout
    ran = [line.split()[0] for line in out.splitlines() if " PASSED" in line]
    assert ran == [f"test_cases.py::test_case[{k}]" for k in (2, 0, 1, 3)] + ["test_cases.py::test_plain"], out
