"""A round on two workers end to end: every Hypothesis test's examples split between them, each
drawing its own stream, a plain test run once, and the throughput the report prints."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from nightly.cli import default_workers, main

ROOT = Path(__file__).resolve().parent.parent

SUITE = """
    import os
    from pathlib import Path

    from hypothesis import given, strategies as st

    DRAWN = Path(__file__).with_name("drawn")


    def note(name, line):
        DRAWN.mkdir(exist_ok=True)
        with open(DRAWN / f"{name}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.txt", "a") as f:
            f.write(f"{line}\\n")


    @given(st.integers(0, 2**62))
    def test_draws(x):
        note("draws", x)


    def test_plain():
        note("plain", "ran")
"""


def drawn(folder: Path, name: str) -> dict[str, list[str]]:
    return {p.stem.split("-")[-1]: p.read_text().split() for p in sorted(folder.glob(f"{name}-*.txt"))}


def test_two_workers_split_every_tests_examples_and_run_a_plain_test_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite" / "test_spread_suite.py"
    suite.parent.mkdir()
    suite.write_text(textwrap.dedent(SUITE))
    out = tmp_path / "out"
    monkeypatch.chdir(ROOT)
    args = ["--examples", "20", "--device", "cpu", "--workers", "2", "--seed", "5", "--out", str(out)]
    code = main([*args, "--database", str(tmp_path / "db"), "--tests", str(suite)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "test_draws: 20 examples on 2 workers" in printed, "one progress line for both workers"
    draws = drawn(suite.parent / "drawn", "draws")
    assert sorted(draws) == ["gw0", "gw1"] and [len(v) for v in draws.values()] == [10, 10]
    assert draws["gw0"] != draws["gw1"], "each worker draws its own stream"
    assert sorted(drawn(suite.parent / "drawn", "plain")) == ["gw0"], "a plain test runs on the first worker only"
    summary = json.loads((out / "summary.json").read_text())
    tests = {t["name"]: t for t in summary["tests"].values()}
    assert tests["test_draws"]["examples"] == 20 and tests["test_draws"]["workers"] == 2
    assert {w: v["examples"] for w, v in tests["test_draws"]["by_worker"].items()} == {"gw0": 10, "gw1": 10}
    assert tests["test_plain"]["result"] == "PASS" and tests["test_plain"]["workers"] == 1
    assert tests["test_draws"]["examples_per_second_host"] > 0 and summary["meta"]["seed"] == 5
    report = (out / "report.md").read_text()
    assert "## Throughput" in report and "| `test_draws` | 2 | 20 |" in report


@pytest.mark.parametrize(
    ("device", "gpus", "cores", "workers"),
    [("cuda", 1, 16, 16), ("cuda", 2, 16, 16), ("cuda", 3, 16, 15), ("cuda", 8, 4, 8), ("cpu", 0, 16, 16)],
)
def test_default_workers_fill_every_core_evenly_over_the_gpus(device: str, gpus: int, cores: int, workers: int) -> None:
    assert default_workers(device, gpus, cores) == workers
