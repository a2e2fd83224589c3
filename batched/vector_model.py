"""`VectorMtpModel`: `BatchedMtpModel` plus a scope in which checkpoints are copied in one pass.

Inside `deferred_checkpoints()`, `start_checkpoint_async` runs its checks and records the position
at once (a failing one raises and records nothing, as always) but leaves the state copy pending;
leaving the scope copies every pending SSM slot's state into its checkpoint with one gather and
one scatter instead of one copy per sequence. Nothing in between may read or write those states:
the fully batched step opens the scope around its checkpoint loop only. Outside the scope the model
is a `BatchedMtpModel`. `from_model` turns a `BatchedMtpModel` into one, sharing its buffers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from batched.batched_model import BatchedMtpModel
from reference.errors import ModelError
from reference.model.checks import check_slots
from reference.model.paged_kv import pack_sections
from reference.state import SequenceState


class VectorMtpModel(BatchedMtpModel):
    """A `BatchedMtpModel` whose checkpoints can be batched (see the module docstring)."""

    _pending: list[int] | None = None  # SSM slots whose checkpoint copy is pending; None: not deferring

    @classmethod
    def from_model(cls, model: BatchedMtpModel) -> VectorMtpModel:
        """A `VectorMtpModel` over `model`'s weights, caches and scratch (shared, not copied)."""
        new = object.__new__(cls)
        for name, value in vars(model).items():
            setattr(new, name, value)
        return new

    @contextmanager
    def deferred_checkpoints(self) -> Iterator[None]:
        """Within the scope, `start_checkpoint_async` defers its state copy; on leaving it (also by
        an exception), every deferred copy runs in one pass."""
        self._pending = []
        try:
            yield
        finally:
            slots, self._pending = self._pending, None
            if slots:
                (idx,) = pack_sections([slots], self.device)
                self.ssm.ckpt.index_copy_(0, idx, self.ssm.state.index_select(0, idx))

    def start_checkpoint_async(self, seq: SequenceState) -> None:
        """As `TinyMtpModel.start_checkpoint_async`; inside `deferred_checkpoints` the state copy
        waits for the end of the scope."""
        if self._pending is None:
            super().start_checkpoint_async(seq)
            return
        try:
            check_slots(self.cfg, seq)
        except ModelError as e:
            raise e.context("start_checkpoint_async") from None
        if seq.ssm_slot is not None:
            self._pending.append(seq.ssm_slot)
        self.ssm.ckpt_pos[seq.slot_idx] = seq.seq_len
