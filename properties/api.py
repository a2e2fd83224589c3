"""The suite's public API: what a hand-built case, an engine's own test or a job imports. Every
name here keeps its meaning and signature across releases (`tests/test_api.py` pins them); a name
that leaves keeps a shim that warns for one release (`properties.moved`). Anything not named in
`__all__` is the suite's own and may change without notice.

A hand-built case in ten lines (README, "A hand-built case"):

    from properties.api import SeqSpec, WorldSpec, check_world

    def test_a_greedy_and_a_sampled_row_bootstrap_alike():
        spec = WorldSpec(seqs=(SeqSpec(cache_len=5, slot_idx=0, ssm_slot=0),
                               SeqSpec(cache_len=9, slot_idx=1, ssm_slot=1, temperature=1.0, top_k=5)),
                         bootstrap=(0, 1))
        run = check_world(spec, impl="vector")  # raises with the property's report on any difference
        assert all(len(a.output_tokens) == 1 for a in run.impl.world.active)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from properties.checks.calls import check_calls, check_failures_explained
from properties.checks.compare import check_equivalence, compare_untouched
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.failures.promote import load_regression, on_device, promote
from properties.failures.report import format_report
from properties.impl import DEFAULT_IMPL, REGISTRY, Impl, load
from properties.sides.harness import run_side_by_side
from properties.sides.mismatch import Mismatch
from properties.sides.side_by_side import SideBySide
from properties.tolerance import Tolerance
from properties.worlds.specs import FaultSpec, ModelSpec, SeqSpec, StepSpec, WorldSpec
from reference.model.modes import DType, NumericsMode
from reference.sampling_params import SamplingParams

__all__ = [
    "DEFAULT_IMPL",
    "REGISTRY",
    "STEP_CHECKS",
    "Check",
    "DType",
    "FaultSpec",
    "Impl",
    "Mismatch",
    "ModelSpec",
    "NumericsMode",
    "RunConfig",
    "SamplingParams",
    "SeqSpec",
    "SideBySide",
    "StepSpec",
    "Tolerance",
    "WorldSpec",
    "check_calls",
    "check_equivalence",
    "check_failures_explained",
    "check_logs",
    "check_world",
    "compare_untouched",
    "format_report",
    "load",
    "load_regression",
    "promote",
    "replay",
    "run_side_by_side",
]

Check = Callable[[SideBySide], list[Mismatch]]
# What a replayed or promoted case must pass, and `check_world`'s default: P1 equivalence (with the
# registered differences D1 and D4), P3 call accounting, P7 logs.
STEP_CHECKS: tuple[Check, ...] = (check_equivalence, check_calls, check_logs)


def check_world(
    spec: WorldSpec,
    impl: Impl | str | None = None,
    run: RunConfig | None = None,
    checks: Sequence[Check] = STEP_CHECKS,
    claim: str = "a hand-built case",
) -> SideBySide:
    """Run `spec` side by side: the implementation under test (`impl`: an `Impl`, a registry name or
    `module:function`; default `run`'s, the literal step without a `run`) against the reference,
    then every one of `checks`. Returns the run, for further assertions; raises AssertionError with
    the report a property gives (`claim` its title, the differences, the mix, the replay command)
    when a check finds a difference or the step changed anything outside its world. The spec runs
    as written: its model's device, numerics and dtype are the run's."""
    run = run or RunConfig()
    under_test = run.impl if impl is None else impl if isinstance(impl, Impl) else load(impl)
    sbs = run_side_by_side(spec, under_test, run.replays)
    mismatches = [m for check in checks for m in check(sbs)]
    if mismatches:
        raise AssertionError(format_report(claim, sbs, mismatches))
    return sbs


def replay(path: Path | str, impl: Impl | str = DEFAULT_IMPL, device: str | None = None) -> SideBySide:
    """Replay the case a replay or regression file holds (`check_world` with `STEP_CHECKS`), on
    `device` instead of the recorded one when given; raises as `check_world` does. ValueError names
    a file that is not a case."""
    spec, note = load_regression(Path(path))
    if device:
        spec = on_device(spec, device)
    return check_world(spec, impl, checks=STEP_CHECKS, claim=f"replay of {path}" + (f" ({note})" if note else ""))
