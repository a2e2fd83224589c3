"""The model's caches, checkpoints and scratch as a whole: filled, poisoned, cloned, copied from
another device, snapshotted for one sequence and compared, bit for bit (`TinyMtpModel`'s base)."""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from reference.errors import in_context
from reference.model.checks import check_snapshot
from reference.model.config import ModelConfig
from reference.model.kernels import Numerics, bits_equal
from reference.model.paged_kv import PagedKv
from reference.model.ssm import SsmSlots
from reference.model.weights import Weights
from reference.state import SequenceState

C = TypeVar("C", bound="CacheState")


class CacheState:
    """The buffers a model holds besides its (shared, immutable) weights."""

    cfg: ModelConfig
    device: torch.device
    nm: Numerics
    weights: Weights
    meta_stride: int
    kv: PagedKv
    draft_kv: PagedKv
    ssm: SsmSlots
    hidden_states: torch.Tensor
    stash: torch.Tensor | None
    mtp_hidden_in: torch.Tensor

    def randomize_caches(self, gen: torch.Generator) -> None:
        """Fill main and drafter KV, SSM states and checkpoint states with N(0, 1) values from `gen`."""
        self.kv.randomize_(gen)
        self.draft_kv.randomize_(gen)
        self.ssm.randomize_(gen)

    def poison_scratch(self) -> None:
        """Fill hidden_states, the stash and the drafter input with NaN."""
        for t in (self.hidden_states, self.stash, self.mtp_hidden_in):
            if t is not None:
                t.fill_(float("nan"))

    def clone(self: C) -> C:
        """An independent copy of caches, checkpoints and scratch that shares the (immutable) weights."""
        new = object.__new__(type(self))
        new.cfg, new.device, new.nm, new.weights = self.cfg, self.device, self.nm, self.weights
        new.meta_stride = self.meta_stride
        new.kv, new.draft_kv, new.ssm = self.kv.clone(), self.draft_kv.clone(), self.ssm.clone()
        new.hidden_states = self.hidden_states.clone()
        new.stash = None if self.stash is None else self.stash.clone()
        new.mtp_hidden_in = self.mtp_hidden_in.clone()
        return new

    def copy_state_from(self, other: CacheState) -> None:
        """Overwrite this model's caches, checkpoints and scratch with `other`'s, bit for bit, from
        any device: a model of the same configuration on another device then holds the same world.
        A ValueError names the first buffer whose shape or dtype differs (nothing is written then)."""
        pairs = list(zip(self._buffers().items(), other._buffers().items(), strict=True))
        for (name, mine), (_, theirs) in pairs:
            if (mine is None) != (theirs is None) or (
                mine is not None and (mine.shape != theirs.shape or mine.dtype != theirs.dtype)
            ):
                raise ValueError(f"copy_state_from: {name} differs in shape or dtype between the two models")
        for (_, mine), (_, theirs) in pairs:
            if mine is not None:
                mine.copy_(theirs)
        self.ssm.ckpt_pos = list(other.ssm.ckpt_pos)

    def snapshot(self, seq: SequenceState) -> dict[str, Any]:
        """The model's logical state of one sequence, as CPU copies: kv_k/kv_v [layers, seq_len, Hh, D]
        (positions < seq_len), ssm_state and ckpt_state [S] (only with an SSM slot), ckpt_pos, and
        draft_kv_k/draft_kv_v [positions the drafter block table covers, Hh, D]."""
        cfg = self.cfg
        in_context("snapshot", check_snapshot, cfg, seq)
        n_main = min(seq.seq_len, len(seq.block_table) * cfg.block_size)
        n_draft = min(len(seq.draft_block_table) * cfg.block_size, cfg.draft_span)
        k, v = self.kv.rows(seq.block_table, n_main)
        dk, dv = self.draft_kv.rows(seq.draft_block_table, n_draft)
        out: dict[str, Any] = {
            "kv_k": k.cpu(),
            "kv_v": v.cpu(),
            "ckpt_pos": self.ssm.ckpt_pos[seq.slot_idx],
            "draft_kv_k": dk[0].cpu(),
            "draft_kv_v": dv[0].cpu(),
        }
        if seq.ssm_slot is not None:
            out["ssm_state"] = self.ssm.state[seq.ssm_slot].cpu().clone()
            out["ckpt_state"] = self.ssm.ckpt[seq.ssm_slot].cpu().clone()
        return out

    def diff_state(self, other: CacheState) -> list[str]:
        """Names of the buffers (caches, checkpoints, scratch) whose bits differ from `other`'s."""
        mine, theirs = self._buffers(), other._buffers()
        out = [name for name in mine if not bits_equal(mine[name], theirs[name])]
        return out + (["ckpt_pos"] if self.ssm.ckpt_pos != other.ssm.ckpt_pos else [])

    def _buffers(self) -> dict[str, torch.Tensor | None]:
        return {
            "kv.k": self.kv.k,
            "kv.v": self.kv.v,
            "draft_kv.k": self.draft_kv.k,
            "draft_kv.v": self.draft_kv.v,
            "ssm.state": self.ssm.state,
            "ssm.ckpt": self.ssm.ckpt,
            "hidden_states": self.hidden_states,
            "stash": self.stash,
            "mtp_hidden_in": self.mtp_hidden_in,
        }
