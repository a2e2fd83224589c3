"""Mutants of the fully batched step (`batched/vector_step.py` and the one-pass sampler it stands on):
the bugs a batched sampler and a vectorised step are prone to. Each runs the suite against that
implementation (`Mutant.impl`)."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

VECTOR_IMPL = "batched.vector_step:step_mtp_bootstrap_vectorized"
SAMPLE = "batched/batch_sampling.py"
CUTS = "batched/batch_cuts.py"
MASKS = "batched/batch_masks.py"
NOISE = "batched/batch_noise.py"
REQUESTS = "batched/sample_requests.py"
ROWS = "batched/vector_sample.py"
LOGPROBS = "batched/batch_logprobs.py"
STEP = "batched/vector_step.py"
TOPK = "keep = torch.where((k > 0) & (k < n_finite), k, n_finite)"
SKIP_FINISHED = "            if a.finished:\n                continue\n"
CHECKPOINT = SKIP_FINISHED + "            try:\n                model.start_checkpoint_async"
PROCESS = "proc = processed_rows(raw, [r.processing if r.host_error is None else NEUTRAL for r in requests])  # [m, V]"


def vector(mid: str, file: str, ids: str, description: str, *pairs: tuple[str, str]) -> Mutant:
    """A mutant of the fully batched step, run against it."""
    return mutant(mid, file, ids, description, *pairs, impl=VECTOR_IMPL)


MUTANTS: tuple[Mutant, ...] = (
    vector(
        "vec-seed-from-next-row",
        NOISE,
        "B8",
        "a sampled row's noise is keyed by the next row's seed (the seeds rotated by one)",
        ("zip(seeds, positions, strict=True)", "zip([*seeds[1:], *seeds[:1]], positions, strict=True)"),
    ),
    vector(
        "vec-noise-position-off-by-one",
        REQUESTS,
        "B8",
        "the noise is drawn for the output position after the one being sampled",
        ("position=len(a.output_tokens),", "position=len(a.output_tokens) + 1,"),
    ),
    vector(
        "vec-penalties-of-row-zero",
        MASKS,
        "B4 B8",
        "repetition applies to the tokens row 0 has seen, in every row",
        ("proc = torch.where(on & seen, scaled, proc)", "proc = torch.where(on & seen[:1], scaled, proc)"),
    ),
    vector(
        "vec-history-scope-ignored",
        REQUESTS,
        "B4",
        "penalties count the whole output, not only the tokens after the last tool-call end",
        (
            "history = penalty_history_scope(a.output_tokens, a.tool_call_end_token) if",
            "history = list(a.output_tokens) if",
        ),
    ),
    vector(
        "vec-eos-hold-any-row",
        ROWS,
        "B8",
        "the EOS mask is applied to every row as soon as one row holds EOS",
        ("held = eos_held(table).tolist()", "held = [bool(eos_held(table).any())] * n"),
    ),
    vector(
        "vec-grammar-mask-next-row",
        MASKS,
        "B8",
        "each grammar bitmask lands on the next row of the pass",
        (
            "idx = int_column(g_rows, proc.device)",
            "idx = int_column([(g + 1) % len(rows) for g in g_rows], proc.device)",
        ),
    ),
    vector(
        "vec-topp-one-short",
        CUTS,
        "B8",
        "top-p keeps the tokens strictly below the mass p, one short of the smallest prefix reaching it",
        ("((csum < p) & in_keep).sum(-1) + 1, keep)", "((csum < p) & in_keep).sum(-1), keep)"),
    ),
    vector(
        "vec-topk-one-short",
        CUTS,
        "B8",
        "top-k keeps k - 1 tokens",
        (
            "keep = torch.where((k > 0) & (k < n_finite), k, n_finite)",
            "keep = torch.where((k > 0) & (k < n_finite), k - 1, n_finite)",
        ),
    ),
    vector(
        "vec-masks-written-into-logits",
        SAMPLE,
        "B10",
        "the processed rows are written back into the decode's logits, so logprobs see penalties and masks",
        (
            PROCESS,
            PROCESS + "\n    logits.index_copy_(0, int_column([r.row for r in requests], dev), proc.to(logits.dtype))",
        ),
    ),
    vector(
        "vec-logprobs-count-of-the-batch",
        LOGPROBS,
        "B10",
        "every row gets as many top logprobs as the row that asked for the most",
        ("k = min(lr.ks[i], kmax)", "k = kmax"),
    ),
    vector(
        "vec-logprobs-tokens-misaligned",
        ROWS,
        "B10",
        "the logprob rows take the first r rows' tokens instead of their own",
        ("picked = tokens.index_select(0, int_column(rows, dev))", "picked = tokens[: len(rows)]"),
    ),
    vector(
        "vec-eligibility-in-index-order",
        ROWS,
        "B5 B1",
        "the row columns are built in sequence order, misaligned with the rows sorted by SSM slot",
        ("table = row_table(refs, floor)", "table = row_table(sorted(refs, key=lambda a: a.seq_id), floor)"),
    ),
    vector(
        "vec-argmax-failure-rows-unsampled",
        ROWS,
        "B7",
        "a failed argmax_batch sends no row to the sampling pass: eligible rows emit token 0",
        ("        passes.append(pass_for([j for j in range(n) if greedy[j]]))\n", "        pass\n"),
    ),
    vector(
        "vec-refusal-flags-misread",
        SAMPLE,
        "B9",
        "each row reads its four refusal flags from a window starting at its own index, not at 4 i",
        ("flags[4 * i : 4 * i + 4]", "flags[i : i + 4]"),
    ),
    vector(
        "vec-checkpoint-finished-rows",
        STEP,
        "B23",
        "finished rows checkpoint too",
        (CHECKPOINT, CHECKPOINT.replace(SKIP_FINISHED, "")),
    ),
    # The step-level bugs of the literal step's catalogue, written against this step's own code (the
    # literal step's mutants of code this one replaces do not reach it: `mutants.reach`).
    vector(
        "vec-decode-failure-finishes-one",
        STEP,
        "B3 D2",
        "a failed decode_batch finishes only the first row",
        (
            "        for a in refs:\n            a.finished = True\n        return",
            "        refs[0].finished = True\n        return",
        ),
    ),
    vector(
        "vec-sample-error-not-finished",
        STEP,
        "B9",
        "a row the sampling pass refused is logged but not finished (it stays active)",
        (
            'log.error(f"batched bootstrap sample error: {format_chain(r.error)}")\n            a.finished = True',
            'log.error(f"batched bootstrap sample error: {format_chain(r.error)}")',
        ),
    ),
    vector(
        "vec-finished-row-continues",
        STEP,
        "B11",
        "a row finished by emit goes on to last token, tick and propose",
        (
            "        emit_token(a, r.token, r.logprobs, sched)\n        if a.finished:\n            continue\n",
            "        emit_token(a, r.token, r.logprobs, sched)\n",
        ),
    ),
    vector(
        "vec-last-token-not-set",
        STEP,
        "B12 B17",
        "the sampled token does not become the last token",
        ("        a.last_token = r.token\n", ""),
    ),
    vector(
        "vec-tick-after-spec-allowed",
        STEP,
        "B12",
        "tick_serial runs after spec_allowed",
        (
            "        tick_serial(a, sched)\n"
            "        if spec_allowed(a, sched):  # can change re-probe state: called once\n"
            "            proposing.append(j)",
            "        allowed = spec_allowed(a, sched)\n        tick_serial(a, sched)\n        if allowed:\n"
            "            proposing.append(j)",
        ),
    ),
    vector(
        "vec-propose-after-failed-stash",
        STEP,
        "B13",
        "rows propose even when the stash failed",
        (
            "    if proposing and stash_all(model, n):  # B13\n",
            "    if proposing and (stash_all(model, n) or True):  # B13\n",
        ),
    ),
    vector(
        "vec-stash-proposing-rows-only",
        STEP,
        "B13",
        "only as many rows as propose are stashed, so a proposing row past them reads another row's hidden state",
        (
            "    if proposing and stash_all(model, n):  # B13\n",
            "    if proposing and stash_all(model, len(proposing)):  # B13\n",
        ),
    ),
    vector(
        "vec-stash-without-proposers",
        STEP,
        "B13",
        "the stash runs even when no row proposes",
        ("    if proposing and stash_all(model, n):  # B13\n", "    if stash_all(model, n) and proposing:  # B13\n"),
    ),
    vector(
        "vec-checkpoint-failure-stops",
        STEP,
        "B23",
        "a failed checkpoint stops the remaining checkpoints",
        (
            '                log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")',
            '                log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")\n'
            "                return",
        ),
    ),
    vector(
        "vec-once-key-wrong",
        STEP,
        "B24",
        "the ENGAGED notice uses the batched-argmax notice's once key",
        (
            'sched.telemetry.once("log:mtp_batched_bootstrap")',
            'sched.telemetry.once("log:mtp_bootstrap_batched_argmax")',
        ),
    ),
)
