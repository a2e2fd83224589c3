"""The negative controls: the whole suite of properties (`python -m pytest properties --impl STEP`, in
a subprocess) against a step that does nothing and against a step that raises
(`mutants.wrong_steps.null`, `raising`). Every test of the step must fail against each; only the suite's tests
of its own spec and parts (marked `self_test`, in `properties/self_tests/`) may pass, and those are
deselected, so the run's list of passing tests must be empty. A property that runs the suite's own
code whatever `--impl` says, or a test that checks nothing, shows up here by its node id.

Cost: the `mutants` profile (derandomized, no database, no shrinking), so each failing test stops at
its first failing example; one process each (`-n 0`: in CI the two controls run on two xdist
workers at once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRONG_STEPS = ("mutants.wrong_steps.null:do_nothing", "mutants.wrong_steps.raising:raise_error")
# The tests of a declared row sampler (`ROW_SAMPLER`): skipped, as not applicable, for a step that
# declares none (`do_nothing`); `raise_error` declares one that raises, and they must fail there.
DECLARED_SAMPLER_TESTS = (
    "properties/sampling/test_distribution.py::test_the_declared_row_sampler_follows_the_reference",
    "properties/sampling/test_seed_invariance.py::test_a_seeded_token_does_not_depend_on_its_batch",
)
SELF_TESTS = "properties/self_tests/"
PROFILE = "mutants"


def control_env() -> dict[str, str]:
    """This environment less the suite's own variables and pytest's (an xdist worker's, extra options),
    which would configure the control otherwise than its command line says."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MTP_VERIFY_", "PYTEST_"))}


def run_control(step: str, tmp: Path) -> dict:
    """The properties run against `step` with the self tests deselected; what `tests.outcome_log`
    wrote (the selection and each test's outcome)."""
    log = tmp / "outcomes.json"
    cmd = [sys.executable, "-m", "pytest", "properties", "--impl", step, "-m", "not self_test"]
    cmd += ["--hypothesis-profile", PROFILE, "--replays", str(tmp / "replays"), "-n", "0", "-q", "-p", "no:randomly"]
    cmd += ["-p", "tests.outcome_log", "--outcome-log", str(log)]
    done = subprocess.run(cmd, cwd=ROOT, env=control_env(), capture_output=True, text=True, timeout=600)
    # 1: some tests failed (as they must); anything else (0 included, checked below) is reported with the output.
    assert done.returncode in (0, 1) and log.is_file(), (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return json.loads(log.read_text())


@pytest.mark.parametrize("step", WRONG_STEPS, ids=[s.rpartition(":")[2] for s in WRONG_STEPS])
def test_every_property_of_the_step_fails_against_a_wrong_step(step: str, tmp_path: Path) -> None:
    got = run_control(step, tmp_path)
    selected, deselected, outcomes = got["selected"], got["deselected"], got["outcomes"]
    # The selection: the self tests and nothing else left out; none of them run.
    not_self = sorted(n for n, marked in deselected.items() if not marked or not n.startswith(SELF_TESTS))
    assert deselected and not not_self, f"deselected, but not self tests in {SELF_TESTS}: {not_self}"
    ran_self = sorted(n for n, marked in selected.items() if marked or n.startswith(SELF_TESTS))
    assert not ran_self, f"self tests the control ran: {ran_self}"
    assert any(n.startswith("properties/step/") for n in selected), f"no property of the step ran: {sorted(selected)}"
    assert any(n.startswith("properties/generations/") for n in selected), "no P9 test ran"
    assert set(outcomes) == set(selected), f"tests without an outcome: {sorted(set(selected) - set(outcomes))}"
    # The verdict: every test of the step failed (a declared sampler's tests skipped where none is).
    declares = step.endswith(":raise_error")
    excused = set() if declares else set(DECLARED_SAMPLER_TESTS)
    offenders = sorted(n for n, o in outcomes.items() if o != "failed" and not (o == "skipped" and n in excused))
    if offenders:
        print(f"tests that did not fail against {step}:", *offenders, sep="\n  ")
    assert not offenders, f"{len(offenders)} tests of the step did not fail against {step}: " + ", ".join(
        f"{n} ({outcomes[n]})" for n in offenders
    )
