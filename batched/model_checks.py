"""The preconditions of `BatchedMtpModel`'s batched operations, checked on the host before anything
runs: a violated one is a `ModelError` naming the row or member, and nothing has changed."""

from __future__ import annotations

from collections.abc import Callable

import torch

from batched.propose_call import ProposeCall
from reference.errors import ModelError
from reference.model.checks import check_propose, check_rank
from reference.model.config import ModelConfig
from reference.state import SequenceState


def check_stash(cfg: ModelConfig, stash: torch.Tensor | None, row: int, what: str) -> None:
    """The stash is allocated and `row` is one of its rows."""
    if stash is None:
        raise ModelError("hidden stash not allocated (stash_capacity 0)")
    if not (isinstance(row, int) and 0 <= row < cfg.stash_capacity):
        raise ModelError(f"stash {what} {row!r} out of range (capacity {cfg.stash_capacity})")


def check_decode_batch(
    cfg: ModelConfig, tokens: list[int], seqs: list[SequenceState], check_row: Callable[[int, SequenceState], None]
) -> None:
    """Row count and lengths, every row's decode checks, rows sorted by SSM slot (else slot; a
    sequence without an SSM slot may share its key with one that has that SSM slot), no slot
    or SSM slot twice, and no two rows writing the same KV position. `check_row(token, seq)` is one
    row's decode check."""
    n = len(seqs)
    if not 1 <= n <= cfg.max_batch_rows:
        raise ModelError(f"{n} rows: expected 1..{cfg.max_batch_rows}")
    if len(tokens) != n:
        raise ModelError(f"{len(tokens)} tokens for {n} rows")
    for j, (t, s) in enumerate(zip(tokens, seqs, strict=True)):
        try:
            check_row(t, s)
        except ModelError as e:
            raise e.context(f"row {j}") from None
    keys = [s.ssm_slot if s.ssm_slot is not None else s.slot_idx for s in seqs]
    ssm = [s.ssm_slot for s in seqs if s.ssm_slot is not None]
    if len(set(ssm)) != len(ssm):
        raise ModelError(f"duplicate SSM slot among rows: {ssm}")
    for j in range(1, n):
        if keys[j] < keys[j - 1]:
            raise ModelError(
                f"rows not sorted by SSM slot: row {j} (slot {keys[j]}) after row {j - 1} (slot {keys[j - 1]})"
            )
    check_distinct(
        [s.slot_idx for s in seqs],
        [(s.block_table[s.seq_len // cfg.block_size], s.seq_len % cfg.block_size) for s in seqs],
    )


def check_propose_batched(
    cfg: ModelConfig, stash: torch.Tensor | None, meta_stride: int, call: ProposeCall, rank: int
) -> None:
    """The members' counts agree, every stash row and every member's propose checks hold, no slot or
    KV position twice, and every drafter block table fits the meta stride."""
    tokens, positions, stash_idx, k, seqs = call.tokens, call.positions, call.stash_idx, call.k, call.seqs
    n = len(seqs)
    check_rank(rank)
    if not 1 <= n <= cfg.max_batch_rows:
        raise ModelError(f"{n} members: expected 1..{cfg.max_batch_rows}")
    if not len(tokens) == len(positions) == len(stash_idx) == n:
        raise ModelError(
            f"{len(tokens)} tokens, {len(positions)} positions, {len(stash_idx)} stash rows for {n} members"
        )
    for g, r in enumerate(stash_idx):
        try:
            check_stash(cfg, stash, r, "row")
        except ModelError as e:
            raise e.context(f"member {g}") from None
    for g, (t, p, s) in enumerate(zip(tokens, positions, seqs, strict=True)):
        try:
            check_propose(cfg, t, p, k, s, cfg.max_batched_drafts)
        except ModelError as e:
            raise e.context(f"member {g}") from None
    writes = [
        (s.draft_block_table[(p + i) // cfg.block_size], (p + i) % cfg.block_size)
        for p, s in zip(positions, seqs, strict=True)
        for i in range(k)
    ]
    check_distinct([s.slot_idx for s in seqs], writes)
    for s in seqs:
        if len(s.draft_block_table) > meta_stride:
            raise ModelError(
                f"sequence slot {s.slot_idx}: drafter block table of {len(s.draft_block_table)} blocks "
                f"exceeds meta stride {meta_stride}"
            ).context("pack_mtp_attn_meta")


def check_distinct(slots: list[int], writes: list[tuple[int, int]]) -> None:
    """No sequence slot twice, and no KV position (block, offset) written twice."""
    if len(set(slots)) != len(slots):
        dup = next(s for s in slots if slots.count(s) > 1)
        raise ModelError(f"sequence slot {dup} appears twice")
    if len(set(writes)) != len(writes):
        dup_w = next(w for w in writes if writes.count(w) > 1)
        raise ModelError(f"two writes to KV block {dup_w[0]} offset {dup_w[1]}")
