"""Each wrong step of `mutants/wrong_steps` (a class of bug an engine's step has, as a module run
through `--impl`) is killed by the property `docs/wrong-steps.md` names as its first killer: the
suite run in a subprocess on that property alone, in the `mutants` profile, must fail. The whole
table (every property against every wrong step, in exact and in fast numerics) is
`python -m mutants.wrong_steps.table`; the two null steps are `tests/test_negative_control.py`'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
P1 = "properties/step/test_p1_equivalence.py"
KILLERS = {
    "never_samples": P1,  # its draws differ from the sampler it declares
    "temperature_one": P1,
    "position_ignored": P1,
    "rows_mixed": P1,
    "batch_position_noise": P1,
    "seeds_truncated": "properties/sampling/test_step_draws.py",  # only 63-bit seeds with shared low bits tell
    "no_index_validation": "properties/step/test_p8_bad_input.py::test_p8_bad_indices_raise_before_touching_anything",
    "cache_in_deque": P1,  # state outside the world
    "prepare_model_state": P1,  # the shared weights written by the preparation
}


@pytest.mark.parametrize("module", sorted(KILLERS))
def test_the_first_killer_kills_the_wrong_step(module: str, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pytest", KILLERS[module], "--impl", f"mutants.wrong_steps.{module}:step", "-x", "-q"]
    cmd += ["--hypothesis-profile", "mutants", "--replays", str(tmp_path), "-p", "no:cacheprovider", "-n", "0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MTP_VERIFY_", "PYTEST_"))}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and " failed" in done.stdout, (
        f"{' '.join(cmd)} exited {done.returncode}, the wrong step {module} not killed:\n{done.stdout[-2000:]}"
    )
