"""The per-sequence model operations the reference step calls (names from the engine's `Model`).

Every failing operation raises `reference.errors.ModelError` (with a context chain) and leaves the
model's caches and the `SequenceState` it was given exactly as they were.
"""

from __future__ import annotations

from typing import Protocol

import torch

from reference.state import SequenceState


class Model(Protocol):
    def vocab_size(self) -> int:
        """Rows of logits are this long."""

    def dflash_gamma(self) -> int | None:
        """The DFlash drafter's block size, or None for an MTP drafter."""

    def decode_logits_fp32(self) -> bool:
        """True when decode logits come from the FP32 scratch buffer (the batched gate excludes it)."""

    def decode(self, token: int, seq: SequenceState, rank: int = 0) -> torch.Tensor:
        """Run `token` at position `seq.seq_len`: write its KV, advance the SSM slot, increment
        `seq.seq_len`, write the final hidden state to row 0 of the shared `hidden_states` scratch.
        Returns its logits, shape [vocab]."""

    def save_hidden_for_mtp(self, seq: SequenceState, rank: int = 0) -> None:
        """Copy row 0 of `hidden_states` (the last decode's) into the drafter's input buffer."""

    def run_mtp_propose_multi(
        self,
        token: int,
        position: int,
        k: int,
        seq: SequenceState,
        rank: int = 0,
        mask: torch.Tensor | None = None,
        conf_out: list[float] | None = None,
    ) -> list[int]:
        """Greedy drafts d_0..d_{k-1}: step i feeds (hidden, token) at drafter position
        `position + i`, hidden = the drafter input buffer for i = 0 and the previous step's output
        after, token = `token` then the previous draft. `mask` (bool [vocab], True = allowed)
        applies to the first position only. When `conf_out` is given it is replaced by each
        draft's softmax probability. Overwrites `hidden_states`."""

    def start_checkpoint_async(self, seq: SequenceState) -> None:
        """Checkpoint the sequence: copy its SSM slot's state into its checkpoint and record
        `seq.seq_len` as the checkpoint position."""

    def argmax_on_device(self, row: torch.Tensor) -> int:
        """Argmax of one logits row (ties to the lowest id): the per-row fast-greedy scan."""
