"""A step that raises, declaring its noise its own and a row sampler that raises too: every property
of the step, the declared sampler's included, must fail against it (`tests/test_negative_control.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NOISE = "own"


def raise_error(model: Any, active: list[Any], sched: Any, idxs: list[int], ladder_nd: int, verify_ctx: Any) -> None:
    """Refuse every step, before any call or write."""
    raise RuntimeError("the wrong step raise_error refuses every step")


def ROW_SAMPLER(logits: Any, requests: Sequence[Any]) -> list[int]:
    """Refuse every row."""
    raise RuntimeError("the wrong sampler of raise_error refuses every row")
