"""The fully batched MTP bootstrap: the behaviours of `batched.step` (B1-B26, D1-D4) with the per-row
work batched.

One `decode_batch` (B2, B3); one `argmax_batch` when two or more rows are eligible (B5-B7); one
sampling pass for every other row, with penalties, EOS holds, grammar bitmasks, temperature,
top-k, top-p and the counter-based noise computed for all rows at once (B4, B8, B9), and one for
the eligible rows when the batched argmax fails; logprobs of every row in one pass (B10); a single
host read for all of it. Emit, `tick_serial` and `spec_allowed` stay per row (B11, B12: they are
the sequences' own state); the stash, groups and fallbacks are `batched.step`'s (B13-B22); the
checkpoints run in one pass when the model offers `deferred_checkpoints` (B23).

When the model offers `propose_ahead` and every row looks set to propose in one group, the group's
drafter pass is launched as soon as the rows' tokens exist on the device (`batched.vector.propose_ahead`),
so that it runs while the host reads the tokens back and emits; the group's call takes its result
if it is exactly that call, and the step undoes it otherwise, before it returns. When every row
also takes the batched argmax, its tokens are the decode's argmax, which the decode's pass computes:
the step asks the model (`plan_ahead`) to launch the drafter pass from inside `decode_batch`, right
behind the decode's pass, before the step has sampled anything; a model that declines leaves the
launch to the sampling.

Call contract: as `batched.step`, except that no `argmax_on_device` call is made: a greedy row the
batched argmax does not serve is argmaxed inside the sampling pass (`PER_ROW_FAST_GREEDY_CALLS`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from batched.protocol import BatchedModel, DefersCheckpoints, ProposesAhead
from batched.step import propose_from_stash, select_rows
from batched.vector.logprobs import check_count
from batched.vector.model import VectorMtpModel
from batched.vector.sample import RowResult, row_classes, sample_all
from batched.vector.sampling_pass import OwnDraw
from reference.adaptive_spec import spec_allowed, tick_serial
from reference.emit import emit_token
from reference.errors import ModelError, format_chain
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq, SpeculationMode
from reference.telemetry import log

# Whether a greedy row that the batched argmax did not serve makes the per-row sampler's fast-greedy
# `argmax_on_device` call. Here it does not: the sampling pass takes that argmax for all rows at once.
PER_ROW_FAST_GREEDY_CALLS = False


def prepare_model(model: BatchedModel) -> VectorMtpModel:
    """The model this step is meant to run on (`properties.impl.prepare_model`): the world's model as
    a `VectorMtpModel` over the same buffers (static-shape passes, CUDA graphs on a GPU, checkpoints
    in one pass)."""
    return VectorMtpModel.from_model(model)  # type: ignore[arg-type]


def prepare_gathered_model(model: BatchedModel) -> VectorMtpModel:
    """`prepare_model` without the paged kernel: attention over each row's gathered span."""
    return VectorMtpModel.from_model(model, paged=False)  # type: ignore[arg-type]


def step_mtp_bootstrap_vectorized(
    model: BatchedModel,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
    *,
    noise: OwnDraw | None = None,
) -> None:
    """Bootstrap the draftless sequences `active[i]`, i in `idxs` (ascending), as one batch. Sampled
    rows draw with the counter-based noise, or with `noise` when given (`batched.vector.own_noise`)."""
    refs = select_rows(active, idxs)  # B1
    n, seqs = len(refs), [a.seq for a in refs]
    classes = row_classes(refs, sched.watchdog.min_reasoning_floor, sched, verify_ctx)  # B4, B5
    plan = ahead_plan(model, refs, sched, ladder_nd)
    # Every row's token is the decode's argmax (B6), on the device before decode_batch returns.
    ahead = model if isinstance(model, ProposesAhead) else None
    in_decode = plan is not None and all(classes[1]) and ahead is not None and ahead.plan_ahead(seqs, *plan)
    try:  # B2/B3
        logits = model.decode_batch([a.last_token for a in refs], seqs, 0)  # [n, vocab]
    except ModelError as e:
        log.error(f"batched bootstrap decode_batch (n={n}): {format_chain(e)}")
        for a in refs:
            a.finished = True
        return

    launch = None  # the propose ahead, launched by the sampling once the rows' tokens are on the device
    if plan is not None and ahead is not None and not in_decode:
        launch = functools.partial(ahead.propose_ahead, seqs=seqs, k=plan[0], with_conf=plan[1])
    try:
        results = sample_all(model, logits, refs, sched, verify_ctx, classes, launch, noise=noise)
        proposing = emit_rows(refs, results, sched)
        if proposing and stash_all(model, n):  # B13
            propose_from_stash(model, refs, proposing, sched, ladder_nd)
    finally:
        if ahead is not None:  # a propose launched ahead and not taken leaves nothing behind
            ahead.settle_ahead()
    checkpoint_rows(model, refs)  # B23

    if sched.telemetry.once("log:mtp_batched_bootstrap"):
        log.info(
            f"MTP batched bootstrap ENGAGED (n={n}): one decode_batch + batched propose "
            f"replaces {n} M=1 decodes + {n} drafter forwards per draft position"
        )


