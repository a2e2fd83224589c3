"""Admission and release of requests: what the caches hold after admission, slots and blocks
handed out and returned, reservations, refusals and double frees."""

from __future__ import annotations

import pytest
import torch

from reference.admission import Resources, admit, can_admit, grow_tables, release
from reference.engine import Engine, abort, engine_step, submit
from reference.errors import ModelError
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.request import Request
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import SequenceState
from reference.step import step_mtp_bootstrap_per_seq

CFG = ModelConfig(max_seq_len=32, block_size=4, num_blocks=24, num_draft_blocks=24, num_slots=3, num_ssm_slots=2)
PROMPT = (7, 8, 9, 10, 11, 12)


@pytest.fixture(scope="module")
def base() -> TinyMtpModel:
    return TinyMtpModel(CFG)


def dirty(base: TinyMtpModel) -> TinyMtpModel:
    """A model whose caches, SSM states and checkpoints hold garbage, as after earlier requests."""
    model = base.clone()
    model.randomize_caches(torch.Generator().manual_seed(11))
    return model


@pytest.mark.parametrize("ssm", [True, False])
def test_admitted_request_holds_its_prompt_as_decodes_would(base: TinyMtpModel, ssm: bool) -> None:
    model, res = dirty(base), Resources.for_model(base)
    a = admit(model, res, Request(PROMPT, 8, ssm=ssm), seq_id=4)
    n = len(PROMPT)
    assert (a.seq_id, a.last_token, a.output_tokens, a.pending_drafts, a.finished) == (4, PROMPT[-1], [], [], False)
    assert a.seq.seq_len == n - 1 and a.seq.slot_idx == 0 and a.seq.ssm_slot == (CFG.num_ssm_slots - 1 if ssm else None)
    assert len(a.seq.block_table) == len(a.seq.draft_block_table) == 2  # 6 positions, blocks of 4

    # Main cache and SSM state: decoding prompt[:-1] one at a time on a fresh model.
    plain = base.clone()
    seq = SequenceState(0, a.seq.ssm_slot, 0, BlockAllocator(CFG.num_blocks, 4).alloc_for(n))
    for tok in PROMPT[:-1]:
        plain.decode(tok, seq)
    got, want = model.snapshot(a.seq), plain.snapshot(seq)
    assert bits_equal(got["kv_k"], want["kv_k"]) and bits_equal(got["kv_v"], want["kv_v"])
    if ssm:
        assert bits_equal(got["ssm_state"], want["ssm_state"]) and bits_equal(got["ckpt_state"], want["ssm_state"])
    assert got["ckpt_pos"] == n - 1

    # Drafter entries 0..n-1: (main hidden of p - 1, token p), as a prefill of the whole prompt writes them.
    full = base.clone()
    seq = SequenceState(0, a.seq.ssm_slot, 0, *(BlockAllocator(CFG.num_blocks, 4).alloc_for(n) for _ in range(2)))
    hidden = None
    for tok in PROMPT:
        hidden = full.prefill(seq, [tok], hidden)[-1]
    assert bits_equal(got["draft_kv_k"][:n], full.snapshot(seq)["draft_kv_k"][:n])


def test_release_returns_everything_and_a_double_release_fails(base: TinyMtpModel) -> None:
    model, res = dirty(base), Resources.for_model(base)
    a = admit(model, res, Request(PROMPT, 4), 0)
    release(res, a)
    assert res.blocks.free_count() == CFG.num_blocks and res.draft_blocks.free_count() == CFG.num_draft_blocks
    assert res.slots.free_count() == CFG.num_slots and res.ssm_slots.free_count() == CFG.num_ssm_slots
    assert a.seq.block_table == [] and a.seq.draft_block_table == []
    with pytest.raises(ModelError, match="not in use"):
        release(res, a)


def test_freed_slots_are_reused_after_the_unused_ones(base: TinyMtpModel) -> None:
    model, res = dirty(base), Resources.for_model(base)
    a = admit(model, res, Request(PROMPT, 4), 0)
    b = admit(model, res, Request(PROMPT, 4), 1)
    release(res, a)
    c = admit(model, res, Request(PROMPT, 4), 2)
    d = admit(model, res, Request(PROMPT, 4, ssm=False), 3)
    assert [s.seq.slot_idx for s in (a, b, c, d)] == [0, 1, 2, 0]
    assert [s.seq.ssm_slot for s in (b, c)] == [0, 1]  # SSM slots go out from the top: 1 (a's), 0, then 1 again


def test_reservations_keep_admission_from_overcommitting_blocks(base: TinyMtpModel) -> None:
    model, res = dirty(base), Resources.for_model(base)
    live = []
    for i in range(3):
        big = Request(PROMPT, 26, ssm=i < 2)  # 32 positions: 8 blocks of each cache reserved
        assert can_admit(res, big, live)
        live.append((admit(model, res, big, i), big))
    assert res.blocks.free_count() == CFG.num_blocks - 3 * 2  # only the prompts' blocks allocated so far
    assert not can_admit(res, Request((5,), 1, ssm=False), live)  # no slot left, and no block either
    for a, req in live:
        a.seq.seq_len = req.positions() - 1
        grow_tables(model, res, a, req, ladder_nd=3)
    assert res.blocks.free_count() == 0 and res.draft_blocks.free_count() == 0
    with pytest.raises(ModelError, match="exhausted"):
        res.blocks.alloc(1)


def test_grow_tables_covers_what_the_step_writes(base: TinyMtpModel) -> None:
    model, res = dirty(base), Resources.for_model(base)
    req = Request(PROMPT, 20)
    a = admit(model, res, req, 0)
    grow_tables(model, res, a, req, ladder_nd=3)
    assert len(a.seq.block_table) * 4 >= a.seq.seq_len + 1  # the bootstrap decodes seq_len
    assert len(a.seq.draft_block_table) * 4 >= a.seq.seq_len + 1 + 3  # and proposes 3 from seq_len + 1
    a.pending_drafts = [5, 6, 7, 8]
    grow_tables(model, res, a, req, ladder_nd=3)
    assert len(a.seq.block_table) * 4 >= a.seq.seq_len + 5  # a verify decodes seq_len..seq_len+4
    assert len(a.seq.draft_block_table) * 4 >= a.seq.seq_len + 6  # its rollback writes up to seq_len+5
    new = a.seq.draft_block_table[-1]
    assert not model.draft_kv.k[:, new].any() and not model.draft_kv.v[:, new].any()


def test_engine_refuses_what_it_can_never_hold_and_queues_what_does_not_fit_now(base: TinyMtpModel) -> None:
    eng = Engine.create(dirty(base), SchedCtx(), LogitsContext(), 2)
    with pytest.raises(ValueError, match="exceed max_seq_len"):
        submit(eng, Request(PROMPT, 27))
    with pytest.raises(ValueError, match="empty prompt"):
        submit(eng, Request((), 3))
    ids = [submit(eng, Request(PROMPT, 20)) for _ in range(4)]
    rec = engine_step(eng, step_mtp_bootstrap_per_seq)
    assert rec.admitted == ids[:2] and [sid for sid, _ in eng.waiting] == ids[2:]  # two SSM slots
    assert abort(eng, ids[3]) and eng.finished[ids[3]].aborted and [sid for sid, _ in eng.waiting] == [ids[2]]
    assert abort(eng, ids[0]) and eng.finished[ids[0]].aborted and not abort(eng, ids[0])
    assert [a.seq_id for a in eng.active] == [ids[1]] and eng.resources.ssm_slots.free_count() == 1
    assert engine_step(eng, step_mtp_bootstrap_per_seq).admitted == [ids[2]]
