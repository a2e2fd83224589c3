"""B4-B10 of the fully batched step: every row's token (or sampling refusal) and top logprobs, with one
`argmax_batch` for the eligible greedy rows and one sampling pass for the rest.

The row classes (`batched.vector.row_table.row_classes`) come from the caller, which needs them before the
decode. The rows `argmax_batch` cannot serve are sampled first (their pass is launched before the
call, so its device work overlaps the call's host read); when `argmax_batch` fails (B7) the eligible
rows get a second pass. Tokens, refusal flags and logprobs of every pass come back in one host read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from batched.protocol import BatchedModel
from batched.vector.logprobs import LogprobRows, logprob_pass, to_logprobs
from batched.vector.readback import read_together
from batched.vector.row_scalars import int_column
from batched.vector.sample_requests import sample_request
from batched.vector.sampling_pass import SampledRows, outcomes, sample_pass
from reference.errors import ModelError, format_chain
from reference.model.kernels import argmax_rows
from reference.sampling import SamplingError
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq, TokenLogprobs
from reference.telemetry import log


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
) -> list[RowResult]:
    """Row j's result for every row of logits [n, V] (row j = refs[j], its `row_classes` held[j] and
    greedy[j] in `classes`). Changes no sequence. `ahead`, when given, is called once the first pass
    is queued and before any host read, with every row's token as the device will have it ([n]
    int64: the pass's for its rows, the argmax elsewhere); a row the passes later refuse, or that a
    failed `argmax_batch` sends to a second pass, may end up with another token, or none."""
    n, vocab = len(refs), model.vocab_size()
    floor = sched.watchdog.min_reasoning_floor
    held, greedy = classes
    n_greedy = sum(greedy)

    passes_of = getattr(model, "pass_cache", None)  # a `VectorMtpModel`'s static passes, else eager ones
    cache = passes_of() if passes_of is not None else None

    def pass_for(rows: list[int]) -> SampledRows:
        reqs = [sample_request(refs[j], j, held[j], floor, verify_ctx.sampling, vocab) for j in rows]
        return sample_pass(logits, reqs, vocab, cache)

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
