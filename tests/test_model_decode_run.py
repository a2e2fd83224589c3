"""`TinyMtpModel.decode_run` (a verify's target pass): bit-equal to decoding the tokens one at a
time, across block boundaries, with and without an SSM slot; a failing run changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from reference.errors import ModelError
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.state import SequenceState

CFG = ModelConfig(max_seq_len=64, block_size=8, num_blocks=32, num_draft_blocks=32, num_slots=4, num_ssm_slots=4)


def _seq(ssm_slot: int | None) -> SequenceState:
    blocks = BlockAllocator(CFG.num_blocks, CFG.block_size, torch.Generator().manual_seed(4))
    return SequenceState(1, ssm_slot, 0, blocks.alloc_for(CFG.max_seq_len))


def _tokens(seed: int, n: int) -> list[int]:
    return torch.randint(3, CFG.vocab_size, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ssm_slot", [2, None])
@pytest.mark.parametrize(("prefix", "run"), [(5, 1), (6, 4), (13, 9), (0, 3)])
def test_decode_run_equals_decodes_one_at_a_time(dtype: str, ssm_slot: int | None, prefix: int, run: int) -> None:
    cfg = replace(CFG, dtype=dtype)
    one = TinyMtpModel(cfg)
    one.randomize_caches(torch.Generator().manual_seed(9))
    many = one.clone()
    s1, s2 = _seq(ssm_slot), _seq(ssm_slot)
    toks = _tokens(prefix * 31 + run, prefix + run)
    for t in toks[:prefix]:
        one.decode(t, s1)
        many.decode(t, s2)
    singles = [one.decode(t, s1) for t in toks[prefix:]]
    hidden_last = one.hidden_states[0].clone()
    logits = many.decode_run(s2, toks[prefix:])
    assert logits.shape == (run, cfg.vocab_size)
    assert bits_equal(logits, torch.stack(singles))
    assert s1.seq_len == s2.seq_len == prefix + run
    assert bits_equal(many.hidden_states[run - 1], hidden_last)
    assert many.diff_state(one) == ["hidden_states"] or many.diff_state(one) == []


@pytest.mark.parametrize(
    ("what", "tokens", "seq_len"),
    [
        ("no tokens", [], 3),
        ("out of vocabulary", [5, CFG.vocab_size], 3),
        ("exceed max_seq_len", [5, 6, 7], CFG.max_seq_len - 2),
    ],
)
def test_failing_decode_run_changes_nothing(what: str, tokens: list[int], seq_len: int) -> None:
    model = TinyMtpModel(CFG)
    model.randomize_caches(torch.Generator().manual_seed(2))
    before = model.clone()
    seq = replace(_seq(0), seq_len=seq_len)
    with pytest.raises(ModelError) as info:
        model.decode_run(seq, tokens)
    assert info.value.chain()[0] == "decode_run", what
    assert seq.seq_len == seq_len and model.diff_state(before) == []


def test_decode_run_needs_a_table_covering_its_last_position() -> None:
    model = TinyMtpModel(CFG)
    seq = SequenceState(0, 0, 6, [3])  # one block of 8 positions: 6 and 7 fit, 8 does not
    model.decode_run(seq, [4, 5])
    with pytest.raises(ModelError) as info:
        model.decode_run(seq, [4])
    assert "does not cover position 8" in ": ".join(info.value.chain())
