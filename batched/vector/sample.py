"""B4-B10 of the fully batched step: the row classes, and every row's token (or sampling refusal) and
top logprobs, with one `argmax_batch` for the eligible greedy rows and one sampling pass for the rest.

The row classes (`row_classes`: the EOS hold and the batched-argmax eligibility, with exactly the
per-row semantics of `reference.eos_hold.presample_hold_for`, `classify_penalties` and
`batched.step.greedy_eligible`) are two comprehensions, not tensor columns: at a batch's sizes a CPU
tensor operation costs more (94 µs for 64 rows against 9 µs on the development CPU). The caller
needs them before the decode. The rows `argmax_batch` cannot serve are sampled first (their pass is
launched before the call, so its device work overlaps the call's host read); when `argmax_batch`
fails (B7) the eligible rows get a second pass. Tokens, refusal flags and logprobs of every pass
come back in one host read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from batched.protocol import BatchedModel, HasStaticPasses
from batched.vector.logprobs import LogprobRows, logprob_pass, to_logprobs
from batched.vector.requests import sample_request
from batched.vector.rows import int_column
from batched.vector.sampling_pass import OwnDraw, SampledRows, outcomes, read_together, sample_pass
from reference.errors import ModelError, format_chain
from reference.model.kernels import argmax_rows
from reference.penalties import reasoning_floor_holds
from reference.sampling import SamplingError
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq, TokenLogprobs
from reference.telemetry import log


def row_classes(
    refs: list[ActiveSeq], min_reasoning_floor: int, sched: SchedCtx, verify_ctx: LogitsContext
) -> tuple[list[bool], list[bool]]:
    """(held, greedy) per row of refs: EOS held before sampling (fewer output tokens than min tokens,
    and EOS ids), and the batched argmax may serve the row (the boot-argmax lever and fast greedy on,
    temperature 0 or forced to 0, no grammar, no EOS hold, neutral verify penalties: repetition 1,
    frequency 0, presence 0 and no reasoning-floor ban; a NaN parameter is not neutral)."""
    held = [len(a.output_tokens) < a.min_tokens and len(a.eos_ids) > 0 for a in refs]
    sampling = verify_ctx.sampling
    if not (sched.levers.mtp_boot_argmax and sampling.fast_greedy_grammar):
        return held, [False] * len(refs)
    force = sampling.force_temp_zero
    greedy = [
        (a.temperature == 0.0 or force)
        and a.grammar_state is None
        and not h
        and a.repetition_penalty == 1.0
        and a.frequency_penalty == 0.0
        and a.presence_penalty == 0.0
        and not reasoning_floor_holds(a, min_reasoning_floor)
        for a, h in zip(refs, held, strict=True)
    ]
    return held, greedy


@dataclass(slots=True)
class RowResult:
    """Row j's token, or the refusal that finishes it; its logprobs when it asked for a count >= 0."""

    token: int = 0
    error: SamplingError | None = None
    logprobs: TokenLogprobs | None = None


def batched_argmax(
    model: BatchedModel, logits: torch.Tensor, n: int, n_greedy: int, sched: SchedCtx
) -> list[int] | None:
    """B6/B7: `argmax_batch` over all n rows, its notice once per process; None (logged) when it fails."""
    try:
        toks = model.argmax_batch(logits, n, 0)
    except ModelError as e:
        log.error(f"batched bootstrap argmax_batch (n={n}): {format_chain(e)}")
        return None
    if sched.telemetry.once("log:mtp_bootstrap_batched_argmax"):
        log.info(
            f"MTP bootstrap batched argmax ENGAGED (n={n}, greedy_rows={n_greedy}): "
            f"one launch + one D2H replaces {n_greedy} single-CTA scans + syncs"
        )
    return toks


