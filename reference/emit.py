"""Emitting a sampled token: append it, advance the grammar, decide whether the sequence finished."""

from __future__ import annotations

from reference.eos_hold import presample_hold_for
from reference.sched_ctx import SchedCtx
from reference.state import ActiveSeq, FinishReason, TokenLogprobs


def finish_reason_after(a: ActiveSeq, tok: int, held: bool, grammar_accepted: bool) -> FinishReason | None:
    """The reason `a` finishes after `tok` was appended, first match wins:
    GRAMMAR (the grammar rejected the token), STOP (an EOS id not `held`, or a stop id),
    GRAMMAR (the grammar terminated), LENGTH (output length >= max_tokens); else None."""
    if not grammar_accepted:
        return FinishReason.GRAMMAR
    if (tok in a.eos_ids and not held) or tok in a.stop_ids:
        return FinishReason.STOP
    if a.grammar_state is not None and a.grammar_state.is_terminated():
        return FinishReason.GRAMMAR
    if len(a.output_tokens) >= a.max_tokens:
        return FinishReason.LENGTH
    return None


def emit_token(a: ActiveSeq, tok: int, lp: TokenLogprobs | None, sched: SchedCtx) -> None:
    """Append `tok` and `lp` (None included, so the lists stay aligned), advance the grammar, and
    finish the sequence with `finish_reason_after`. The EOS hold is the one before this token
    (output length without it). Leaves `last_token` and pending drafts alone; the reasoning floor
    is a sampling ban and does not hold EOS here. Raises ValueError on a finished sequence."""
    if a.finished:
        raise ValueError(f"emit_token on finished sequence {a.seq_id}")
    held = presample_hold_for(a, len(a.output_tokens)).any()
    a.output_tokens.append(tok)
    a.output_logprobs.append(lp)
    accepted = a.grammar_state.accept(tok) if a.grammar_state is not None else True
    reason = finish_reason_after(a, tok, held, accepted)
    if reason is not None:
        a.finished = True
        a.finish_reason = reason
