"""A logits row a bad-row fault rewrote keeps the scale it was computed at: its few finite survivors
carry the rounding of the whole row they were decoded in (`properties.sides.faults.FaultyModel.unmasked_rows`,
read by `properties.sides.replay_oracle.row_mismatches`), as a masked drafter row's do."""

from __future__ import annotations

import torch

from properties.sides.faults import FaultyModel
from properties.tolerance import ROUNDING, differing
from properties.worlds.specs import FaultSpec, ModelSpec, SeqSpec, WorldSpec
from properties.worlds.world import build_world


def test_a_masked_row_fault_keeps_the_row_it_rewrote() -> None:
    spec = WorldSpec(model=ModelSpec(), seqs=(SeqSpec(), SeqSpec(slot_idx=1, ssm_slot=1)), bootstrap=(0, 1))
    world = build_world(spec)
    masked = {0: torch.zeros(512, dtype=torch.bool)}
    masked[0][[5, 9]] = True
    model = FaultyModel(world.model, (FaultSpec("decode_batch", 0, "masked_row", 0),), masked=masked)
    out = model.decode_batch([a.last_token for a in world.active], [a.seq for a in world.active])
    assert int(torch.isfinite(out[0]).sum()) == 2 and set(model.unmasked_rows) == {0}
    assert bool(torch.isfinite(model.unmasked_rows[0]).all())


def test_survivors_are_held_at_their_rows_scale_and_their_pattern_exactly() -> None:
    full = torch.tensor([4.0, -3.0, 0.1, 2.0], dtype=torch.float64)
    ref = torch.tensor([float("-inf"), float("-inf"), 0.1, float("-inf")], dtype=torch.float64)
    rtol = ROUNDING["bfloat16"]
    moved = ref.clone()
    moved[2] += 0.5 * rtol * 4.0  # half the tolerance of the row's scale, five times the survivor's own
    assert bool(differing(ref, moved, rtol).any())  # at the survivor's own scale: beyond rounding
    assert not bool(differing(ref, moved, rtol, full).any())  # at the row's scale: rounding
    other = moved.clone()
    other[1] = -3.0  # a survivor more: never rounding
    assert bool(differing(ref, other, rtol, full).any())
