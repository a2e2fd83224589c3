"""The per-sequence reference step on hand-built mixes: tokens, drafts, checkpoints and finish
states as the semantics page says, including a decode failure and a save-hidden failure."""

from __future__ import annotations

import pytest
import torch

from properties.sides.faults import FaultyModel
from properties.worlds.fault_kinds import SeqFault
from properties.worlds.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from properties.worlds.world import World, build_world
from reference.state import FinishReason, SpeculationMode
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture


def world(*seqs: SeqSpec, ladder: int = 3) -> World:
    spec = WorldSpec(
        model=ModelSpec(), seqs=seqs, bootstrap=tuple(range(len(seqs))), step=StepSpec(ladder_nd=ladder), cache_seed=3
    )
    return build_world(spec)


def run(w: World, faults: list[SeqFault] | None = None) -> tuple[FaultyModel, LogCapture]:
    model = FaultyModel(w.model, (), faults or [])
    with LogCapture() as cap:
        step_mtp_bootstrap_per_seq(model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
    return model, cap


def seq(i: int, **kw: object) -> SeqSpec:
    return SeqSpec(cache_len=6 + 5 * i, slot_idx=i, ssm_slot=i, token_seed=100 + i, **kw)  # type: ignore[arg-type]


def test_greedy_token_and_drafts_match_the_model_called_by_hand() -> None:
    w = world(seq(0), seq(1))
    by_hand = w.clone()
    run(w)
    for a, h in zip(w.active, by_hand.active, strict=True):
        logits = by_hand.model.decode(h.last_token, h.seq)
        tok = int(torch.argmax(logits))
        by_hand.model.save_hidden_for_mtp(h.seq)
        drafts = by_hand.model.run_mtp_propose_multi(tok, h.seq.seq_len, 3, h.seq)
        assert a.output_tokens[-1] == tok and a.last_token == tok
        assert a.pending_drafts == drafts and len(drafts) == 3
        assert a.pending_draft_conf == []  # D4: the per-sequence propose records none
        assert w.model.snapshot(a.seq)["ckpt_pos"] == a.seq.seq_len == h.seq.seq_len
        assert not a.finished


def test_last_allowed_token_finishes_with_length_and_skips_drafts_and_checkpoint() -> None:
    w = world(seq(0, max_tokens_left=1), seq(1))
    before = w.model.snapshot(w.active[0].seq)["ckpt_pos"]
    model, _ = run(w)
    a = w.active[0]
    assert a.finished and a.finish_reason == FinishReason.LENGTH and len(a.output_tokens) == 1
    assert a.pending_drafts == [] and w.model.snapshot(a.seq)["ckpt_pos"] == before
    assert [c.slots for c in model.calls if c.op == "start_checkpoint_async"] == [(1,)]


def test_decode_failure_finishes_only_that_sequence() -> None:
    w = world(seq(0), seq(1), seq(2))
    _, cap = run(w, [SeqFault("decode", 1, "err")])
    a = w.active[1]
    assert a.finished and a.finish_reason is None and a.output_tokens == [] and a.seq.seq_len == 11
    assert all(len(b.output_tokens) == 1 and b.pending_drafts for b in (w.active[0], w.active[2]))
    assert [r.level for r in cap.records] == ["ERROR"] and "decode" in cap.records[0].message


def test_save_hidden_failure_skips_the_propose_and_the_checkpoint() -> None:
    w = world(seq(0), seq(1))
    before = w.model.snapshot(w.active[0].seq)["ckpt_pos"]
    model, cap = run(w, [SeqFault("save_hidden_for_mtp", 0, "err")])
    a = w.active[0]
    assert len(a.output_tokens) == 1 and not a.finished and a.pending_drafts == []
    assert w.model.snapshot(a.seq)["ckpt_pos"] == before, "the loop's continue skips the checkpoint (D1)"
    assert [c.slots for c in model.calls if c.op == "run_mtp_propose_multi"] == [(1,)]
    assert any("save_hidden_for_mtp" in r.message for r in cap.records if r.level == "ERROR")


def test_backed_off_sequence_checkpoints_without_proposing_and_reprobe_proposes() -> None:
    w = world(seq(0, spec="backed_off"), seq(1, spec="reprobe"))
    model, _ = run(w)
    assert w.active[0].pending_drafts == [] and w.active[1].pending_drafts
    assert w.active[1].adaptive_spec.probes == 2 and w.active[1].adaptive_spec.mode == SpeculationMode.BACKED_OFF
    assert [c.slots for c in model.calls if c.op == "start_checkpoint_async"] == [(0,), (1,)]


def test_grammar_sequence_stays_in_its_grammar_and_drafts_at_most_one() -> None:
    w = world(seq(0, grammar="json", n_out=3, temperature=1.0), seq(1, grammar="regex"))
    run(w)
    for a in w.active:
        assert a.grammar_state is not None and a.grammar_state.accepted == a.output_tokens
        assert len(a.pending_drafts) <= 1


def test_empty_propose_warns_and_leaves_no_drafts() -> None:
    w = world(seq(0), seq(1))
    _, cap = run(w, [SeqFault("run_mtp_propose_multi", 0, "empty")])
    assert w.active[0].pending_drafts == [] and w.active[1].pending_drafts
    assert [(r.level, r.message) for r in cap.records] == [("WARNING", "MTP propose returned empty")]


@pytest.mark.parametrize("idxs", [[1, 0], [0, 0], [0, 5], [-1]])
def test_bad_indices_raise_before_any_sequence_is_touched(idxs: list[int]) -> None:
    w = world(seq(0), seq(1))
    with pytest.raises(ValueError, match="bootstrap ind"):
        step_mtp_bootstrap_per_seq(w.model, w.active, w.sched, idxs, 3, w.verify_ctx)
    assert all(
        a.output_tokens == [] and a.seq.seq_len == s.cache_len for a, s in zip(w.active, (seq(0), seq(1)), strict=True)
    )
