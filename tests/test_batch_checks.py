"""The all-rows-at-once preconditions (`batched.vector.checks`) accept only what the per-row checks of
`BatchedMtpModel` accept, and accept every valid batch of plain ints (else the fast path is never
taken): drawn valid batches, each with at most one corruption of the kinds a caller gets wrong."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batched.batched_model import BatchedMtpModel
from batched.propose_call import ProposeCall
from batched.vector.checks import decode_batch_ok, propose_batch_ok
from reference.errors import ModelError
from tests.test_batched_model_equiv import Mix, mixes

DECODE_CORRUPTIONS = (
    "none", "rank", "no_rows", "token_count", "token_high", "token_negative", "token_bool", "slot_twice",
    "slot_high", "ssm_twice", "ssm_high", "seq_len_full", "seq_len_negative", "table_short", "block_high",
    "block_float", "block_negative", "block_past_int64", "unsorted", "write_twice",
)  # fmt: skip


def accepted(check: Any, *args: Any) -> bool:
    try:
        check(*args)
    except ModelError:
        return False
    return True


def corrupt_decode(mix: Mix, kind: str, data: st.DataObject) -> tuple[list[Any], list[Any], Any]:
    """(tokens, seqs, rank) of `mix` with one corruption of `kind`."""
    cfg, seqs, tokens, rank = mix.model.cfg, copy.deepcopy(mix.seqs), list(mix.tokens), 0
    j = data.draw(st.integers(0, len(seqs) - 1), label="row")
    s = seqs[j]
    other = seqs[(j + 1) % len(seqs)]
    match kind:
        case "rank":
            rank = 1
        case "no_rows":
            tokens, seqs = [], []
        case "token_count":
            tokens.append(1)
        case "token_high":
            tokens[j] = cfg.vocab_size
        case "token_negative":
            tokens[j] = -1
        case "token_bool":
            tokens[j] = True
        case "slot_twice":
            s.slot_idx = other.slot_idx
        case "slot_high":
            s.slot_idx = cfg.num_slots
        case "ssm_twice":
            s.ssm_slot = other.ssm_slot
        case "ssm_high":
            s.ssm_slot = cfg.num_ssm_slots
        case "seq_len_full":
            s.seq_len = cfg.max_seq_len
        case "seq_len_negative":
            s.seq_len = -1
        case "table_short":
            s.block_table = s.block_table[: s.seq_len // cfg.block_size]
        case "block_high":
            s.block_table[-1] = cfg.num_blocks
        case "block_float":
            s.block_table[0] = 1.0
        case "block_negative":
            s.block_table[0] = -1
        case "block_past_int64":
            s.block_table[-1] = 2**63
        case "unsorted":
            seqs.reverse()
        case "write_twice":
            other.block_table[other.seq_len // cfg.block_size] = s.block_table[s.seq_len // cfg.block_size]
            other.seq_len = other.seq_len // cfg.block_size * cfg.block_size + s.seq_len % cfg.block_size
    return tokens, seqs, rank


@pytest.mark.parametrize("kind", DECODE_CORRUPTIONS)
@given(mix=mixes(), data=st.data())
def test_decode_checks_agree_with_the_per_row_checks(kind: str, mix: Mix, data: st.DataObject) -> None:
    tokens, seqs, rank = corrupt_decode(mix, kind, data)
    model: BatchedMtpModel = mix.model
    base = accepted(model._check_decode_batch, tokens, seqs, rank)
    fast = decode_batch_ok(model.cfg, tokens, seqs, rank)
    assert not (fast and not base), f"{kind}: accepted what decode_batch refuses"
    if kind != "token_bool":
        assert fast == base, f"{kind}: the fast check refused a batch decode_batch accepts"


PROPOSE_CORRUPTIONS = (
    "none", "rank", "lengths", "stash_high", "no_stash", "k_high", "k_bool", "k_zero", "token_high",
    "position_negative", "past_span", "table_short", "block_high", "block_float", "stride_full", "stride_over",
    "slot_twice", "write_twice", "block_shared",
)  # fmt: skip


@pytest.mark.parametrize("kind", PROPOSE_CORRUPTIONS)
@given(mix=mixes(max_n=8), data=st.data())
def test_propose_checks_agree_with_the_per_row_checks(kind: str, mix: Mix, data: st.DataObject) -> None:
    model: BatchedMtpModel = mix.model.clone()
    cfg, seqs, n = model.cfg, copy.deepcopy(mix.seqs), len(mix.seqs)
    tokens, positions, stash_idx = list(mix.tokens), [s.seq_len for s in seqs], list(range(n))
    k, rank, stride = data.draw(st.integers(1, cfg.max_batched_drafts), label="k"), 0, model.meta_stride
    j = data.draw(st.integers(0, n - 1), label="member")
    s, other = seqs[j], seqs[(j + 1) % n]
    match kind:
        case "rank":
            rank = 1
        case "lengths":
            positions.append(0)
        case "stash_high":
            stash_idx[j] = cfg.stash_capacity
        case "no_stash":
            model.stash = None
        case "k_high":
            k = cfg.max_batched_drafts + 1
        case "k_bool":
            k = True
        case "k_zero":
            k = 0
        case "token_high":
            tokens[j] = cfg.vocab_size
        case "position_negative":
            positions[j] = -1
        case "past_span":
            positions[j] = cfg.draft_span - k + 1
        case "table_short":
            s.draft_block_table = s.draft_block_table[: (positions[j] + k - 1) // cfg.block_size]
        case "block_high":
            s.draft_block_table[-1] = cfg.num_draft_blocks
        case "block_float":
            s.draft_block_table[0] = 0.0
        case "stride_full" | "stride_over":
            room = stride + (kind == "stride_over") - len(s.draft_block_table)
            s.draft_block_table = s.draft_block_table[: stride + (kind == "stride_over")] + [0] * max(0, room)
        case "slot_twice":
            s.slot_idx = other.slot_idx
        case "write_twice":
            positions[j], other.draft_block_table = positions[(j + 1) % n], s.draft_block_table
        case "block_shared":  # two members write into one block: at distinct offsets or not, as drawn
            o, bs = (j + 1) % n, cfg.block_size
            other.draft_block_table[positions[o] // bs] = s.draft_block_table[positions[j] // bs]
    call = ProposeCall(tokens, positions, stash_idx, k, seqs)
    base = accepted(model._check_propose_batched, call, rank)
    fast = propose_batch_ok(cfg, model.stash, stride, call, rank)
    assert not (fast and not base), f"{kind}: accepted what run_mtp_propose_batched refuses"
    if kind != "k_bool":
        assert fast == base, f"{kind}: the fast check refused a group the propose accepts"
