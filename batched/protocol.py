"""The batched model operations the batched bootstrap calls, on top of the per-sequence ones."""

from __future__ import annotations

from typing import Protocol

import torch

from reference.model.protocol import Model
from reference.state import SequenceState


class BatchedModel(Model, Protocol):
    def decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int = 0) -> torch.Tensor:
        """One pass over n rows (sorted by SSM slot, else slot); logits [n, vocab]; writes rows
        0..n-1 of `hidden_states`."""

    def argmax_batch(self, logits: torch.Tensor, n: int, rank: int = 0) -> list[int]:
        """Argmax of each of the n rows (ties lowest): one launch, one device-to-host copy."""

    def stash_verify_hidden_rows(self, rows: list[int], rank: int = 0) -> None:
        """stash[i] = hidden_states[rows[i]]."""

    def save_hidden_for_mtp_from_stash(self, row: int, rank: int = 0) -> None:
        """The drafter input buffer = stash[row]."""

    def run_mtp_propose_batched(
        self,
        tokens: list[int],
        positions: list[int],
        stash_idx: list[int],
        k: int,
        seqs: list[SequenceState],
        rank: int = 0,
        conf_out: list[list[float]] | None = None,
    ) -> list[list[int]] | None:
        """k drafts for each member from stash row `stash_idx[g]`, one drafter pass per draft
        position; None when the model cannot batch this group; `conf_out` replaced by each
        member's confidences. Fails with "exceeds meta stride" when a member's drafter block table
        outgrows the propose-meta stride."""

    def mtp_propose_batch_max(self) -> int:
        """The group cap for batched proposes."""

    def can_batch_verify(self, ks: list[int]) -> bool:
        """Whether the batched-MTP envelope holds for these widths (stash room, no EP, no HSS)."""
