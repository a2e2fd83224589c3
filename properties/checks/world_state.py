"""Whole-world comparison of the model's state: every KV block of the main and drafter caches (owned
or not, past `seq_len` too), every SSM slot, every checkpoint and checkpoint position. Only the
scratch buffers (`hidden_states`, the stash, the drafter input) are left out: they are poisoned
before a step and nothing may read them across steps.

Exact numerics: every element bit-equal. Fast numerics: a unit (one head's key or value vector, an
SSM state row) the reference left bit-identical to the state before the step must be bit-identical
in the implementation too (a stray write is never rounding), and a unit the reference wrote must be
within the dtype's tolerance. A difference is
reported with where it is and who owns it (sequence slot and position, or no one), so a stray write
past `seq_len` or into a free block reads as one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from properties.tolerance import differing
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.state import ActiveSeq

# Buffer name -> the behaviour ids a difference there points at.
BUFFER_IDS: dict[str, tuple[str, ...]] = {
    "kv.k": ("B1", "B2"),
    "kv.v": ("B1", "B2"),
    "draft_kv.k": ("B16", "B17", "B22"),
    "draft_kv.v": ("B16", "B17", "B22"),
    "ssm.state": ("B1", "B2"),
    "ssm.ckpt": ("B23", "D1"),
    "ckpt_pos": ("B23", "D1"),
}


@dataclass(slots=True, frozen=True)
class BufferDiff:
    """One differing buffer: its name, the first differing element (a readable location), how many
    elements differ, the largest difference, and the behaviour ids it points at."""

    buffer: str
    where: str
    count: int
    ref: str
    impl: str
    ids: tuple[str, ...]
    slot: int | None = None  # the sequence slot that owns the first differing element, if any


def state_buffers(model: TinyMtpModel) -> dict[str, torch.Tensor]:
    """The model's persistent tensors by name (scratch excluded)."""
    return {
        "kv.k": model.kv.k,
        "kv.v": model.kv.v,
        "draft_kv.k": model.draft_kv.k,
        "draft_kv.v": model.draft_kv.v,
        "ssm.state": model.ssm.state,
        "ssm.ckpt": model.ssm.ckpt,
    }


class Owners:
    """Who owns a block, an SSM slot or a checkpoint position, from the sequences of a world."""

    def __init__(self, active: Iterable[ActiveSeq], block_size: int) -> None:
        self.block_size = block_size
        self.main: dict[int, tuple[int, int, int]] = {}  # block -> (slot, table index, seq_len)
        self.draft: dict[int, tuple[int, int, int]] = {}
        self.ssm: dict[int, int] = {}
        self.slots: set[int] = set()
        for a in active:
            s = a.seq
            self.slots.add(s.slot_idx)
            for i, b in enumerate(s.block_table):
                self.main[b] = (s.slot_idx, i, s.seq_len)
            for i, b in enumerate(s.draft_block_table):
                self.draft[b] = (s.slot_idx, i, s.seq_len)
            if s.ssm_slot is not None:
                self.ssm[s.ssm_slot] = s.slot_idx

    def owner(self, buffer: str, index: tuple[int, ...]) -> int | None:
        """The sequence slot owning element `index` of `buffer`, or None."""
        if buffer.startswith(("kv.", "draft_kv.")):
            table = self.draft if buffer.startswith("draft") else self.main
            hit = table.get(index[1])
            return hit[0] if hit else None
        return self.ssm.get(index[0])

    def describe(self, buffer: str, index: tuple[int, ...]) -> str:
        """A readable location of element `index` of `buffer`."""
        if buffer.startswith(("kv.", "draft_kv.")):
            layer, block, off = index[0], index[1], index[2]
            table = self.draft if buffer.startswith("draft") else self.main
            where = f"{buffer} layer {layer} block {block} offset {off}"
            if block not in table:
                return where + " (a block no sequence owns)"
            slot, i, seq_len = table[block]
            pos = i * self.block_size + off
            past = " (past seq_len)" if not buffer.startswith("draft") and pos >= seq_len else ""
            return where + f" (slot {slot} position {pos}, seq_len {seq_len}{past})"
        slot_text = f"SSM slot {index[0]}"
        owner = self.ssm.get(index[0])
        return f"{buffer} {slot_text} " + (f"(slot {owner})" if owner is not None else "(no sequence owns it)")


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    d = (a.double() - b.double()).abs()
    d = torch.nan_to_num(d, nan=float("inf"))
    return float(d.max()) if d.numel() else 0.0


