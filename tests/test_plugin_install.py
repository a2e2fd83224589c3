"""The suite as an engine's repository uses it: the wheel installed (not editable) into a fresh virtual
environment, and the whole suite (`pytest --pyargs properties`, every module) run from a directory
outside the checkout against the steps of a small package this test creates. The package's own step
(its row bookkeeping around the suite's fully batched step), named through the package's
`mtp_bootstrap_verify.impls` entry point, must pass every test; the same package's step with a bug
in that bookkeeping (an odd batch's last row is never bootstrapped), named as `module:function`,
must fail. So the installed plugin runs the step `--impl` names, by either route, and checks it.

The right run takes the `quick` profile (derandomized, a few examples a property, no database) on
two workers; the wrong run stops at its first failing test (`-x`).

The fresh environment installs the suite's wheel and the engine's package with `--no-deps`; their
dependencies (torch, Hypothesis, pytest, pytest-xdist, xgrammar) come from this interpreter's
site-packages through a `.pth` line, which adds that one directory and runs none of its `.pth` files,
so an editable install of the checkout there stays invisible.
"""

from __future__ import annotations

import os
import re
import shutil
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
        their-step = "their_engine.bootstrap:step"
        their-step-pairs-rows = "their_engine.bootstrap:step_pairs_rows"
        """,
    "their_engine/__init__.py": "",
    # The engine's bootstrap: its own bookkeeping of the rows a batch takes, around the suite's fully
    # batched step, on the model that step runs on (declared here, as an engine's module would).
    "their_engine/bootstrap.py": '''
        from batched.vector.step import PER_ROW_FAST_GREEDY_CALLS, prepare_model, step_mtp_bootstrap_vectorized

        __all__ = ["PER_ROW_FAST_GREEDY_CALLS", "prepare_model", "step", "step_pairs_rows"]


        def batch_rows(idxs):
            """The rows one bootstrap batch takes: every bootstrapping row, in the scheduler's order."""
            return list(idxs)


        def paired_rows(idxs):
            """The rows as two-row kernels take them: the bug, an odd batch's last row is left out."""
            return list(idxs[: len(idxs) - len(idxs) % 2]) if len(idxs) > 1 else list(idxs)


        def step(model, active, sched, idxs, ladder_nd, verify_ctx):
            step_mtp_bootstrap_vectorized(model, active, sched, batch_rows(idxs), ladder_nd, verify_ctx)


        def step_pairs_rows(model, active, sched, idxs, ladder_nd, verify_ctx):
            step_mtp_bootstrap_vectorized(model, active, sched, paired_rows(idxs), ladder_nd, verify_ctx)
        ''',
}
RIGHT = "their-step"  # by its entry-point name
WRONG = "their_engine.bootstrap:step_pairs_rows"  # by module:function
# What the wheel is built without: a checkout's own build outputs (a stale `build/lib` would put files
# deleted since into the wheel), environments, caches.
NOT_SOURCE = (".git", ".venv", ".hypothesis", "build", "*.egg-info", "__pycache__",
              ".benchmarks", ".ruff_cache", "artifacts")  # fmt: skip
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-profile", "quick", "--pyargs", "properties"]


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in ok, (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the suite's wheel and the engine's package installed."""
    tmp = tmp_path_factory.mktemp("plugin")
    wheels, source = tmp / "wheels", tmp / "suite"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE), symlinks=True)
    pip = [sys.executable, "-m", "pip", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", str(wheels), str(source)], tmp)
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


def outside_env() -> dict[str, str]:
    """This environment less what would configure the runs otherwise than their command lines say."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MTP_", "PYTEST"))}


def counts(out: str) -> dict[str, int]:
    """pytest's summary line as {"passed": n, "failed": n, ...}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", out)}


def test_the_wheel_checks_an_engines_own_step_from_outside_the_checkout(fresh_env: Path, tmp_path: Path) -> None:
    env = outside_env()
    where = _run(
        [str(fresh_env), "-c", "import properties, batched; print(properties.__file__, batched.__file__)"],
        tmp_path,
        env,
    )
    assert str(ROOT) not in where, f"the checkout leaked into the fresh environment: {where}"
    modules = _run([str(fresh_env), "-m", "pytest", "-q", "--collect-only", "--pyargs", "properties"], tmp_path, env)
    collected = {line.partition("::")[0] for line in modules.splitlines() if "::" in line}  # relative to the package
    wanted = {p.relative_to(ROOT / "properties").as_posix() for p in (ROOT / "properties").rglob("test_*.py")}
    assert collected == wanted, f"modules collected: {sorted(collected)}, in the checkout: {sorted(wanted)}"

    right = _run([str(fresh_env), *PYTEST, "-n", "2", "--impl", RIGHT], tmp_path, env)
    got = counts(right)
    assert got.get("passed") and not got.get("failed") and not got.get("error"), right[-3000:]
    print(f"{RIGHT}: {right.strip().splitlines()[-1]}")  # the figures of docs/wrong-steps.md (pytest -s)

    wrong = _run([str(fresh_env), *PYTEST, "-x", "--impl", WRONG], tmp_path, env, ok=(1,))
    assert counts(wrong).get("failed") == 1, f"the step that drops a row was not caught:\n{wrong[-3000:]}"
    killed = [line.partition(" - ")[0] for line in wrong.splitlines() if line.startswith("FAILED")]
    print(f"{WRONG}: {wrong.strip().splitlines()[-1]}; {', '.join(killed)}")
