"""A step that does not validate its indices: unsorted, repeated or out-of-range bootstrap indices
are quietly mended (sorted, deduplicated, the ones past the active list dropped) and the rest
bootstrapped, where the seed's step refuses them with a clear error before touching anything.

`--impl mutants.wrong_steps.no_index_validation:step` (the literal step otherwise)."""

from __future__ import annotations

from typing import Any

from batched.step import step_mtp_bootstrap_batched


def step(model: Any, active: list[Any], sched: Any, idxs: list[int], ladder_nd: int, verify_ctx: Any) -> None:
    """The literal step on the indices mended (module docstring)."""
    mended = sorted({i for i in idxs if 0 <= i < len(active)})
    step_mtp_bootstrap_batched(model, active, sched, mended, ladder_nd, verify_ctx)
