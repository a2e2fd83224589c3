"""Failure reports for whole generations: the script (the shrunk rule sequence as actions), the step
and the request where the two engines' worlds first differ, the first difference per request, and
the commands that replay the script and promote it to a regression."""

from __future__ import annotations

from pathlib import Path

from properties.failures.report import first_differences, replay_command, save_json
from properties.generations.pair import EnginePair
from properties.generations.spec import Script
from properties.sides.mismatch import Mismatch
from properties.worlds.specs import changed_fields


def save_script(script: Script, folder: Path) -> Path:
    """Write the script as JSON under `folder`; the file name is its content hash."""
    return save_json(script.to_json(), folder, "generation-")


def format_generation_report(title: str, pair: EnginePair, mismatches: list[Mismatch]) -> str:
    """The report for a failing script: `pair.script` ends with the action that failed."""
    path = save_script(pair.script, pair.replays)
    spec = pair.spec
    lines = [
        f"{title}: {len(mismatches)} difference(s) at engine step {pair.stats.steps} "
        f"(action {len(pair.script.actions)} of the script)",
        "",
        f"model: {changed_fields(spec.model) or 'defaults'}",
        f"step: {changed_fields(spec.step) or 'defaults'}",
        f"cache_seed: {spec.cache_seed}  blocks per cache: {spec.num_blocks or 'room for every slot'}",
        "",
        "script (the last action is where the worlds first differ):",
    ]
    lines += [f"  {i + 1:>3}. {text}" for i, text in enumerate(pair.script.summary())]
    lines += [
        "",
        "first difference per request (expected: the loop engine's, or the solo decode's; got: the engine "
        "bootstrapping through the implementation):",
    ]
    lines += first_differences(mismatches, "request", ("expected:", "got:     "), "the run")
    s = pair.stats
    lines += [
        "",
        f"so far: {s.steps} steps ({s.batched_bootstraps} batched bootstraps), {s.generations} requests finished, "
        f"{s.faults_fired} faults fired, D1 entries open: {sorted(pair.open_d1)}",
        "",
        f"replay: {replay_command(path, pair.impl.name)}",
        f"promote: python -m properties.promote {path} --name NAME --note 'what it caught'",
    ]
    return "\n".join(lines)
