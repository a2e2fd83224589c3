"""Hypothesis `event`/`target` calls that show which paths an example really took."""

from __future__ import annotations

from hypothesis import event, target

from properties.harness import SideBySide


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
            event(f"{c.op} -> {c.outcome}" + (" (injected)" if c.injected else ""))
    for d in sorted(sbs.translation.differences):
        event(f"registered difference {d}")
    if any(c.op == "save_hidden_for_mtp" and c.outcome == "err" for c in sbs.ref.model.calls):
        event("registered difference D1")
    if sbs.near_ties:
        event("near-tie forced")
    target(float(len(sbs.spec.bootstrap)), label="rows bootstrapped")
