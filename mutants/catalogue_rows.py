"""Mutants of the batched step's decode, argmax and per-row part (`batched/step.py`, B1-B12)."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

STEP = "batched/step.py"
ROW_KEY = "key=lambda a: a.seq.ssm_slot if a.seq.ssm_slot is not None else a.seq.slot_idx"
SAMPLE = "tok = sample_for_seq(model, a, row_logits, pen[j], verify_ctx)"
SAMPLE_IMPORT = "from reference.sample_step import sample_for_seq\n"
INLINE_IMPORTS = (
    "from reference.eos_hold import eos_mask_ids\n"
    "from reference.sample_step import sample_for_seq\n"
    "from reference.sampling import sample_token_with_grammar\n"
)


def inline_sample(eos_mask: str, history: str) -> str:
    """The sampling call written out by hand with the given EOS-mask and history expressions."""
    return (
        "tok = sample_token_with_grammar(\n"
        "                    model, row_logits, a.temperature, a.top_k, a.top_p,\n"
        f"                    {eos_mask}, a.grammar_state, pen[j], {history},\n"
        "                    verify_ctx.sampling, seq_id=a.seq_id, seed=a.sampling_seed,\n"
        "                    position=len(a.output_tokens),\n"
        "                )"
    )


MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "rows-by-slot-idx",
        STEP,
        "B1",
        "rows are ordered by slot index instead of SSM slot",
        (ROW_KEY, "key=lambda a: a.seq.slot_idx"),
    ),
    mutant(
        "rows-unstable",
        STEP,
        "B1",
        "rows are sorted unstably: equal keys come out in reverse index order",
        (f"return sorted(refs, {ROW_KEY})", f"return sorted(reversed(refs), {ROW_KEY})"),
    ),
    mutant(
        "rows-ssm-slot-zero",
        STEP,
        "B1",
        "SSM slot 0 is taken for 'no SSM slot' (truthiness test) and falls back to the slot index",
        (ROW_KEY, "key=lambda a: a.seq.ssm_slot or a.seq.slot_idx"),
    ),
    mutant(
        "decode-tokens-index-order",
        STEP,
        "B2 B1",
        "decode_batch gets the last tokens in index order, not row order",
        ("tokens = [a.last_token for a in refs]", "tokens = [active[i].last_token for i in idxs]"),
    ),
    mutant(
        "decode-failure-finishes-one",
        STEP,
        "B3 D2",
        "a failed decode_batch finishes only the first row",
        (
            "        for a in refs:\n            a.finished = True\n        return\n",
            "        refs[0].finished = True\n        return\n",
        ),
    ),
    mutant(
        "decode-failure-retried",
        STEP,
        "B3 D2",
        "a failed decode_batch is retried one sequence at a time",
        (
            "        for a in refs:\n            a.finished = True\n        return\n",
            "        step_mtp_bootstrap_per_seq(model, active, sched, idxs, ladder_nd, verify_ctx)\n        return\n",
        ),
        (
            "from reference.step import check_bootstrap_idxs\n",
            "from reference.step import check_bootstrap_idxs, step_mtp_bootstrap_per_seq\n",
        ),
    ),
    mutant(
        "penalties-draft-kind",
        STEP,
        "B4",
        "penalties are built for the draft position kind (no repetition, frequency, presence)",
        ("penalty_params_for(a, PositionKind.VERIFY, floor)", "penalty_params_for(a, PositionKind.DRAFT, floor)"),
    ),
    mutant(
        "penalties-no-reasoning-floor",
        STEP,
        "B4",
        "the reasoning floor is left at 0 instead of the watchdog's",
        ("floor = sched.watchdog.min_reasoning_floor", "floor = 0"),
    ),
    mutant(
        "penalties-of-row-zero",
        STEP,
        "B4 B8",
        "every row samples with row 0's penalties",
        (SAMPLE, "tok = sample_for_seq(model, a, row_logits, pen[0], verify_ctx)"),
    ),
    mutant(
        "greedy-ignores-eos-hold",
        STEP,
        "B5",
        "a row with an EOS hold counts as greedy-eligible",
        ("        and not presample_hold_for(a, len(a.output_tokens)).any()\n", ""),
    ),
    mutant(
        "greedy-ignores-penalties",
        STEP,
        "B5",
        "the argmax fast path is taken for a row with active penalties",
        ("        and classify_penalties(pen) == PenaltyGate.NEUTRAL\n", ""),
    ),
    mutant(
        "greedy-ignores-forced-zero",
        STEP,
        "B5",
        "force_temp_zero is not read: only temperature 0 rows are eligible",
        ("(a.temperature == 0.0 or sampling.force_temp_zero)", "a.temperature == 0.0"),
    ),
    mutant(
        "greedy-ignores-grammar",
        STEP,
        "B5",
        "a grammar row counts as greedy-eligible",
        ("        and a.grammar_state is None\n", ""),
    ),
    mutant(
        "greedy-ignores-lever",
        STEP,
        "B5",
        "the boot-argmax lever is not read",
        ("        sched.levers.mtp_boot_argmax\n        and ", "        "),
    ),
    mutant(
        "greedy-ignores-fast-greedy",
        STEP,
        "B5",
        "the fast-greedy sampling switch is not read",
        ("        and sampling.fast_greedy_grammar\n", ""),
    ),
    mutant(
        "argmax-for-one-row",
        STEP,
        "B6",
        "argmax_batch runs with a single eligible row",
        ("if n_greedy >= 2:", "if n_greedy >= 1:"),
    ),
    mutant(
        "argmax-wrong-rank",
        STEP,
        "B6 B7",
        "argmax_batch is asked on rank 1: it always fails and every row quietly samples per row",
        ("batch_toks = model.argmax_batch(logits, n, 0)", "batch_toks = model.argmax_batch(logits, n, 1)"),
    ),
    mutant(
        "argmax-tokens-for-all-rows",
        STEP,
        "B6",
        "the batched argmax token is used for a row that is not eligible",
        ("if batch_toks is not None and greedy[j]:", "if batch_toks is not None:"),
    ),
    mutant(
        "argmax-over-eligible-count",
        STEP,
        "B6",
        "argmax_batch is asked for the first n_greedy rows instead of all n",
        ("model.argmax_batch(logits, n, 0)", "model.argmax_batch(logits, n_greedy, 0)"),
    ),
    mutant(
        "argmax-failure-fatal",
        STEP,
        "B7",
        "a failed argmax_batch finishes every row",
        (
            '            log.error(f"batched bootstrap argmax_batch (n={n}): {format_chain(e)}")\n',
            '            log.error(f"batched bootstrap argmax_batch (n={n}): {format_chain(e)}")\n'
            "            for a in refs:\n                a.finished = True\n            return\n",
        ),
    ),
    mutant(
        "sample-history-unscoped",
        STEP,
        "B8",
        "sampling written out by hand penalizes the whole history, ignoring the tool-call scope",
        (SAMPLE, inline_sample("eos_mask_ids(a, len(a.output_tokens))", "a.output_tokens")),
        (SAMPLE_IMPORT, INLINE_IMPORTS),
    ),
    mutant(
        "sample-no-eos-mask",
        STEP,
        "B8",
        "sampling written out by hand passes no EOS mask during an EOS hold",
        (SAMPLE, inline_sample("()", "penalty_history_scope(a.output_tokens, a.tool_call_end_token)")),
        (SAMPLE_IMPORT, INLINE_IMPORTS),
        (
            "PositionKind, classify_penalties, penalty_params_for",
            "PositionKind, classify_penalties, penalty_history_scope, penalty_params_for",
        ),
    ),
    mutant(
        "sample-failure-stops-loop",
        STEP,
        "B9",
        "a sampling failure stops the row loop (break instead of continue)",
        (
            '                log.error(f"batched bootstrap sample error: {format_chain(e)}")\n'
            "                a.finished = True\n                continue\n",
            '                log.error(f"batched bootstrap sample error: {format_chain(e)}")\n'
            "                a.finished = True\n                break\n",
        ),
    ),
    mutant(
        "logprobs-after-penalties",
        STEP,
        "B10",
        "logprobs are read from the row after penalties were applied to it (sampling modified it in place)",
        (
            "extract_single_logprobs(model, row_logits, tok, a.top_logprobs)",
            "extract_single_logprobs(model, apply_penalties(row_logits, pen[j], a.output_tokens), tok, a.top_logprobs)",
        ),
        (
            "from reference.penalties import PenaltyGate,",
            "from reference.penalties import PenaltyGate, apply_penalties,",
        ),
    ),
    mutant(
        "logprobs-not-emitted",
        STEP,
        "B10 B11",
        "the logprobs are computed but emit gets None",
        ("emit_token(a, tok, lp, sched)", "emit_token(a, tok, None, sched)"),
    ),
    mutant(
        "finished-row-continues",
        STEP,
        "B11",
        "a row finished by emit goes on to last token, tick and propose",
        ("        if a.finished:\n            continue\n        a.last_token = tok\n", "        a.last_token = tok\n"),
    ),
    mutant(
        "last-token-not-set",
        STEP,
        "B12 B17",
        "the sampled token does not become the last token",
        ("        a.last_token = tok\n", ""),
    ),
    mutant(
        "tick-after-spec-allowed",
        STEP,
        "B12",
        "tick_serial runs after spec_allowed",
        (
            "        tick_serial(a, sched)\n"
            "        if spec_allowed(a, sched):  # can change re-probe state: called once\n"
            "            proposing.append(j)\n",
            "        if spec_allowed(a, sched):\n            proposing.append(j)\n        tick_serial(a, sched)\n",
        ),
    ),
    mutant(
        "spec-allowed-twice",
        STEP,
        "B12 B13",
        "spec_allowed is called again when deciding whether to stash",
        (
            "    if proposing:\n        try:\n",
            "    if any(spec_allowed(refs[j], sched) for j in proposing):\n        try:\n",
        ),
    ),
)
