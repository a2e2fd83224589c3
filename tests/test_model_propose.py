"""Per-sequence drafter proposes: recursion, decisions and their keys, masks, confidences, what a
propose writes, and failing proposes that change nothing."""

from __future__ import annotations

import copy

import pytest
import torch

from reference.decisions import DecisionKey, DecisionLog
from reference.errors import ModelError, format_chain
from reference.model.config import ModelConfig
from reference.model.drafter import drafter_rows
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator, pack_sections, row_meta, row_sections
from reference.state import SequenceState

CFG = ModelConfig(max_seq_len=64, num_blocks=32, num_draft_blocks=32, num_slots=8, num_ssm_slots=8)


@pytest.fixture
def world() -> tuple[TinyMtpModel, SequenceState]:
    """A model with random caches and one sequence of length 20 whose last decode was just saved."""
    model = TinyMtpModel(CFG)
    gen = torch.Generator().manual_seed(4)
    model.randomize_caches(gen)
    main = BlockAllocator(CFG.num_blocks, CFG.block_size, gen)
    seq = main.sequence(BlockAllocator(CFG.num_draft_blocks, CFG.block_size, gen), 3, 2, 20, room=1, draft_room=12)
    model.poison_scratch()
    model.decode(17, seq)
    model.save_hidden_for_mtp(seq)
    return model, seq


def test_drafts_follow_the_recursion(world: tuple[TinyMtpModel, SequenceState]) -> None:
    """k drafts at once equal k one-draft proposes chained through hidden_states and the last draft."""
    model, seq = world
    other = model.clone()
    drafts = model.run_mtp_propose_multi(42, 21, 4, seq)
    assert len(drafts) == 4 and all(0 <= d < CFG.vocab_size for d in drafts)
    chained, token = [], 42
    for i in range(4):
        (d,) = other.run_mtp_propose_multi(token, 21 + i, 1, seq)
        other.mtp_hidden_in.copy_(other.hidden_states[0])  # the step's output hidden feeds the next
        chained.append(d)
        token = d
    assert chained == drafts
    assert model.diff_state(other) == ["mtp_hidden_in"]


def test_every_draft_is_a_recorded_decision_and_forcing_one_steers_the_rest(
    world: tuple[TinyMtpModel, SequenceState],
) -> None:
    model, seq = world
    forced_run, replay = model.clone(), model.clone()
    with DecisionLog() as log:
        drafts = model.run_mtp_propose_multi(42, 21, 3, seq)
    assert [r.key for r in log.records] == [DecisionKey(3, 21, "draft", i) for i in range(3)]
    assert [r.chosen for r in log.records] == drafts
    assert all(r.margin > 0 and not r.forced for r in log.records)
    other = (drafts[0] + 1) % CFG.vocab_size
    with DecisionLog(forced={DecisionKey(3, 21, "draft", 0): other}) as log2:
        forced = forced_run.run_mtp_propose_multi(42, 21, 3, seq)
    assert forced[0] == other and log2.records[0].forced
    # The drafts after a forced one continue from it: step 1 takes (step 0's hidden, `other`).
    replay.run_mtp_propose_multi(42, 21, 1, seq)
    replay.mtp_hidden_in.copy_(replay.hidden_states[0])
    assert replay.run_mtp_propose_multi(other, 22, 2, seq) == forced[1:]


def test_confidences_are_the_softmax_probability_of_each_draft(
    world: tuple[TinyMtpModel, SequenceState],
) -> None:
    model, seq = world
    plain, probe = model.clone(), model.clone()
    conf: list[float] = [9.0]
    drafts = model.run_mtp_propose_multi(42, 21, 3, seq, conf_out=conf)
    assert drafts == plain.run_mtp_propose_multi(42, 21, 3, seq)
    assert len(conf) == 3 and all(0.0 < c <= 1.0 for c in conf)
    # Each draft's probability from its own logits row, recomputed outside the model.
    hidden, token = probe.mtp_hidden_in[None], 42
    for i in range(3):
        views = pack_sections([[token], *row_sections([21 + i], [seq.draft_block_table], 5, 16)], probe.device)
        hidden, logits = drafter_rows(
            probe.nm, CFG, probe.weights, probe.draft_kv, hidden, views[0], row_meta(views[1:], 5)
        )
        assert conf[i] == pytest.approx(float(torch.softmax(logits[0].double(), -1)[drafts[i]]), rel=1e-6)
        token = drafts[i]


