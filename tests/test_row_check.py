"""The replay oracle's row check (`properties.sides.replay_oracle.pairs_beyond`): rows of one shape are
checked in one stacked pass, and stacking changes no verdict: each row keeps its own scale."""

from __future__ import annotations

import torch

from properties.sides.replay_oracle import RowPair, pairs_beyond
from properties.tolerance import ROUNDING, differing

RTOL = ROUNDING["bfloat16"]


def pair(ref: torch.Tensor, impl: torch.Tensor, what: str = "row", scale: torch.Tensor | None = None) -> RowPair:
    return RowPair(None, what, ref, impl, scale, ("B1",))


def test_each_row_is_held_to_its_own_scale() -> None:
    small = torch.tensor([0.01, -0.02, 0.03])
    big = torch.tensor([100.0, -50.0, 25.0])
    # 0.01 off is far beyond rounding for the small row, well inside it for the big one.
    pairs = [pair(small, small + 0.01, "small"), pair(big, big + 0.01, "big"), pair(big, big, "same")]
    assert [p.what for p in pairs_beyond(pairs, RTOL)] == ["small"]
    for p in pairs:  # the same verdicts as one row at a time
        assert bool(differing(p.ref, p.impl, RTOL).any()) == (p.what == "small")


def test_order_kept_and_shapes_grouped_apart() -> None:
    a, b = torch.zeros(4), torch.zeros(6)
    pairs = [pair(b, b + 1, "b-off"), pair(a, a, "a-same"), pair(a, a + 1, "a-off"), pair(b, b, "b-same")]
    assert [p.what for p in pairs_beyond(pairs, RTOL)] == ["b-off", "a-off"]


def test_masked_rows_take_the_scale_of_their_unmasked_row() -> None:
    unmasked = torch.tensor([40.0, 1.0, -3.0])
    ref = torch.tensor([float("-inf"), 1.0, float("-inf")])
    near = torch.tensor([float("-inf"), 1.1, float("-inf")])  # 0.1 in a row of magnitude 40: rounding
    assert pairs_beyond([pair(ref, near, scale=unmasked)], RTOL) == []
    flagged = pairs_beyond([pair(ref, near)], RTOL)  # scaled by the survivor alone, 0.1 is not rounding
    assert [p.what for p in flagged] == ["row"]


def test_non_finite_entries_must_match() -> None:
    ref = torch.tensor([1.0, float("-inf"), 2.0])
    assert [p.what for p in pairs_beyond([pair(ref, torch.tensor([1.0, 0.0, 2.0]))], RTOL)] == ["row"]
    assert pairs_beyond([pair(ref, ref.clone())], RTOL) == []


def test_exact_numerics_compare_bits() -> None:
    ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
    nudged = torch.nextafter(ref, torch.full_like(ref, 3.0))
    assert [p.what for p in pairs_beyond([pair(ref, nudged)], 0.0)] == ["row"]
    assert pairs_beyond([pair(ref, ref.clone())], 0.0) == []
