"""One token of plain decoding from its logits row: sample, logprobs, emit."""

from __future__ import annotations

import torch

from reference.emit import emit_token
from reference.errors import ModelError, format_chain
from reference.logprobs import extract_single_logprobs
from reference.model.protocol import Model
from reference.penalties import PositionKind, penalty_params_for
from reference.sample_step import sample_for_seq
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq
from reference.telemetry import log


def sample_and_emit(
    model: Model, a: ActiveSeq, row_logits: torch.Tensor, sched: SchedCtx, verify_ctx: LogitsContext, what: str
) -> int | None:
    """Sample `a`'s next token from `row_logits` [vocab] exactly as plain decoding does at its next
    output position (verify-kind penalties over the scoped history, EOS hold, grammar, its sampling
    parameters and the noise of that position), take its logprobs from the raw row, and emit it.
    Returns the token; None when no token could be sampled: the sequence then finishes without a
    reason (logged at error, `what` naming the caller), as the bootstrap step does."""
    pen = penalty_params_for(a, PositionKind.VERIFY, sched.watchdog.min_reasoning_floor)
    try:
        tok = sample_for_seq(model, a, row_logits, pen, verify_ctx)
    except ModelError as e:
        log.error(f"{what} sample error: {format_chain(e)}")
        a.finished = True
        return None
    k = a.top_logprobs
    lp = extract_single_logprobs(model, row_logits, tok, k) if k is not None else None
    emit_token(a, tok, lp, sched)
    return tok
