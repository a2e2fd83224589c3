"""The batched MTP bootstrap (B1-B24): one `decode_batch` for every draftless sequence, one batched
argmax for the greedy rows, per-row sampling and emit, a stash of every decode row, batched drafter
proposes in groups with per-sequence fallbacks, then checkpoints.

Per sequence it uses what the per-sequence loop uses (penalties, scoped history, sampling, emit,
adaptive speculation, the effective-drafts clamp). Known differences from that loop are D1-D4 of the
design: a failed save-hidden still checkpoints here (D1), a failed `decode_batch` finishes every row
(D2), logs follow row order (D3), group proposes record confidences (D4).
"""

from __future__ import annotations

from batched.propose_log import log_propose_batched_err
from batched.protocol import BatchedModel
from reference.adaptive_spec import spec_allowed, tick_serial
from reference.emit import emit_token
from reference.eos_hold import presample_hold_for
from reference.errors import ModelError, format_chain
from reference.logprobs import extract_single_logprobs
from reference.penalties import PenaltyGate, PenaltyParams, PositionKind, classify_penalties, penalty_params_for
from reference.sample_step import sample_for_seq
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.spec_step import effective_drafts_under_grammar, mtp_grammar_mask_for
from reference.state import ActiveSeq
from reference.step import check_bootstrap_idxs
from reference.telemetry import log


def select_rows(active: list[ActiveSeq], idxs: list[int]) -> list[ActiveSeq]:
    """B1: the sequences `active[i]` for the ascending `idxs`, ordered stably by SSM slot (slot
    index where a sequence has none), the order `decode_batch` expects. `active` is not reordered;
    row j is the j-th element of the result. Bad indices raise `ValueError` before anything runs."""
    check_bootstrap_idxs(active, idxs)
    refs = [active[i] for i in idxs]
    return sorted(refs, key=lambda a: a.seq.ssm_slot if a.seq.ssm_slot is not None else a.seq.slot_idx)


def greedy_eligible(a: ActiveSeq, pen: PenaltyParams, sched: SchedCtx, verify_ctx: LogitsContext) -> bool:
    """B5: the row would take the fast-greedy branch of sampling with no grammar, no EOS hold and
    neutral penalties, and the boot-argmax lever is on."""
    sampling = verify_ctx.sampling
    return (
        sched.levers.mtp_boot_argmax
        and sampling.fast_greedy_grammar
        and (a.temperature == 0.0 or sampling.force_temp_zero)
        and a.grammar_state is None
        and not presample_hold_for(a, len(a.output_tokens)).any()
        and classify_penalties(pen) == PenaltyGate.NEUTRAL
    )


def step_mtp_bootstrap_batched(
    model: BatchedModel,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
) -> None:
    """Bootstrap the draftless sequences `active[i]`, i in `idxs` (ascending), as one batch."""
    refs = select_rows(active, idxs)
    n = len(refs)
    tokens = [a.last_token for a in refs]

    # B2/B3: one decode for all rows; a failure finishes every row and retries nothing (a retry
    # could decode a sequence twice if the failed call had already advanced it).
    try:
        logits = model.decode_batch(tokens, [a.seq for a in refs], 0)  # [n, vocab]
    except ModelError as e:
        log.error(f"batched bootstrap decode_batch (n={n}): {format_chain(e)}")
        for a in refs:
            a.finished = True
        return

    # B4-B7: one argmax launch for the greedy rows when at least two are eligible.
    floor = sched.watchdog.min_reasoning_floor
    pen = [penalty_params_for(a, PositionKind.VERIFY, floor) for a in refs]
    greedy = [greedy_eligible(a, p, sched, verify_ctx) for a, p in zip(refs, pen, strict=True)]
    n_greedy = sum(greedy)
    batch_toks: list[int] | None = None
    if n_greedy >= 2:
        try:
            batch_toks = model.argmax_batch(logits, n, 0)
        except ModelError as e:
            log.error(f"batched bootstrap argmax_batch (n={n}): {format_chain(e)}")
        else:
            if sched.telemetry.once("log:mtp_bootstrap_batched_argmax"):
                log.info(
                    f"MTP bootstrap batched argmax ENGAGED (n={n}, greedy_rows={n_greedy}): "
                    f"one launch + one D2H replaces {n_greedy} single-CTA scans + syncs"
                )

    # B8-B12: per-row sample, logprobs, emit, adaptive speculation.
    proposing: list[int] = []
    for j, a in enumerate(refs):
        row_logits = logits[j]  # [vocab]
        if batch_toks is not None and greedy[j]:
            tok = batch_toks[j]
        else:
            try:
                tok = sample_for_seq(model, a, row_logits, pen[j], verify_ctx)
            except ModelError as e:
                log.error(f"batched bootstrap sample error: {format_chain(e)}")
                a.finished = True
                continue
        lp = extract_single_logprobs(model, row_logits, tok, a.top_logprobs) if a.top_logprobs is not None else None
        emit_token(a, tok, lp, sched)
        if a.finished:
            continue
        a.last_token = tok
        tick_serial(a, sched)
        if spec_allowed(a, sched):  # can change re-probe state: called once
            proposing.append(j)

    # B13: stash every decode row (slot j = row j) before any propose overwrites `hidden_states`.
    stash_ok = False
    if proposing:
        try:
            model.stash_verify_hidden_rows(list(range(n)), 0)
            stash_ok = True
        except ModelError as e:
            log.error(f"batched bootstrap stash_verify_hidden_rows: {format_chain(e)}")

    if stash_ok:
        propose_from_stash(model, refs, proposing, sched, ladder_nd)

    # B23: every unfinished row checkpoints.
    for a in refs:
        if a.finished:
            continue
        try:
            model.start_checkpoint_async(a.seq)
        except ModelError as e:
            log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")

    if sched.telemetry.once("log:mtp_batched_bootstrap"):
        log.info(
            f"MTP batched bootstrap ENGAGED (n={n}): one decode_batch + batched propose "
            f"replaces {n} M=1 decodes + {n} drafter forwards per draft position"
        )