def test_mask_restricts_the_first_draft_only(world: tuple[TinyMtpModel, SequenceState]) -> None:
    model, seq = world
    free = model.clone().run_mtp_propose_multi(42, 21, 3, seq)
    mask = torch.zeros(CFG.vocab_size, dtype=torch.bool)
    mask[[5, 77, 123]] = True
    conf: list[float] = []
    masked = model.run_mtp_propose_multi(42, 21, 3, seq, mask=mask, conf_out=conf)
    assert masked[0] in (5, 77, 123)
    assert conf[0] > 0.0
    if free[0] in (5, 77, 123):
        assert masked == free


def test_propose_writes_only_its_drafter_positions_and_row_zero(
    world: tuple[TinyMtpModel, SequenceState],
) -> None:
    model, seq = world
    before = model.clone()
    snap = model.snapshot(seq)
    model.run_mtp_propose_multi(42, 21, 3, seq)
    after = model.snapshot(seq)
    changed = (after["draft_kv_k"] != snap["draft_kv_k"]).flatten(1).any(dim=1).nonzero().flatten().tolist()
    assert changed == [21, 22, 23]
    assert sorted(model.diff_state(before)) == ["draft_kv.k", "draft_kv.v", "hidden_states"]
    assert bits_equal(model.hidden_states[1:], before.hidden_states[1:])


def test_zero_drafts_read_nothing(world: tuple[TinyMtpModel, SequenceState]) -> None:
    model, seq = world
    model.poison_scratch()
    before = model.clone()
    conf = [1.0]
    assert model.run_mtp_propose_multi(42, 21, 0, seq, conf_out=conf) == [] and conf == []
    assert model.diff_state(before) == []


def _bad_proposes() -> list[tuple[str, dict]]:
    return [
        ("out of vocabulary", {"token": CFG.vocab_size}),
        ("k=9 drafts", {"k": 9}),
        ("k=-1 drafts", {"k": -1}),
        ("drafter block table of 2 blocks does not cover position 32", {"position": 30}),
        ("drafter position -1 negative", {"position": -1}),
        ("grammar mask allows no token", {"mask": torch.zeros(CFG.vocab_size, dtype=torch.bool)}),
        ("grammar mask must be bool", {"mask": torch.ones(CFG.vocab_size)}),
        ("rank 2 out of range", {"rank": 2}),
    ]


@pytest.mark.parametrize(("message", "change"), _bad_proposes(), ids=lambda x: str(x)[:24])
def test_failing_propose_changes_nothing(world: tuple[TinyMtpModel, SequenceState], message: str, change: dict) -> None:
    model, seq = world
    args = {"token": 42, "position": 21, "k": 3, "seq": seq, "rank": 0, "mask": None} | change
    before, seq_before, conf = model.clone(), copy.deepcopy(seq), [0.5]
    with pytest.raises(ModelError) as info:
        model.run_mtp_propose_multi(**args, conf_out=conf)
    assert message in format_chain(info.value)
    assert info.value.chain()[0] == "run_mtp_propose_multi"
    assert model.diff_state(before) == [] and seq == seq_before and conf == [0.5]


def test_propose_past_the_drafter_length_fails() -> None:
    model = TinyMtpModel(CFG)
    seq = SequenceState(0, 0, 60, [0] * 4, list(range(6)))  # covers drafter positions < 96
    with pytest.raises(ModelError) as info:
        model.run_mtp_propose_multi(1, CFG.draft_span - 1, 2, seq)
    assert "past the drafter's length 80" in format_chain(info.value)


def test_unwritten_drafter_input_is_caught(world: tuple[TinyMtpModel, SequenceState]) -> None:
    model, seq = world
    model.mtp_hidden_in.fill_(float("nan"))
    before = model.clone()
    with pytest.raises(ModelError) as info:
        model.run_mtp_propose_multi(42, 21, 2, seq)
    assert format_chain(info.value).startswith("run_mtp_propose_multi: drafter input is not finite")
    assert model.diff_state(before) == []
