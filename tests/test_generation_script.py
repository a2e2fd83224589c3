"""P9's scripts: JSON round trip, a replay that passes, a replay against a broken implementation that
fails at the step where the worlds first differ, with a report naming it, and promotion."""

from __future__ import annotations

from pathlib import Path

import pytest

from batched.step import step_mtp_bootstrap_batched
from properties.generations.promote import GENERATION_REGRESSIONS, promote
from properties.generations.replay import read_script
from properties.generations.report import format_generation_report
from properties.generations.run import run_script
from properties.generations.spec import Action, GenerationSpec, RequestSpec, Script
from properties.impl import load, plain
from properties.worlds.specs import FaultSpec, ModelSpec, StepSpec

SPEC = GenerationSpec(ModelSpec(block_size=4, max_seq_len=32, num_slots=4), StepSpec(spec_backoff_steps=1), 7)
SCRIPT = Script(
    SPEC,
    [
        Action("add", request=RequestSpec(prompt=(5, 6, 7), max_tokens=9)),
        Action("add", request=RequestSpec(prompt=(8,), max_tokens=12, temperature=1.0, seed=3, grammar="regex")),
        Action("step"),
        Action("add", request=RequestSpec(prompt=(9, 10), max_tokens=6, stop_ids=(11,), ssm=False)),
        Action("add", request=RequestSpec(prompt=(12, 13), max_tokens=5, top_logprobs=2)),
        Action("step"),  # bootstraps the two new requests together while the first two verify
        Action("fault", fault=FaultSpec("stash_verify_hidden_rows")),
        Action("step"),  # bootstraps the first two together: their stash fails
        Action("abort", seq_id=2),
        Action("drain"),
    ],
    "a hand-written script",
)


def test_script_json_round_trip() -> None:
    again = Script.from_json(SCRIPT.to_json())
    assert again.spec == SCRIPT.spec and again.actions == SCRIPT.actions and again.note == SCRIPT.note
    assert Script.from_json(SCRIPT.to_json(indent=1)).actions == SCRIPT.actions
    assert SCRIPT.summary()[5:8] == ["step 2", "fault stash_verify_hidden_rows call 0 -> err", "step 3"]


def test_the_script_replays_without_a_difference() -> None:
    run = run_script(SCRIPT, load("literal"))
    assert run.failed_at is None, run.mismatches
    s = run.pair.stats
    assert s.generations == 4 and s.reasons["aborted"] == 1 and s.batched_bootstraps >= 1
    assert s.d1_opened >= 1, "the stash failure engaged D1"
    assert not run.pair.live_ids() and not run.pair.open_d1


def drafts_dropped(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
    """A broken implementation: the batched step, after which every sequence outside its rows loses
    its pending drafts."""
    step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
    for i, a in enumerate(active):
        if i not in idxs:
            a.pending_drafts = []


def test_a_broken_implementation_fails_at_the_first_differing_step(tmp_path: Path) -> None:
    run = run_script(SCRIPT, plain(drafts_dropped))
    assert run.failed_at == 5, "the second step: the first two requests lose their drafts before their verify"
    text = format_generation_report("P9 generations", run.pair, run.mismatches)
    assert "difference(s) at engine step" in text and "replay: python -m properties.replay" in text
    assert any(m.field.startswith("step: ") or m.field == "pending_drafts" for m in run.mismatches)


def test_promotion_keeps_the_script_on_the_cpu_with_its_note(tmp_path: Path) -> None:
    src = tmp_path / "generation-x.json"
    src.write_text(SCRIPT.to_json())
    dest = promote(src, "hand-written", "what it caught", dest_dir=tmp_path / "kept")
    kept = Script.from_json(dest.read_text())
    assert kept.spec.model.device == "cpu" and kept.note == "what it caught" and kept.actions == SCRIPT.actions
    src.write_text(Script(SPEC, SCRIPT.actions[:2]).to_json())
    with pytest.raises(FileExistsError):
        promote(src, "hand-written", dest_dir=tmp_path / "kept")
    with pytest.raises(ValueError, match="--name"):
        promote(src, "Bad Name", dest_dir=tmp_path / "kept")


def test_a_verify_that_restores_d1s_differing_checkpoints_leaves_equal_worlds() -> None:
    run = run_script(read_script(GENERATION_REGRESSIONS / "d1-checkpoint-read-by-a-later-verify.json"), load("literal"))
    assert run.failed_at is None, run.mismatches
    assert run.pair.stats.d1_opened == 2 and run.pair.stats.d1_reads == 1 and not run.pair.open_d1