def compare_buffers(
    before: TinyMtpModel,
    ref: TinyMtpModel,
    impl: TinyMtpModel,
    owners: Owners,
    rtol: float,
    skip: frozenset[tuple[str, int]] = frozenset(),
) -> list[BufferDiff]:
    """Every differing element of the persistent state of `impl` against `ref` (see the module
    docstring for the rule); `skip` holds (buffer, first index) pairs checked elsewhere (a
    registered difference), e.g. ("ssm.ckpt", ssm_slot) and ("ckpt_pos", slot)."""
    out: list[BufferDiff] = []
    b_bufs, r_bufs, m_bufs = state_buffers(before), state_buffers(ref), state_buffers(impl)
    for name, r in r_bufs.items():
        m, b = m_bufs[name], b_bufs[name]
        if bits_equal(r, m):
            continue
        if r.shape != m.shape or r.dtype != m.dtype:
            out.append(
                BufferDiff(name, "shape/dtype", -1, f"{r.dtype}{tuple(r.shape)}", f"{m.dtype}{tuple(m.shape)}", ())
            )
            continue
        bad = _differing(b, r, m.to(r.device), rtol)
        diff = first_difference(name, r, m.to(r.device), bad, skip, owners)
        if diff is not None:
            out.append(diff)
    pos_b, pos_r, pos_m = before.ssm.ckpt_pos, ref.ssm.ckpt_pos, impl.ssm.ckpt_pos
    skip_pos = {i for (buf, i) in skip if buf == "ckpt_pos"}
    for slot, (pb, pr, pm) in enumerate(zip(pos_b, pos_r, pos_m, strict=True)):
        if pr != pm and slot not in skip_pos:
            owned = slot in owners.slots
            who = "" if owned else " (no sequence in this slot)"
            where = f"ckpt_pos slot {slot}{who}, before {pb}"
            diff = BufferDiff("ckpt_pos", where, 1, str(pr), str(pm), BUFFER_IDS["ckpt_pos"], slot if owned else None)
            out.append(diff)
    return out


def first_difference(
    name: str,
    r: torch.Tensor,
    m: torch.Tensor,
    bad: torch.Tensor,
    skip: frozenset[tuple[str, int]],
    owners: Owners,
    note: str = "",
) -> BufferDiff | None:
    """The `BufferDiff` of buffer `name` for the elements `bad` marks (less the first indices `skip`
    holds for it; `bad` is changed), or None when none is left; `note` goes before the difference."""
    skipped = [i for (buf, i) in skip if buf == name]
    if skipped:
        bad[torch.tensor(skipped, dtype=torch.long, device=bad.device)] = False
    if not bool(bad.any()):
        return None
    idx = torch.nonzero(bad)
    first = tuple(int(x) for x in idx[0].tolist())
    largest = _max_diff(r[bad], m[bad])
    return BufferDiff(
        name,
        owners.describe(name, first),
        int(idx.shape[0]),
        f"{float(r[first]):.6g}",
        f"{float(m[first]):.6g} ({note}largest difference {largest:.3g})",
        BUFFER_IDS[name],
        owners.owner(name, first),
    )


def _differing(b: torch.Tensor, r: torch.Tensor, m: torch.Tensor, rtol: float) -> torch.Tensor:
    """Bool mask of differing elements: bitwise where rtol = 0 or in a unit (last dimension: one
    head's key or value vector, an SSM state row) the reference left bit-identical to `b`; within
    the rounding tolerance (`properties.tolerance.differing`) in a unit it wrote. Written or kept is
    decided per unit, not per element: a written value may round back to the old one in a few
    elements (bf16 keeps 8 bits), never in a whole unit."""
    exact = differing(r, m, 0.0)
    if rtol == 0:
        return exact
    kept = ~differing(r, b.to(r.device), 0.0).any(dim=-1, keepdim=True)
    return torch.where(kept, exact, differing(r, m, rtol))
