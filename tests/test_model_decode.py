"""Per-sequence decode over the paged cache: equal to a from-scratch forward, across block
boundaries and with sequences sharing the cache; checkpoints; scratch; failing decodes change nothing."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from reference.errors import ModelError, format_chain
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.state import SequenceState

CFG = ModelConfig(n_attn_layers=2, max_seq_len=64, num_blocks=48, num_draft_blocks=48, num_slots=8, num_ssm_slots=8)


@pytest.fixture(scope="module")
def base() -> TinyMtpModel:
    return TinyMtpModel(CFG)


def _allocators(seed: int, cfg: ModelConfig = CFG) -> tuple[BlockAllocator, BlockAllocator]:
    g = torch.Generator().manual_seed(seed)
    return BlockAllocator(cfg.num_blocks, cfg.block_size, g), BlockAllocator(cfg.num_draft_blocks, cfg.block_size, g)


def _tokens(seed: int, n: int) -> list[int]:
    return torch.randint(0, CFG.vocab_size, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_interleaved_paged_decodes_equal_forward_full(dtype: str) -> None:
    """Three sequences with scattered blocks decode turn by turn, past several block boundaries;
    each one's logits equal the from-scratch forward of its tokens, bit for bit."""
    cfg = replace(CFG, dtype=dtype)
    model = TinyMtpModel(cfg)
    model.randomize_caches(torch.Generator().manual_seed(5))  # stale KV everywhere must not leak
    main, draft = _allocators(1, cfg)
    seqs = [
        main.sequence(draft, slot_idx=i, ssm_slot=i, seq_len=0, room=cfg.max_seq_len, draft_room=1) for i in range(3)
    ]
    for s in seqs:
        model.ssm.state[s.ssm_slot].zero_()
    toks = [_tokens(10 + i, n) for i, n in enumerate((40, 33, 17))]
    got: list[list[torch.Tensor]] = [[], [], []]
    for t in range(max(map(len, toks))):
        for i, s in enumerate(seqs):
            if t < len(toks[i]):
                got[i].append(model.decode(toks[i][t], s))
    for i in range(3):
        assert seqs[i].seq_len == len(toks[i])
        assert bits_equal(torch.stack(got[i]), model.forward_full(toks[i])), f"sequence {i}"


def test_prefill_then_decode_equals_forward_full(base: TinyMtpModel) -> None:
    model = base.clone()
    main, draft = _allocators(2)
    seq = main.sequence(draft, 0, 3, 0, room=CFG.max_seq_len, draft_room=40)
    toks = _tokens(3, 37)
    model.prefill(seq, toks[:20])
    hidden = model.prefill(seq, toks[20:36])
    assert hidden.shape == (16, CFG.hidden)
    last = model.decode(toks[36], seq)
    assert bits_equal(last, model.forward_full(toks)[36])
    assert seq.seq_len == 37


def test_prefill_equals_decodes_in_caches(base: TinyMtpModel) -> None:
    """Prefill writes the same main KV and SSM state as decoding token by token."""
    a, b = base.clone(), base.clone()
    main, draft = _allocators(3)
    sa = main.sequence(draft, 1, 1, 0, room=CFG.max_seq_len, draft_room=30)
    sb = copy.deepcopy(sa)
    toks = _tokens(4, 29)
    a.prefill(sa, toks)
    for t in toks:
        b.decode(t, sb)
    ra, rb = a.snapshot(sa), b.snapshot(sb)
    for key in ("kv_k", "kv_v", "ssm_state"):
        assert bits_equal(ra[key], rb[key]), key


def test_checkpoint_then_restore_gives_the_state_back(base: TinyMtpModel) -> None:
    model = base.clone()
    model.randomize_caches(torch.Generator().manual_seed(9))
    main, draft = _allocators(4)
    seq = main.sequence(draft, 2, 5, 6, room=20, draft_room=1)
    toks = _tokens(5, 8)
    for t in toks[:3]:
        model.decode(t, seq)
    model.start_checkpoint_async(seq)
    saved = model.ssm.state[5].clone()
    assert model.snapshot(seq)["ckpt_pos"] == 9
    logits_then = [model.decode(t, seq) for t in toks[3:]]
    assert not bits_equal(model.ssm.state[5], saved)
    model.restore_checkpoint(seq)
    assert seq.seq_len == 9
    assert bits_equal(model.ssm.state[5], saved)
    assert bits_equal(model.ssm.ckpt[5], saved)
    assert all(bits_equal(model.decode(t, seq), lg) for t, lg in zip(toks[3:], logits_then, strict=True))


