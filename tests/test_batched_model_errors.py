"""Every precondition of the batched operations is a clear ModelError, and a failing call changes
nothing: caches, checkpoints, scratch, the sequences and conf_out stay as they were."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

from batched.batched_model import BatchedMtpModel
from reference.errors import ModelError, format_chain
from reference.model.config import ModelConfig
from reference.sched_ctx import ENV_PROPOSE_META_STRIDE
from reference.state import SequenceState

CFG = ModelConfig(max_seq_len=64, num_blocks=64, num_draft_blocks=64, num_slots=8, num_ssm_slots=8, stash_capacity=4)


@pytest.fixture(scope="module")
def base() -> BatchedMtpModel:
    model = BatchedMtpModel(CFG, env={})
    model.randomize_caches(torch.Generator().manual_seed(0))
    model.hidden_states.normal_(generator=torch.Generator().manual_seed(1))
    model.stash.normal_(generator=torch.Generator().manual_seed(2))  # type: ignore[union-attr]
    return model


def _seqs() -> list[SequenceState]:
    """Three sequences sorted by SSM slot (the middle one has none: slot_idx 4 is its key)."""
    return [
        SequenceState(0, 1, 10, [0], [10, 11]),
        SequenceState(4, None, 20, [1, 2], [12, 13, 14]),
        SequenceState(2, 6, 40, [3, 4, 5], [15, 16, 17, 18]),
    ]


def _expect_unchanged_failure(model: BatchedMtpModel, call: Callable[[], object], *messages: str) -> ModelError:
    before = model.clone()
    with pytest.raises(ModelError) as info:
        call()
    chain = format_chain(info.value)
    for m in messages:
        assert m in chain, chain
    assert model.diff_state(before) == []
    return info.value


DECODE_CASES: dict[str, tuple[Callable[[list[SequenceState], list[int]], None], str]] = {
    "unsorted": (
        lambda s, t: s.reverse(),
        "rows not sorted by SSM slot: row 1 (slot 4) after row 0 (slot 6)",
    ),
    "duplicate ssm slot": (lambda s, t: setattr(s[2], "ssm_slot", 1), "duplicate SSM slot among rows"),
    "duplicate sequence slot": (lambda s, t: setattr(s[2], "slot_idx", 0), "sequence slot 0 appears twice"),
    "out-of-vocab token": (
        lambda s, t: t.__setitem__(1, CFG.vocab_size),
        "row 1: token 320 out of vocabulary",
    ),
    "negative token": (lambda s, t: t.__setitem__(0, -2), "row 0: token -2 out of vocabulary"),
    "full sequence": (
        lambda s, t: setattr(s[2], "seq_len", 64),
        "row 2: sequence slot 2: seq_len 64 leaves no room",
    ),
    "short block table": (
        lambda s, t: setattr(s[1], "seq_len", 32),
        "row 1: sequence slot 4: block table of 2 blocks does not cover position 32",
    ),
    "block out of range": (lambda s, t: s[0].block_table.append(64), "block id 64 out of range"),
    "slot out of range": (lambda s, t: setattr(s[1], "slot_idx", 8), "sequence slot 8 out of range"),
    "shared write position": (
        lambda s, t: (setattr(s[1], "seq_len", 24), s[1].block_table.__setitem__(1, 5)),
        "two writes to KV block 5 offset 8",
    ),
    "token count": (lambda s, t: t.pop(), "2 tokens for 3 rows"),
    "no rows": (lambda s, t: (s.clear(), t.clear()), "0 rows: expected 1..256"),
}


@pytest.mark.parametrize("case", list(DECODE_CASES))
def test_decode_batch_precondition(base: BatchedMtpModel, case: str) -> None:
    model, seqs, tokens = base.clone(), _seqs(), [5, 6, 7]
    breaker, message = DECODE_CASES[case]
    breaker(seqs, tokens)
    before = copy.deepcopy(seqs)
    err = _expect_unchanged_failure(model, lambda: model.decode_batch(tokens, seqs), message)
    assert err.chain()[0] == "decode_batch"
    assert seqs == before


def test_decode_batch_accepts_the_unbroken_rows(base: BatchedMtpModel) -> None:
    model, seqs = base.clone(), _seqs()
    assert model.decode_batch([5, 6, 7], seqs).shape == (3, CFG.vocab_size)
    assert [s.seq_len for s in seqs] == [11, 21, 41]


def _propose_args(seqs: list[SequenceState]) -> dict:
    return {"tokens": [5, 6, 7], "positions": [11, 21, 41], "stash_idx": [2, 0, 1], "k": 3, "seqs": seqs}


PROPOSE_CASES: dict[str, tuple[Callable[[dict], None], str]] = {
    "out-of-vocab token": (
        lambda a: a["tokens"].__setitem__(2, 999),
        "member 2: token 999 out of vocabulary",
    ),
    "short drafter table": (
        lambda a: a["positions"].__setitem__(0, 30),
        "member 0: sequence slot 0: drafter block table of 2 blocks does not cover position 32",
    ),
    "stash row out of range": (
        lambda a: a["stash_idx"].__setitem__(1, 4),
        "member 1: stash row 4 out of range",
    ),
    "length mismatch": (lambda a: a["positions"].pop(), "3 tokens, 2 positions, 3 stash rows for 3 members"),
    "duplicate slot": (lambda a: setattr(a["seqs"][1], "slot_idx", 2), "sequence slot 2 appears twice"),
    "negative position": (lambda a: a["positions"].__setitem__(1, -1), "drafter position -1 negative"),
    "rank": (lambda a: a.__setitem__("rank", 1), "rank 1 out of range"),
}


@pytest.mark.parametrize("case", list(PROPOSE_CASES))
def test_propose_batched_precondition(base: BatchedMtpModel, case: str) -> None:
    model, seqs = base.clone(), _seqs()
    args = _propose_args(seqs)
    breaker, message = PROPOSE_CASES[case]
    breaker(args)
    before, conf = copy.deepcopy(seqs), [[0.25]]
    err = _expect_unchanged_failure(model, lambda: model.run_mtp_propose_batched(**args, conf_out=conf), message)
    assert err.chain()[0] == "run_mtp_propose_batched"
    assert conf == [[0.25]] and seqs == before


def test_propose_batched_accepts_the_unbroken_group(base: BatchedMtpModel) -> None:
    model = base.clone()
    conf: list[list[float]] = []
    drafts = model.run_mtp_propose_batched(**_propose_args(_seqs()), conf_out=conf)
    assert drafts is not None and [len(d) for d in drafts] == [3, 3, 3] and [len(c) for c in conf] == [3, 3, 3]


def test_drafter_table_past_the_meta_stride_fails_with_the_logged_words(base: BatchedMtpModel) -> None:
    model = base.clone()
    seqs = _seqs()
    seqs[2].draft_block_table.extend([19, 20, 21, 22, 23, 24])  # 10 blocks, stride 4 (64 / 16)
    err = _expect_unchanged_failure(
        model, lambda: model.run_mtp_propose_batched(**_propose_args(seqs)), "exceeds meta stride"
    )
    assert err.chain() == [
        "run_mtp_propose_batched",
        "pack_mtp_attn_meta",
        "sequence slot 2: drafter block table of 10 blocks exceeds meta stride 4",
    ]


def test_meta_stride_comes_from_the_environment_at_build_time(base: BatchedMtpModel) -> None:
    wide = BatchedMtpModel(CFG, base.weights, env={ENV_PROPOSE_META_STRIDE: "10"})
    wide.stash.normal_()  # type: ignore[union-attr]
    seqs = _seqs()
    seqs[2].draft_block_table.extend([19, 20, 21, 22, 23, 24])
    assert wide.propose_meta_stride() == 10
    assert wide.run_mtp_propose_batched(**_propose_args(seqs)) is not None


def test_non_finite_stash_row_is_caught_before_anything_is_written(base: BatchedMtpModel) -> None:
    model = base.clone()
    model.stash[1, 7] = float("nan")  # type: ignore[index]
    _expect_unchanged_failure(
        model,
        lambda: model.run_mtp_propose_batched(**_propose_args(_seqs())),
        "run_mtp_propose_batched: member 2 (stash row 1): drafter input is not finite",
    )


def test_unwritten_stash_read_through_save_from_stash_is_caught(base: BatchedMtpModel) -> None:
    model = base.clone()
    model.poison_scratch()
    model.save_hidden_for_mtp_from_stash(3)
    seq = _seqs()[0]
    _expect_unchanged_failure(model, lambda: model.run_mtp_propose_multi(5, 11, 2, seq), "drafter input is not finite")


def test_stash_preconditions(base: BatchedMtpModel) -> None:
    model = base.clone()
    _expect_unchanged_failure(
        model, lambda: model.stash_verify_hidden_rows([0, 1, 2, 3, 4]), "5 rows exceed the stash capacity 4"
    )
    _expect_unchanged_failure(model, lambda: model.stash_verify_hidden_rows([0, 256]), "hidden row 256 out of range")
    _expect_unchanged_failure(model, lambda: model.save_hidden_for_mtp_from_stash(4), "stash row 4 out of range")
    none = BatchedMtpModel(ModelConfig(stash_capacity=0))
    for call in (lambda: none.stash_verify_hidden_rows([0]), lambda: none.save_hidden_for_mtp_from_stash(0)):
        _expect_unchanged_failure(none, call, "hidden stash not allocated (stash_capacity 0)")


def test_stash_and_save_from_stash_copy_the_named_rows(base: BatchedMtpModel) -> None:
    model = base.clone()
    model.stash_verify_hidden_rows([5, 0, 9])
    assert torch.equal(model.stash[:3], model.hidden_states[[5, 0, 9]])  # type: ignore[index]
    assert torch.equal(model.stash[3], base.stash[3])  # type: ignore[index]
    model.save_hidden_for_mtp_from_stash(2)
    assert torch.equal(model.mtp_hidden_in, model.hidden_states[9])


def test_argmax_batch_preconditions_and_ties(base: BatchedMtpModel) -> None:
    model = base.clone()
    logits = torch.zeros(4, CFG.vocab_size, dtype=torch.float64)
    logits[0, [7, 9]] = 1.0
    logits[1, 3] = 1.5
    logits[2, 300] = 2.0
    assert model.argmax_batch(logits, 3) == [7, 3, 300]
    logits[1, 5] = float("nan")
    _expect_unchanged_failure(model, lambda: model.argmax_batch(logits, 3), "row 1 has NaN logits")
    _expect_unchanged_failure(model, lambda: model.argmax_batch(logits, 5), "n=5 rows out of range 1..4")
    _expect_unchanged_failure(model, lambda: model.argmax_batch(logits, 0), "n=0 rows out of range")
    _expect_unchanged_failure(model, lambda: model.argmax_batch(logits[:, :10], 2), "logits must be [n, 320]")
