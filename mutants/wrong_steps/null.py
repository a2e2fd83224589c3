"""A step that does no step at all: `do_nothing` leaves every sequence, cache and drafter as it found
them, with the default declarations (coupled noise, no row sampler). Every property of the step
must fail against it (`tests/test_negative_control.py`), but for the tests of a declared row
sampler, which do not apply to a step that declares none and are skipped."""

from __future__ import annotations

from typing import Any


def do_nothing(model: Any, active: list[Any], sched: Any, idxs: list[int], ladder_nd: int, verify_ctx: Any) -> None:
    """Bootstrap nothing: no call, no write, no log."""
