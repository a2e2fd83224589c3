"""Preconditions of the model operations. Each check raises `ModelError` with a message that names
the sequence slot (or row) and the value at fault; operations run every check before they write."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import torch

from reference.errors import ModelError
from reference.model.config import ModelConfig
from reference.state import SequenceState


def check_rank(rank: object) -> None:
    if rank != 0:
        raise ModelError(f"rank {rank!r} out of range: this model runs on one rank (0)")


def check_token(cfg: ModelConfig, token: object) -> None:
    if not (isinstance(token, int) and not isinstance(token, bool) and 0 <= token < cfg.vocab_size):
        raise ModelError(f"token {token!r} out of vocabulary ({cfg.vocab_size})")


def check_slots(cfg: ModelConfig, seq: SequenceState) -> None:
    """The sequence slot and the SSM slot (when present) are in range."""
    if not (isinstance(seq.slot_idx, int) and 0 <= seq.slot_idx < cfg.num_slots):
        raise ModelError(f"sequence slot {seq.slot_idx!r} out of range (model has {cfg.num_slots} slots)")
    ssm = seq.ssm_slot
    if ssm is not None and not (isinstance(ssm, int) and 0 <= ssm < cfg.num_ssm_slots):
        raise ModelError(f"sequence slot {seq.slot_idx}: SSM slot {ssm!r} out of range (model has {cfg.num_ssm_slots})")


def check_table(what: str, table: Sequence[int], last_pos: int, block_size: int, num_blocks: int) -> None:
    """`table` covers position `last_pos` and every entry is a block id in range (every entry may be
    gathered, masked or not, so every one must index the cache)."""
    if len(table) * block_size <= last_pos:
        raise ModelError(f"{what} of {len(table)} blocks does not cover position {last_pos} (block size {block_size})")
    try:
        ids = array("q", table)  # C-speed: raises for anything but integers
    except (TypeError, OverflowError):
        raise ModelError(f"{what}: block ids must be integers, got {list(table)!r}") from None
    if ids and (min(ids) < 0 or max(ids) >= num_blocks):
        bad = next(b for b in ids if not 0 <= b < num_blocks)
        raise ModelError(f"{what}: block id {bad} out of range (cache has {num_blocks} blocks)")


def check_decode(cfg: ModelConfig, token: int, seq: SequenceState) -> None:
    """Token, slots, 0 <= seq_len < max_seq_len, and a block table covering position seq_len."""
    check_slots(cfg, seq)
    check_token(cfg, token)
    if not (isinstance(seq.seq_len, int) and 0 <= seq.seq_len < cfg.max_seq_len):
        raise ModelError(
            f"sequence slot {seq.slot_idx}: seq_len {seq.seq_len!r} leaves no room (max_seq_len {cfg.max_seq_len})"
        )
    check_table(
        f"sequence slot {seq.slot_idx}: block table",
        seq.block_table,
        seq.seq_len,
        cfg.block_size,
        cfg.num_blocks,
    )


def check_propose(cfg: ModelConfig, token: int, position: int, k: int, seq: SequenceState, max_k: int) -> None:
    """A run of k drafts from (token, position) fits: token in vocabulary, 0 <= k <= max_k, slots in
    range, position >= 0, the last position written (position + k - 1) inside the drafter's padded
    length and covered by `seq.draft_block_table`."""
    check_token(cfg, token)
    if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= max_k):
        raise ModelError(f"k={k!r} drafts: expected 0..{max_k}")
    check_slots(cfg, seq)
    if not (isinstance(position, int) and position >= 0):
        raise ModelError(f"sequence slot {seq.slot_idx}: drafter position {position!r} negative")
    if k == 0:
        return
    last = position + k - 1
    if last >= cfg.draft_span:
        raise ModelError(
            f"sequence slot {seq.slot_idx}: drafter position {last} past the drafter's length {cfg.draft_span}"
        )
    check_table(
        f"sequence slot {seq.slot_idx}: drafter block table",
        seq.draft_block_table,
        last,
        cfg.block_size,
        cfg.num_draft_blocks,
    )


def check_mask(cfg: ModelConfig, mask: torch.Tensor | None) -> None:
    """A grammar mask is bool [vocab] and allows at least one token."""
    if mask is None:
        return
    if mask.dtype != torch.bool or tuple(mask.shape) != (cfg.vocab_size,):
        raise ModelError(f"grammar mask must be bool [{cfg.vocab_size}], got {mask.dtype} {tuple(mask.shape)}")
    if not bool(mask.any()):
        raise ModelError("grammar mask allows no token")


def check_prefill(
    cfg: ModelConfig, seq: SequenceState, tokens: Sequence[int], prev_hidden: torch.Tensor | None
) -> None:
    """Tokens in vocabulary and fitting in max_seq_len, main and drafter tables covering them."""
    check_slots(cfg, seq)
    check_tokens(cfg, tokens, seq.seq_len + len(tokens))
    last = seq.seq_len + len(tokens) - 1
    check_table(f"sequence slot {seq.slot_idx}: block table", seq.block_table, last, cfg.block_size, cfg.num_blocks)
    check_propose(cfg, tokens[0], seq.seq_len, len(tokens), seq, cfg.max_seq_len)
    if prev_hidden is not None and tuple(prev_hidden.shape) != (cfg.hidden,):
        raise ModelError(f"prev_hidden must be [{cfg.hidden}], got {tuple(prev_hidden.shape)}")


def check_tokens(cfg: ModelConfig, tokens: Sequence[int], end: int) -> None:
    """At least one token, every one in vocabulary, ending at or before max_seq_len (`end`)."""
    if not tokens:
        raise ModelError("no tokens")
    if end > cfg.max_seq_len:
        raise ModelError(f"positions up to {end - 1} exceed max_seq_len {cfg.max_seq_len}")
    for t in tokens:
        check_token(cfg, t)


def check_snapshot(cfg: ModelConfig, seq: SequenceState) -> None:
    """Slots in range and both block tables made of block ids in range."""
    check_slots(cfg, seq)
    for what, table, blocks in (
        ("block table", seq.block_table, cfg.num_blocks),
        ("drafter block table", seq.draft_block_table, cfg.num_draft_blocks),
    ):
        check_table(f"sequence slot {seq.slot_idx}: {what}", table, -1, cfg.block_size, blocks)


def check_decode_run(cfg: ModelConfig, seq: SequenceState, tokens: Sequence[int]) -> None:
    """Slots, at most `max_batch_rows` tokens (their hidden states fill that many scratch rows),
    every token in vocabulary, the run ending at or before max_seq_len, and a block table covering
    its last position."""
    check_slots(cfg, seq)
    if len(tokens) > cfg.max_batch_rows:
        raise ModelError(f"{len(tokens)} tokens exceed the {cfg.max_batch_rows} rows of hidden_states")
    if not (isinstance(seq.seq_len, int) and seq.seq_len >= 0):
        raise ModelError(f"sequence slot {seq.slot_idx}: seq_len {seq.seq_len!r} negative")
    check_tokens(cfg, tokens, seq.seq_len + len(tokens))
    last = seq.seq_len + len(tokens) - 1
    check_table(f"sequence slot {seq.slot_idx}: block table", seq.block_table, last, cfg.block_size, cfg.num_blocks)
