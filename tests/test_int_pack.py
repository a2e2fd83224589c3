"""`batched.vector.int_pack`: packing Python ints into int64 gives what `array("q", ...)` gives and refuses
what it refuses."""

from __future__ import annotations

from array import array

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batched.vector.int_pack import packed

INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(INT64, max_size=300))
def test_packed_equals_the_array_conversion(values: list[int]) -> None:
    want = torch.frombuffer(array("q", values), dtype=torch.long) if values else torch.zeros(0, dtype=torch.long)
    assert torch.equal(packed(values), want)


@pytest.mark.parametrize("bad", [1.0, 2**63, -(2**63) - 1, "1", None])
def test_packing_refuses_what_the_array_conversion_refuses(bad: object) -> None:
    with pytest.raises((TypeError, OverflowError)):
        array("q", [bad])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="int64 packing"):
        packed([1, bad, 2])  # type: ignore[list-item]
