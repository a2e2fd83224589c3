"""Hypothesis `event` calls that show which paths an example really took, and the
catalogue of the paths a run should reach (`expected_paths`), so a report can name the ones it
did not."""

from __future__ import annotations

from hypothesis import event

from properties.sides.side_by_side import SideBySide
from properties.worlds.fault_kinds import ALTERNATES, BATCHED_STEP_OPS

# The paths of the batched step an event names, besides call outcomes.
PATHS = (
    "n=1",
    "n=2",
    "n>=3",
    "batched argmax engaged",
    "batched propose group",
    "meta stride overflow",
    "group returned None",
    "per-sequence fallback propose",
    "registered difference D1",
    "registered difference D2",
)


def call_event(op: str, outcome: str, injected: bool) -> str:
    """The event naming a model call that did not return normally."""
    return f"{op} -> {outcome}" + (" (injected)" if injected else "")


def expected_paths() -> list[str]:
    """Every path event a long run of the whole suite should record: the paths above and each
    injected fault kind of each batched-step operation."""
    faults = [call_event(op, kind, True) for op in BATCHED_STEP_OPS for kind in ("err", *ALTERNATES[op])]
    return [*PATHS, *faults]


def record_paths(sbs: SideBySide) -> None:
    calls = sbs.impl.model.calls
    ops = {c.op for c in calls}
    event(f"n={len(sbs.spec.bootstrap)}" if len(sbs.spec.bootstrap) <= 2 else "n>=3")
    if "argmax_batch" in ops:
        event("batched argmax engaged")
    groups = [c for c in calls if c.op == "run_mtp_propose_batched"]
    if groups:
        event("batched propose group")
    if any("exceeds meta stride" in c.error for c in groups):
        event("meta stride overflow")
    if any(c.outcome == "none" for c in groups):
        event("group returned None")
    if "save_hidden_for_mtp_from_stash" in ops:
        event("per-sequence fallback propose")
    for c in calls:
        if c.outcome != "ok":
            event(call_event(c.op, c.outcome, c.injected))
    for d in sorted(sbs.translation.differences):
        event(f"registered difference {d}")
    if any(c.op == "save_hidden_for_mtp" and c.outcome == "err" for c in sbs.ref.model.calls):
        event("registered difference D1")
    if sbs.forced_decisions:
        event("near-tie forced")
