"""The suite as an engine's repository uses it: the wheel installed (not editable) into a fresh virtual
environment, pytest run from a directory outside the checkout with `--pyargs properties`, against an
implementation of a small package this test creates, named as `module:function` and through the
package's `mtp_bootstrap_verify.impls` entry point.

The fresh environment installs the suite's wheel and the engine's package with `--no-deps`; their
dependencies (torch, Hypothesis, pytest, xgrammar) come from this interpreter's site-packages through a
`.pth` line, which adds that one directory and runs none of its `.pth` files, so an editable install of
the checkout there stays invisible.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "their-engine"
        version = "0.1.0"

        [project.entry-points."mtp_bootstrap_verify.impls"]
        their-sampler = "their_engine.sampler:step"
        """,
    "their_engine/__init__.py": "",
    # An engine's step that samples with its own generators: the suite's torch-generator step under
    # the engine's own module, which declares its noise and row sampler itself.
    "their_engine/sampler.py": """
        from batched.vector.own_noise import sample_rows_torch_generators as ROW_SAMPLER
        from batched.vector.own_noise import step_torch_generators as step
        from batched.vector.step import prepare_model

        NOISE = "own"
        PER_ROW_FAST_GREEDY_CALLS = False
        __all__ = ["NOISE", "PER_ROW_FAST_GREEDY_CALLS", "ROW_SAMPLER", "prepare_model", "step"]
        """,
}
TESTS = ("properties.step.test_p1_equivalence", "properties.sampling.test_seed_invariance")


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the suite's wheel and the engine's package installed."""
    tmp = tmp_path_factory.mktemp("plugin")
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", str(wheels), str(ROOT)], tmp)
    engine = tmp / "their-engine"
    for name, text in ENGINE.items():
        (engine / name).parent.mkdir(parents=True, exist_ok=True)
        (engine / name).write_text(textwrap.dedent(text).lstrip())
    _run([*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", str(wheels), str(engine)], tmp)
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).strip())
    (site / "suite_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), *map(str, wheels.glob("*.whl"))], tmp)
    return python


def test_the_wheel_runs_from_outside_the_checkout_against_an_engines_own_step(fresh_env: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MTP_", "PYTEST"))}
    where = _run(
        [str(fresh_env), "-c", "import properties, batched; print(properties.__file__, batched.__file__)"],
        tmp_path,
        env,
    )
    assert str(ROOT) not in where, f"the checkout leaked into the fresh environment: {where}"
    # The step by module:function through every test; by its entry-point name through the sampler's.
    for impl, tests in (("their_engine.sampler:step", TESTS), ("their-sampler", TESTS[1:])):
        out = _run(
            [str(fresh_env), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", *tests, "--impl", impl],
            tmp_path,
            env,
        )
        assert " passed" in out and "failed" not in out, out[-2000:]
