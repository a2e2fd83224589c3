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
    fix = "from tests.interpreted import squeeze_index; squeeze_index()"
    code = f"{fix}; from {module} import {function}; {function}()"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def squeeze_index() -> None:
    """Make the interpreter's scalars usable as loop bounds under NumPy 2.4 and later, as Triton does
    since its fix of triton-lang/triton#9171: a scalar is a one-element array there, and older
    interpreters (3.6, the GPU image's) convert it with `int(array)`, which NumPy 2.4 refuses, so a
    kernel whose loop bounds are computed fails to run at all. Squeezing first changes no value.
    Nothing happens where Triton has no interpreter of that shape."""
    from triton.runtime import interpreter

    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None:
        return

    def patched(tensor: object, scope: object) -> None:
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))  # type: ignore[attr-defined]

    interpreter._patch_lang_tensor = patched