def sample_all(
    model: BatchedModel,
    logits: torch.Tensor,
    refs: list[ActiveSeq],
    sched: SchedCtx,
    verify_ctx: LogitsContext,
    classes: tuple[list[bool], list[bool]],
    ahead: Callable[[torch.Tensor], None] | None = None,
    *,
    noise: OwnDraw | None = None,
) -> list[RowResult]:
    """Row j's result for every row of logits [n, V] (row j = refs[j], its `row_classes` held[j] and
    greedy[j] in `classes`). Changes no sequence. `ahead`, when given, is called once the first pass
    is queued and before any host read, with every row's token as the device will have it ([n]
    int64: the pass's for its rows, the argmax elsewhere); a row the passes later refuse, or that a
    failed `argmax_batch` sends to a second pass, may end up with another token, or none. Sampled
    rows draw with the counter-based noise, or with `noise` when given (`sample_pass`)."""
    n, vocab = len(refs), model.vocab_size()
    floor = sched.watchdog.min_reasoning_floor
    held, greedy = classes
    n_greedy = sum(greedy)

    cache = model.pass_cache() if isinstance(model, HasStaticPasses) else None  # else eager passes

    def pass_for(rows: list[int]) -> SampledRows:
        reqs = [sample_request(refs[j], j, held[j], floor, verify_ctx.sampling, vocab) for j in rows]
        return sample_pass(logits, reqs, vocab, cache, noise=noise)

    try_argmax = n_greedy >= 2
    first = [j for j in range(n) if not (try_argmax and greedy[j])]
    passes = [pass_for(first)] if first else []
    if ahead is not None:
        ahead(device_tokens(logits, n, passes))
    batch_toks = batched_argmax(model, logits, n, n_greedy, sched) if try_argmax else None
    if try_argmax and batch_toks is None:
        passes.append(pass_for([j for j in range(n) if greedy[j]]))

    lp = _logprobs(logits, refs, passes, batch_toks, vocab)
    reads = read_together(
        [t for p in passes for t in (p.tokens, p.flags)]
        + ([lp.chosen, lp.top_ids, lp.top_lp, lp.undefined] if lp is not None else [])
    )
    results = [RowResult() for _ in range(n)]
    if batch_toks is not None:
        for j in range(n):
            if greedy[j]:
                results[j].token = batch_toks[j]
    for p, (toks, flags) in zip(passes, zip(reads[0::2], reads[1::2], strict=False), strict=False):
        for req, out in zip(p.requests, outcomes(p, toks, flags), strict=True):
            if isinstance(out, SamplingError):
                results[req.row].error = out
            else:
                results[req.row].token = out
    if lp is not None:
        chosen, ids, lps, undefined = reads[2 * len(passes) :]
        for i, j in enumerate(lp.rows):
            if results[j].error is None:
                results[j].logprobs = to_logprobs(lp, i, results[j].token, chosen, ids, lps, undefined)
    return results


def device_tokens(logits: torch.Tensor, n: int, passes: list[SampledRows]) -> torch.Tensor:
    """[n] int64 on the logits' device: row j's token from the pass that has row j, else its argmax
    (ties to the lowest id); queued, nothing read back."""
    dev = logits.device
    tokens = argmax_rows(logits) if logits.dim() == 2 else torch.zeros(n, dtype=torch.int64, device=dev)
    for p in passes:
        if p.requests and p.shape_error is None:
            tokens = tokens.index_copy(0, int_column([r.row for r in p.requests], dev), p.tokens)
    return tokens


def _logprobs(
    logits: torch.Tensor, refs: list[ActiveSeq], passes: list[SampledRows], batch_toks: list[int] | None, vocab: int
) -> LogprobRows | None:
    """B10: the logprob pass for the rows that ask for a count >= 0 (a negative count is refused
    at emit), on the device tokens of every row."""
    rows = [j for j, a in enumerate(refs) if a.top_logprobs is not None and a.top_logprobs >= 0]
    if not rows or logits.dim() != 2 or logits.shape[1] != vocab:
        return None
    dev = logits.device
    tokens = int_column(batch_toks if batch_toks is not None else [0] * len(refs), dev)  # [n]
    for p in passes:
        tokens = tokens.index_copy(0, int_column([r.row for r in p.requests], dev), p.tokens)
    picked = tokens.index_select(0, int_column(rows, dev))  # [r]
    return logprob_pass(logits, rows, picked, [refs[j].top_logprobs for j in rows])  # type: ignore[misc]
