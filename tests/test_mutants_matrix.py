"""The measured coverage matrix (`python -m mutants.matrix`) on a small hand-made run and suite."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from mutants.matrix import findings, main, matrix_text, measure
from mutants.order import suite_tests

SUITE = {
    "test_p1_equivalence.py": """
        @covers("P1 equivalence", "B1", "B2")
        @given(x=st.integers())
        def test_p1_equivalence(x):
            pass
    """,
    "test_p3_calls.py": """
        @covers("P3 call accounting", "B1", "B13", "B21")
        def test_p3_call_accounting():
            pass
    """,
    "test_regressions.py": """
        def test_regression(path):
            pass
    """,
}
P1 = "properties/step/test_p1_equivalence.py::test_p1_equivalence"
P3 = "properties/step/test_p3_calls.py::test_p3_call_accounting"
REG = "properties/step/test_regressions.py::test_regression[b6-case]"


def row(nodeid: str, outcome: str) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "examples": 3, "failing_example": None, "reason": "", "seconds": 1}


RUN = {
    "summary": {"mode": "exact-default-cpu", "keep_going": True},
    "mutants": [
        # B1: killed by P1 and P3 (both declare it)
        {"id": "rows", "ids": ["B1"], "tests": [row(P1, "failed"), row(P3, "failed"), row(REG, "passed")]},
        # B2: P1 declares it, ran against it, killed none; a regression case killed it
        {"id": "decode", "ids": ["B2"], "tests": [row(P1, "passed"), row(P3, "failed"), row(REG, "failed")]},
        # B13: P3 declares it but was not run against its mutant
        {"id": "stash", "ids": ["B13"], "tests": [row(P1, "failed")]},
    ],
}


def suite(root: Path) -> Path:
    for name, body in SUITE.items():
        path = root / "properties" / "step" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body))
    return root


def test_kills_holes_unreached_covers_and_undeclared_kills(tmp_path: Path) -> None:
    mx = measure(RUN, suite_tests(suite(tmp_path)))
    assert mx.props == ["P1", "P3", "other"]
    assert [mx.mark(p, "B1") for p in mx.props] == ["K", "K", "."]
    assert [mx.mark(p, "B2") for p in mx.props] == ["X", "k", "k"]
    assert [mx.mark(p, "B13") for p in mx.props] == ["k", "?", "."]
    f = findings(mx)
    assert f["holes"] == ["P1 B2: ran against decode; killed none"]
    assert f["unreached"] == ["P3 B13: not run against stash"]
    assert f["undeclared"] == ["P1 B13: killed stash", "P3 B2: killed decode", "other B2: killed decode"]
    assert "G1" in f["no_mutant"] and "B1" not in f["no_mutant"] and mx.mark("P1", "B4") == "."
    assert mx.mark("P3", "B21") == "-", "declared, but no mutant of B21 in the run"
    assert "B1       K     K     .  1" in matrix_text(mx).splitlines()


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(json.dumps(RUN))
    out = tmp_path / "coverage-matrix.md"
    assert main([str(run), "--out", str(out), "--root", str(suite(tmp_path))]) == 0
    page = out.read_text()
    assert page.startswith("# Coverage matrix, measured") and "- P1 B2: ran against decode; killed none" in page
    assert main([str(tmp_path / "missing.json"), "--out", str(out)]) == 2
