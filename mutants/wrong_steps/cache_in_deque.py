"""A step that keeps a per-process cache in a `collections.deque`: the last tokens it bootstrapped,
by slot, kept across steps (a ring buffer an engine might keep for prefix or draft reuse). Its worlds
come out right; what it leaves behind outlives the step.

`--impl mutants.wrong_steps.cache_in_deque:step` (the literal step otherwise)."""

from __future__ import annotations

from collections import deque
from typing import Any

from batched.step import step_mtp_bootstrap_batched

RECENT: deque[tuple[int, int]] = deque(maxlen=256)  # (slot, last token) of the latest bootstrapped rows


def step(model: Any, active: list[Any], sched: Any, idxs: list[int], ladder_nd: int, verify_ctx: Any) -> None:
    """The literal step, remembering each row's slot and new last token in `RECENT`."""
    step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
    RECENT.extend((active[i].seq.slot_idx, active[i].last_token) for i in idxs)
