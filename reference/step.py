"""The per-sequence MTP bootstrap: one `decode` and one drafter call per draftless sequence.

This is the engine's `mtp_step.rs` loop, the specification the batched step is held to. For each
index in ascending order: decode (a failure finishes that sequence), sample, logprobs, emit (a
finished sequence stops there), last token, `tick_serial`, `spec_allowed` once; if allowed: save the
hidden state for the drafter (a failure `continue`s, which also skips the checkpoint), grammar mask,
effective drafts, propose (non-empty drafts become pending); then checkpoint.
"""

from __future__ import annotations

from reference.adaptive_spec import spec_allowed, tick_serial
from reference.emit import emit_token
from reference.errors import ModelError, format_chain
from reference.logprobs import extract_single_logprobs
from reference.model.protocol import Model
from reference.penalties import PositionKind, penalty_params_for
from reference.sample_step import sample_for_seq
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.spec_step import effective_drafts_under_grammar, mtp_grammar_mask_for
from reference.state import ActiveSeq
from reference.telemetry import log


def check_bootstrap_idxs(active: list[ActiveSeq], idxs: list[int]) -> None:
    """Raise `ValueError` unless `idxs` are strictly ascending indices into `active`."""
    prev = -1
    for i in idxs:
        if not 0 <= i < len(active):
            raise ValueError(f"bootstrap index {i} out of range for {len(active)} active sequences")
        if i <= prev:
            raise ValueError(f"bootstrap indices must be strictly ascending: {i} after {prev} in {idxs}")
        prev = i


def step_mtp_bootstrap_per_seq(
    model: Model,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
) -> None:
    """Bootstrap the draftless sequences `active[i]`, i in `idxs` (ascending), one at a time.
    Bad indices raise `ValueError` before any sequence is touched."""
    check_bootstrap_idxs(active, idxs)
    for i in idxs:
        a = active[i]
        try:
            logits = model.decode(a.last_token, a.seq, 0)
        except ModelError as e:
            log.error(f"mtp bootstrap decode: {format_chain(e)}")
            a.finished = True
            continue

        pen = penalty_params_for(a, PositionKind.VERIFY, sched.watchdog.min_reasoning_floor)
        try:
            tok = sample_for_seq(model, a, logits, pen, verify_ctx)
        except ModelError as e:
            log.error(f"mtp bootstrap sample error: {format_chain(e)}")
            a.finished = True
            continue
        k = a.top_logprobs
        lp = extract_single_logprobs(model, logits, tok, k) if k is not None else None
        emit_token(a, tok, lp, sched)
        if a.finished:
            continue
        a.last_token = tok
        tick_serial(a, sched)

        if spec_allowed(a, sched):
            try:
                model.save_hidden_for_mtp(a.seq, 0)
            except ModelError as e:
                log.error(f"save_hidden_for_mtp: {format_chain(e)}")
                continue  # D1: skips the checkpoint below too
            mask = mtp_grammar_mask_for(a)
            eff = effective_drafts_under_grammar(a, ladder_nd)
            try:
                drafts = model.run_mtp_propose_multi(a.last_token, a.seq.seq_len, eff, a.seq, 0, mask)
            except ModelError as e:
                log.error(f"run_mtp_propose_multi: {format_chain(e)}")
            else:
                if drafts:
                    a.pending_drafts = drafts
                else:
                    log.warning("MTP propose returned empty")

        try:
            model.start_checkpoint_async(a.seq)
        except ModelError as e:
            log.error(f"mtp bootstrap start_checkpoint_async: {format_chain(e)}")
