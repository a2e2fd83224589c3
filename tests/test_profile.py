"""Every mode of `python -m benchmarks.profile` runs on the CPU (a few steps of a small world, a few
examples) and writes its JSON report. The step modes patch the fully batched step's pieces by name,
so a rename there fails here, not in a GPU call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import batched.vector.attention as paged_attention
import batched.vector.step as vector_step
from benchmarks.profile import MODES, main

ROOT = Path(__file__).resolve().parents[1]
STEP = ["--n", "4", "--steps", "2"]
ARGS = {
    "timers": STEP,
    "timeline": STEP,
    "torch": [*STEP, "--rows", "3", "--python-rows", "3", "--impl", "literal"],
    "example": ["--examples", "2", "--max-n", "4", "--numerics", "exact", "--dtype", "float64", "--python-rows", "3"],
    "rounding": ["--examples", "2", "--max-n", "4", "--dtype", "float32"],
    "copies": ["--n", "6", "--calls", "3", "--ints", "64"],
}
KERNEL = ["--kernel-rows", "2", "--heads", "1", "--dim", "16", "--length", "32", "--calls", "1", "--warps", "1"]
KERNEL += ["--splits", "0", "2", "--prefetch-grid", "0", "1"]
FIGURES = {  # what each mode's report must hold
    "timers": lambda r: r["median_ms"] > 0 and "vector.step.sample_all" in r["pieces_ms"],
    "timeline": lambda r: r["median_ms"] > 0 and "vector.model.decode_padded" in {p["piece"] for p in r["pieces"]},
    "torch": lambda r: r["median_ms"] > 0 and r["ops"] and r["python"]["tottime"] and r["device_busy_ms"] == 0,
    "example": lambda r: (
        r["examples"] == 2
        and r["mismatched"] == 0
        and [(p["phase"], p["ops_per_example"] > 0) for p in r["phases"][:4]]
        == [("build_world", True), ("impl", True), ("reference", True), ("compare", True)]
    ),
    "rounding": lambda r: r["examples"] == 2 and "logits rows" in r["worst_in_u"],
    "copies": lambda r: (
        set(r["staged_us"]) == {"idle", "busy"}
        and list(r["mirror_write_us"]) == ["0 of 6 changed", "4 of 6 changed", "6 of 6 changed"]
    ),
}


def report_of(mode: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / f"{mode}.json"
    assert main(["--mode", mode, *ARGS[mode], "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("mode", sorted(ARGS))
def test_a_mode_runs_on_the_cpu_and_writes_its_report(mode: str, tmp_path: Path) -> None:
    report = report_of(mode, tmp_path)
    assert report["mode"] == mode and report["config"]["device"] == "cpu"
    assert FIGURES[mode](report), report


def test_every_mode_is_tested() -> None:
    assert set(ARGS) | {"kernel"} == set(MODES)


def test_the_step_modes_leave_the_step_and_the_kernel_as_they_were(tmp_path: Path) -> None:
    step, prefetch = vector_step.sample_all, paged_attention.PREFETCH
    assert main(["--mode", "timers", *STEP, "--prefetch", str(int(not prefetch)), "--out", str(tmp_path / "t")]) == 0
    assert vector_step.sample_all is step and paged_attention.PREFETCH is prefetch


def test_the_pieces_modes_refuse_a_step_without_those_pieces(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mode", "timeline", "--impl", "literal"]) == 2
    assert "the timeline mode runs one of vector, vector-gathered" in capsys.readouterr().out


def test_the_kernel_mode_runs_in_the_triton_interpreter(tmp_path: Path) -> None:
    """On the CPU the paged kernel runs only interpreted: the sweep's grid and report, not a timing."""
    pytest.importorskip("triton")
    out = tmp_path / "kernel.json"
    code = (
        "from tests.interpreted import squeeze_index; squeeze_index(); from benchmarks.profile import main; "
        f"raise SystemExit(main({['--mode', 'kernel', *KERNEL, '--out', str(out)]!r}))"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["splits"], r["prefetch"]) for r in rows] == [("auto (1)", False), ("auto (1)", True), ("2", False),
                                                            ("2", True)]  # fmt: skip
    assert all(r["us_per_call"] > 0 for r in rows)
