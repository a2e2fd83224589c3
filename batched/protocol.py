"""The batched model operations the batched bootstrap calls, on top of the per-sequence ones, and the
optional abilities a model may have besides (a step asks with `isinstance`, never `hasattr`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

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


@runtime_checkable
class ProposesAhead(Protocol):
    """A model that launches a group's batched propose before its call and lets the call take it
    (`batched.vector.propose_ahead`)."""

    def propose_ahead(self, tokens: torch.Tensor, seqs: list[SequenceState], k: int, with_conf: bool) -> None:
        """Launch the batched propose of rows 0..n-1 of the last decode from `tokens` (on the device)."""

    def plan_ahead(self, seqs: list[SequenceState], k: int, with_conf: bool) -> bool:
        """Have the next `decode_batch` of exactly `seqs` make that launch itself; False: declined."""

    def settle_ahead(self) -> None:
        """Undo a propose launched ahead that no call took; drop a plan."""


@runtime_checkable
class DefersCheckpoints(Protocol):
    """A model whose checkpoint copies can run in one pass at the end of a scope."""

    def deferred_checkpoints(self) -> AbstractContextManager[None]:
        """Within the scope `start_checkpoint_async` defers its state copy; leaving it copies them all."""


@runtime_checkable
class HasStaticPasses(Protocol):
    """A model whose passes run on static shapes (replayed as CUDA graphs on a GPU)."""

    def pass_cache(self) -> Any:
        """Its static passes (`batched.vector.static_passes.PassCache`)."""
