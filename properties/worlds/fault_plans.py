"""Hypothesis strategies for fault plans: which batched operation fails, at which call, how, and on which row.

Every plan shrinks toward no fault, then one error on the first call of the first operation listed."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from properties.worlds.fault_kinds import ALTERNATES, BAD_ROWS, BATCHED_STEP_OPS, ONCE_PER_STEP
from properties.worlds.specs import FaultSpec

# How many faults a plan carries: one most often; two (both can fire) or none besides.
FAULT_COUNTS = {1: st.sampled_from((1, 1, 0)), 2: st.sampled_from((1, 2, 1, 0))}


# The operation of a fault, weighted so that each (operation, call index) is planned and fires in a
# sample of a few hundred examples: a group propose needs a group, the later calls of a per-row
# operation need several rows, the per-row greedy scan a greedy row that samples per row and the
# save from the stash a fallback propose, while `decode_batch` (an error or one of four bad rows)
# and the stash are called in nearly every step.
FAULT_OP_CHOICES = (
    "start_checkpoint_async",
    "decode_batch",
    "argmax_on_device",
    "run_mtp_propose_batched",
    "stash_verify_hidden_rows",
    "argmax_on_device",
    "decode_batch",
    "run_mtp_propose_multi",
    "argmax_batch",
    "save_hidden_for_mtp_from_stash",
    "run_mtp_propose_batched",
    "decode_batch",
    "argmax_on_device",
    "run_mtp_propose_multi",
    "save_hidden_for_mtp_from_stash",
    "run_mtp_propose_batched",
    "start_checkpoint_async",
)
FAULT_OPS = st.sampled_from(FAULT_OP_CHOICES)
FAULT_KINDS = {op: st.sampled_from(("err", *ALTERNATES[op])) for op in BATCHED_STEP_OPS}


@functools.lru_cache(maxsize=64)
def fault_rows(rows: int) -> st.SearchStrategy[int | None]:
    """The member a fault hits: any row of a batch of `rows` (at least the first eight), or None."""
    return st.one_of(st.none(), st.integers(0, max(rows, 8) - 1))


MAX_CALL_INDEX = 2


def in_place_edits(op: str, kind: str) -> st.SearchStrategy[bool]:
    """Whether a fault's bad logits row is written into the tensor `decode_batch` returned rather
    than into a copy (`FaultSpec.in_place`); False, drawing nothing, for every other fault."""
    return st.booleans() if op == "decode_batch" and kind in BAD_ROWS else st.just(False)


@functools.lru_cache(maxsize=8)
def call_indices(calls: int) -> st.SearchStrategy[int]:
    """The index of the faulted call of an operation called up to `calls` times a step (at least
    once): the first call most often, the second or third where there are that many."""
    return st.sampled_from(tuple(k for k in (0, 1, 2, 0, 1, 2) if k < max(1, min(calls, MAX_CALL_INDEX + 1))))


def calls_of(op: str, rows: int, group_cap: int) -> int:
    """How many calls of `op` a step over `rows` rows can make: one for an operation called once a
    step, a group for every `group_cap` rows, else one per row."""
    if op in ONCE_PER_STEP:
        return 1
    if op == "run_mtp_propose_batched":
        return rows // max(group_cap, 2)
    return rows


@st.composite
def fault_specs(draw: st.DrawFn, max_faults: int = 2, rows: int = 8, group_cap: int = 2) -> tuple[FaultSpec, ...]:
    """Up to `max_faults` faults (one most often): an error or an alternate result of any model call
    the batched step makes, at one of its first three calls (the first, for an operation called once
    a step; one the step can make for a mix of `rows` rows and a group cap of `group_cap`), for any
    member of a batched call. No two faults address the same call."""
    counts = FAULT_COUNTS[max_faults] if max_faults in FAULT_COUNTS else st.integers(0, max_faults)
    faults: list[FaultSpec] = []
    for _ in range(draw(counts)):
        op = draw(FAULT_OPS)
        call = draw(call_indices(calls_of(op, rows, group_cap)))
        if any(f.op == op and f.call == call for f in faults):
            continue  # only the first fault on a call can fire
        kind = draw(FAULT_KINDS[op])
        faults.append(FaultSpec(op, call, kind, draw(fault_rows(rows)), draw(in_place_edits(op, kind))))
    return tuple(faults)


@functools.lru_cache(maxsize=64)
def fault_specs_for(rows: int, group_cap: int) -> st.SearchStrategy[tuple[FaultSpec, ...]]:
    return fault_specs(2, rows, group_cap)