def ahead_plan(model: BatchedModel, refs: list[ActiveSeq], sched: SchedCtx, ladder_nd: int) -> tuple[int, bool] | None:
    """(k, with_conf) of the batched propose to launch ahead (`batched.vector.propose_ahead`), when the model
    can and the step will likely make that call: two or more rows, a ladder of at least one draft, all
    rows in one group, and every row batchable once its token is emitted (no grammar, room for the
    full ladder) and allowed to speculate; else None. The call decides whether it takes the result; a
    wrong guess costs a pass."""
    n = len(refs)
    if not isinstance(model, ProposesAhead) or n < 2 or ladder_nd < 1 or max(model.mtp_propose_batch_max(), 1) < n:
        return None
    if any(a.grammar_state is not None or a.max_tokens - len(a.output_tokens) - 1 < ladder_nd for a in refs):
        return None
    # After this step's tick a backed-off row speculates only if its backoff runs out now (`tick_serial`,
    # then `spec_allowed`): one still waiting leaves the group short, and the launch would be wasted.
    if any(a.adaptive_spec.mode is SpeculationMode.BACKED_OFF and a.adaptive_spec.backoff_remaining > 1 for a in refs):
        return None
    levers = sched.levers
    return ladder_nd, levers.dcut_enabled or levers.draft_stop_logprob is not None  # B18


def emit_rows(refs: list[ActiveSeq], results: list[RowResult], sched: SchedCtx) -> list[int]:
    """B9-B12 in row order: a refused row finishes; the others emit (with their logprobs) and, unless
    that finished them, take the token as last token, tick and ask `spec_allowed` once. Returns the
    rows that propose. A negative logprobs count raises ValueError at its row, as the per-row path."""
    proposing: list[int] = []
    for j, (a, r) in enumerate(zip(refs, results, strict=True)):
        if r.error is not None:
            log.error(f"batched bootstrap sample error: {format_chain(r.error)}")
            a.finished = True
            continue
        if a.top_logprobs is not None:
            check_count(a.top_logprobs)
        emit_token(a, r.token, r.logprobs, sched)
        if a.finished:
            continue
        a.last_token = r.token
        tick_serial(a, sched)
        if spec_allowed(a, sched):  # can change re-probe state: called once
            proposing.append(j)
    return proposing


def stash_all(model: BatchedModel, n: int) -> bool:
    """B13: stash every decode row (slot j = row j) before any propose; False (logged) on failure."""
    try:
        model.stash_verify_hidden_rows(list(range(n)), 0)
    except ModelError as e:
        log.error(f"batched bootstrap stash_verify_hidden_rows: {format_chain(e)}")
        return False
    return True


def checkpoint_rows(model: BatchedModel, refs: list[ActiveSeq]) -> None:
    """B23: every unfinished row checkpoints, in row order; a failure is logged. The state copies run
    in one pass inside the model's `deferred_checkpoints` scope when it has one."""
    with model.deferred_checkpoints() if isinstance(model, DefersCheckpoints) else nullcontext():
        for a in refs:
            if a.finished:
                continue
            try:
                model.start_checkpoint_async(a.seq)
            except ModelError as e:
                log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")


def step_with_noise(
    noise: OwnDraw, name: str, doc: str, before: Callable[[], None] | None = None
) -> Callable[[BatchedModel, list[ActiveSeq], SchedCtx, list[int], int, LogitsContext], None]:
    """The fully batched step with `noise` drawing its sampled rows, as a step of the fixed signature
    called `name` with docstring `doc`; `before()` runs first (a check that the noise can run here)."""

    def step(*args: Any) -> None:  # (model, active, sched, idxs, ladder_nd, verify_ctx), as the return type says
        if before is not None:
            before()
        step_mtp_bootstrap_vectorized(*args, noise=noise)

    step.__name__ = step.__qualname__ = name
    step.__doc__ = doc
    return step
