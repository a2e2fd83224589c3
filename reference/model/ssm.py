"""The recurrent (SSM-like) layer, its state slots and checkpoints.

Per SSM slot the model keeps a state [state] and a checkpoint copy of it; per sequence slot
(`SequenceState.slot_idx`) the position at which the checkpoint was taken (-1: none). A sequence with
`ssm_slot None` runs the layer from a zero state on every step and stores nothing; its checkpoint
records only the position.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference.errors import ModelError
from reference.model.kernels import Numerics, linear, rms_norm, ssm_gates, ssm_step
from reference.model.weights import SsmWeights
from reference.state import SequenceState


@dataclass(slots=True)
class SsmSlots:
    """state, ckpt: [num_ssm_slots, state]; ckpt_pos: [num_slots] host ints, -1 = no checkpoint."""

    state: torch.Tensor
    ckpt: torch.Tensor
    ckpt_pos: list[int]

    @classmethod
    def zeros(cls, num_ssm_slots: int, num_slots: int, size: int, dtype: torch.dtype, device: torch.device) -> SsmSlots:
        z = torch.zeros(num_ssm_slots, size, dtype=dtype, device=device)
        return cls(z, z.clone(), [-1] * num_slots)

    def clone(self) -> SsmSlots:
        return SsmSlots(self.state.clone(), self.ckpt.clone(), list(self.ckpt_pos))

    def randomize_(self, gen: torch.Generator) -> None:
        """Fill states and checkpoint states with N(0, 1) values from `gen`; positions are kept."""
        for t in (self.state, self.ckpt):
            t.copy_(torch.randn(t.shape, generator=gen, device=gen.device, dtype=torch.float32))

    def initial(self, seq: SequenceState) -> torch.Tensor:
        """The state a step of `seq` starts from, [1, state]: its slot's, or zeros without a slot."""
        if seq.ssm_slot is None:
            return torch.zeros(1, self.state.shape[1], dtype=self.state.dtype, device=self.state.device)
        return self.state[seq.ssm_slot : seq.ssm_slot + 1].clone()

    def checkpoint(self, seq: SequenceState) -> None:
        """Copy the slot's state into its checkpoint and record `seq.seq_len` as the position."""
        if seq.ssm_slot is not None:
            self.ckpt[seq.ssm_slot].copy_(self.state[seq.ssm_slot])
        self.ckpt_pos[seq.slot_idx] = seq.seq_len

    def restore(self, seq: SequenceState) -> None:
        """Put the checkpoint back: the slot's state and `seq.seq_len`. ModelError (nothing changed)
        when the sequence slot has no checkpoint."""
        pos = self.ckpt_pos[seq.slot_idx]
        if pos < 0:
            raise ModelError(f"sequence slot {seq.slot_idx}: no checkpoint to restore")
        if seq.ssm_slot is not None:
            self.state[seq.ssm_slot].copy_(self.ckpt[seq.ssm_slot])
        seq.seq_len = pos


def ssm_layer(
    nm: Numerics, w: SsmWeights, eps: float, x: torch.Tensor, h: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step for M independent rows: x [M, H], h [M, S] -> (x + w_c h', h' [M, S])."""
    decay, inp = ssm_gates(nm, rms_norm(nm, x, w.norm, eps), w.w_a, w.w_b)
    h_new = ssm_step(decay, inp, h)
    return x + linear(nm, h_new, w.w_c), h_new


def ssm_scan(
    nm: Numerics, w: SsmWeights, eps: float, x: torch.Tensor, h0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """T consecutive positions of one sequence: x [T, H], h0 [1, S] -> (x + w_c h_t per row, h_T [1, S]).
    Bit-equal to T calls of `ssm_layer` in exact mode: the gates are row kernels and the update is
    the same elementwise step."""
    decay, inp = ssm_gates(nm, rms_norm(nm, x, w.norm, eps), w.w_a, w.w_b)  # [T, S] each
    h = h0
    states = []
    for t in range(x.shape[0]):
        h = ssm_step(decay[t : t + 1], inp[t : t + 1], h)
        states.append(h)
    hs = torch.cat(states, dim=0)  # [T, S]
    return x + linear(nm, hs, w.w_c), h