def test_restore_without_checkpoint_fails(base: TinyMtpModel) -> None:
    seq = SequenceState(slot_idx=3, ssm_slot=3, seq_len=4, block_table=[0])
    with pytest.raises(ModelError) as info:
        base.clone().restore_checkpoint(seq)
    assert format_chain(info.value) == "restore_checkpoint: sequence slot 3: no checkpoint to restore"


def test_sequence_without_ssm_slot_runs_from_zero_state_and_stores_nothing(base: TinyMtpModel) -> None:
    a = base.clone()
    a.randomize_caches(torch.Generator().manual_seed(2))
    b = a.clone()
    main, draft = _allocators(5)
    plain = main.sequence(draft, 4, None, 10, room=5, draft_room=1)
    slotted = SequenceState(4, 6, 10, list(plain.block_table))  # the same KV, with SSM slot 6
    toks = _tokens(6, 3)
    before = a.ssm.state.clone()
    got = [a.decode(t, plain) for t in toks]
    assert bits_equal(a.ssm.state, before)
    for t, want in zip(toks, got, strict=True):
        b.ssm.state[6].zero_()
        assert bits_equal(b.decode(t, slotted), want)
    a.start_checkpoint_async(plain)
    snap = a.snapshot(plain)
    assert snap["ckpt_pos"] == 13 and "ckpt_state" not in snap and "ssm_state" not in snap


def test_decode_writes_row_zero_of_hidden_states_and_save_copies_it(base: TinyMtpModel) -> None:
    model = base.clone()
    model.poison_scratch()
    main, draft = _allocators(6)
    seq = main.sequence(draft, 0, 0, 0, room=4, draft_room=4)
    model.decode(_tokens(7, 1)[0], seq)
    assert torch.isfinite(model.hidden_states[0]).all()
    assert torch.isnan(model.hidden_states[1:]).all()
    assert torch.isnan(model.mtp_hidden_in).all()
    model.save_hidden_for_mtp(seq)
    assert bits_equal(model.mtp_hidden_in, model.hidden_states[0])


def _bad_decodes() -> list[tuple[str, int, SequenceState]]:
    ok_table = [3, 4]
    return [
        ("out of vocabulary", CFG.vocab_size, SequenceState(0, 0, 5, ok_table)),
        ("out of vocabulary", -1, SequenceState(0, 0, 5, ok_table)),
        ("leaves no room", 1, SequenceState(0, 0, CFG.max_seq_len, list(range(5)))),
        ("does not cover position 32", 1, SequenceState(0, 0, 32, ok_table)),
        ("does not cover position 0", 1, SequenceState(0, 0, 0, [])),
        ("block id 48 out of range", 1, SequenceState(0, 0, 5, [48])),
        ("sequence slot 8 out of range", 1, SequenceState(8, 0, 5, ok_table)),
        ("SSM slot 8 out of range", 1, SequenceState(0, 8, 5, ok_table)),
    ]


@pytest.mark.parametrize(("message", "token", "seq"), _bad_decodes(), ids=lambda x: str(x)[:30])
def test_failing_decode_changes_nothing(base: TinyMtpModel, message: str, token: int, seq: SequenceState) -> None:
    model = base.clone()
    model.randomize_caches(torch.Generator().manual_seed(1))
    model.poison_scratch()
    before, seq_before = model.clone(), copy.deepcopy(seq)
    with pytest.raises(ModelError) as info:
        model.decode(token, seq)
    assert message in format_chain(info.value)
    assert info.value.chain()[0] == "decode"
    assert model.diff_state(before) == []
    assert seq == seq_before


def test_decode_rejects_other_ranks(base: TinyMtpModel) -> None:
    with pytest.raises(ModelError) as info:
        base.clone().decode(1, SequenceState(0, 0, 0, [0]), rank=1)
    assert "rank 1 out of range" in format_chain(info.value)