def propose_from_stash(
    model: BatchedModel, refs: list[ActiveSeq], proposing: list[int], sched: SchedCtx, ladder_nd: int
) -> None:
    """B14-B22: batched proposes in groups of at most the model's cap for the rows with no grammar
    and a full ladder; every other proposing row (and every member of a group that returned None)
    proposes per sequence from its stash row."""
    group_cap = max(model.mtp_propose_batch_max(), 1)
    if sched.telemetry.once("log:dflash_batch_propose_gate"):
        log.debug(
            f"DFlash batched propose gate (first tick) group_cap={group_cap} "
            f"proposing={len(proposing)} ladder_nd={ladder_nd}"
        )
    batchable = [
        s
        for s, row in enumerate(proposing)
        if refs[row].grammar_state is None and effective_drafts_under_grammar(refs[row], ladder_nd) == ladder_nd
    ]
    done = [False] * len(proposing)
    levers = sched.levers
    want_conf = levers.dcut_enabled or levers.draft_stop_logprob is not None  # B18
    conf: list[list[float]] = []
    if group_cap >= 2 and ladder_nd >= 1:
        for start in range(0, len(batchable), group_cap):
            group = batchable[start : start + group_cap]
            if len(group) < 2:
                continue
            members = [refs[proposing[s]] for s in group]
            try:
                result = model.run_mtp_propose_batched(
                    [a.last_token for a in members],  # B17
                    [a.seq.seq_len for a in members],
                    [proposing[s] for s in group],
                    ladder_nd,
                    [a.seq for a in members],
                    0,
                    conf if want_conf else None,
                )
            except ModelError as e:  # B21: no drafts this step, and no per-sequence retry
                log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)
                for s in group:
                    done[s] = True
                continue
            if result is None:  # B20: members fall back per sequence
                continue
            for g, s in enumerate(group):  # B19
                if result[g]:
                    members[g].pending_drafts = list(result[g])
                    members[g].pending_draft_conf = list(conf[g]) if g < len(conf) else []
                done[s] = True

    for s, row in enumerate(proposing):  # B22
        if done[s]:
            continue
        try:
            model.save_hidden_for_mtp_from_stash(row, 0)
        except ModelError as e:
            log.error(f"batched bootstrap save_hidden_for_mtp_from_stash({row}): {format_chain(e)}")
            continue
        a = refs[row]
        mask = mtp_grammar_mask_for(a)
        eff = effective_drafts_under_grammar(a, ladder_nd)
        try:
            drafts = model.run_mtp_propose_multi(a.last_token, a.seq.seq_len, eff, a.seq, 0, mask)
        except ModelError as e:
            log.error(f"run_mtp_propose_multi: {format_chain(e)}")
            continue
        if drafts:
            a.pending_drafts = drafts
        else:
            log.warning("MTP propose returned empty")
