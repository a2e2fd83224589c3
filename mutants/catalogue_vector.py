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
)
