"""G8: the bootstrap entry point: batched when the gate holds, the per-sequence loop otherwise."""

from __future__ import annotations

from collections.abc import Callable

from batched.gate import can_batch_bootstrap
from batched.protocol import BatchedModel
from batched.step import step_mtp_bootstrap_batched
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq
from reference.step import step_mtp_bootstrap_per_seq

BatchedStep = Callable[[BatchedModel, list[ActiveSeq], SchedCtx, list[int], int, LogitsContext], None]


def dispatch_bootstrap(
    batched_step: BatchedStep,
    model: BatchedModel,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
    dflash_verify_raw_argmax: bool = False,
) -> bool:
    """Bootstrap `active[i]` for i in `idxs` through `batched_step` when the gate holds, else through
    the per-sequence loop; returns True when `batched_step` ran (G8). The seed's dispatch with any
    batched step in place of its own (P2 checks an implementation under test through it)."""
    if can_batch_bootstrap(model, sched, len(idxs), dflash_verify_raw_argmax):
        batched_step(model, active, sched, idxs, ladder_nd, verify_ctx)
        return True
    step_mtp_bootstrap_per_seq(model, active, sched, idxs, ladder_nd, verify_ctx)
    return False


def step_mtp_bootstrap(
    model: BatchedModel,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
    dflash_verify_raw_argmax: bool = False,
) -> bool:
    """Bootstrap `active[i]` for i in `idxs`; returns True when the batched step ran (G8): the
    dispatch with the literal batched step."""
    return dispatch_bootstrap(
        step_mtp_bootstrap_batched, model, active, sched, idxs, ladder_nd, verify_ctx, dflash_verify_raw_argmax
    )
