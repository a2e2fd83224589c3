"""Run a P9 script (a replay file or a regression) on a fresh engine pair and stop at the first
action whose checks find a difference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from properties.config import DEFAULT_REPLAYS
from properties.generations.pair import EnginePair
from properties.generations.spec import Action, Script
from properties.impl import Impl
from properties.sides.mismatch import Mismatch


@dataclass(slots=True)
class ScriptRun:
    """The pair after the run, the index of the first failing action (None: none failed) and what
    it found."""

    pair: EnginePair
    failed_at: int | None = None
    mismatches: list[Mismatch] = field(default_factory=list)


def apply_action(pair: EnginePair, action: Action) -> list[Mismatch]:
    """Do one action to both engines and return what the checks found."""
    if action.kind == "add" and action.request is not None:
        pair.add(action.request)
        return []
    if action.kind == "fault" and action.fault is not None:
        pair.plan_fault(action.fault)
        return []
    if action.kind == "abort" and action.seq_id is not None:
        return pair.abort(action.seq_id)
    if action.kind == "step":
        return pair.step()
    if action.kind == "drain":
        return pair.drain()
    raise ValueError(f"unknown script action {action!r}")


def run_script(script: Script, impl: Impl, replays: Path = DEFAULT_REPLAYS) -> ScriptRun:
    """Replay `script` against `impl`; a failure's replay goes under `replays`."""
    run = ScriptRun(EnginePair(script.spec, impl, replays))
    for i, action in enumerate(script.actions):
        found = apply_action(run.pair, action)
        if found:
            run.failed_at, run.mismatches = i, found
            break
    return run
