"""The GPU session's step scripts run on the CPU (a few steps of a small world): they patch the
fully batched step's pieces by name, so a rename there must fail here, not in a GPU call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "step_timers.py": ["--n", "4", "--steps", "2"],
    "step_timeline.py": ["--n", "4", "--steps", "2"],
    "step_profile.py": ["--n", "4", "--steps", "2", "--rows", "3"],
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_step_script_runs_and_writes_its_json(script: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(ROOT / "scripts" / script), *SCRIPTS[script], "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(out.read_text())["median_ms"] > 0
