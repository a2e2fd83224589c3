"""Running a Triton kernel's checks in Triton's interpreter on the CPU (CI has no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_interpreted(module: str, function: str) -> None:
    """Call `module.function()` in a fresh process with TRITON_INTERPRET=1 (it must be set before
    Triton is imported) and fail with the end of its output when it fails; skip without Triton."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    code = f"from {module} import {function}; {function}()"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
