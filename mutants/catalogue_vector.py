"""Mutants of the fully batched step (`batched/vector/step.py` and the one-pass sampler it stands on):
the bugs a batched sampler and a vectorised step are prone to. Each runs the suite against that
implementation (`Mutant.impl`)."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

VECTOR_IMPL = "vector"
SAMPLE = "batched/vector/sampling_pass.py"
CUTS = "batched/vector/rows.py"
MASKS = "batched/vector/rows.py"
NOISE = "batched/vector/noise.py"
REQUESTS = "batched/vector/sampling_pass.py"
ROWS = "batched/vector/sample.py"
CLASSES = "batched/vector/sample.py"
LOGPROBS = "batched/vector/logprobs.py"
STEP = "batched/vector/step.py"
PADDED = "batched/vector/passes.py"
CHECKS = "batched/vector/checks.py"
VMODEL = "batched/vector/model.py"
AHEAD = "batched/vector/propose_ahead.py"
MIRROR = "batched/vector/table_mirror.py"
TOPK = "keep = torch.where((k > 0) & (k < n_finite), k, n_finite)"
SKIP_FINISHED = "            if a.finished:\n                continue\n"
CHECKPOINT = SKIP_FINISHED + "            try:\n                model.start_checkpoint_async"
PROCESS = "proc = processed_rows(raw, hist_ids, cols, masked_ids_, grammar)  # [R, V]"


# Catalogue mutants of code this step runs that cannot change its behaviour, and why.
EQUIVALENT: dict[str, str] = {
    "model-stride-off-by-one": "the per-member check runs only where the all-members check refused; that check "
    "accepts a table that exactly fills the stride, so the per-member check's refusing it changes nothing",
}


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
        CLASSES,
        "B8",
        "the EOS mask is applied to every row as soon as one row holds EOS",
        (
            "held = [len(a.output_tokens) < a.min_tokens and len(a.eos_ids) > 0 for a in refs]",
            "held = [any(len(a.output_tokens) < a.min_tokens and len(a.eos_ids) > 0 for a in refs)] * len(refs)",
        ),
    ),
    vector(
        "vec-grammar-mask-next-row",
        MASKS,
        "B8",
        "each grammar bitmask lands on the next row of the pass",
        (
            "bitmask, live)",
            "bitmask, [(i + 1) % len(states) for i in live])",
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
            PROCESS + "\n        logits.index_copy_(0, row_ids, proc.to(logits.dtype))",
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
        STEP,
        "B5 B1",
        "the row classes are computed in sequence order, misaligned with the rows sorted by SSM slot",
        (
            "classes = row_classes(refs, sched.watchdog",
            "classes = row_classes(sorted(refs, key=lambda a: a.seq_id), sched.watchdog",
        ),
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
    vector(
        "vec-pad-ssm-store-own-row",
        PADDED,
        "B2",
        "a row without an SSM slot stores its own state (computed from zeros) into the slot the fixed-shape "
        "store points it at, the first slotted row's",
        (
            "store_src = [0] * n if first is None else [first if s is None else j for j, s in enumerate(slots)]",
            "store_src = [0] * n if first is None else list(range(n))",
        ),
    ),
    vector(
        "vec-pad-rows-at-position-zero",
        PADDED,
        "B2",
        "padding rows decode at position 0 of row 0's table, so they write row 0's new KV over its first "
        "position",
        (
            "padded(pos, rows),  # positions: padding rows decode at row 0's",
            "pos + [0] * (rows - n),",
        ),
    ),
    vector(
        "vec-pad-ids-at-zero",
        SAMPLE,
        "B4 B8",
        "the history and mask id sections are padded with id 0, not the scratch slot: row 0 counts and "
        "masks token 0",
        (
            "h, f, pad = _bucket(len(hist)), _bucket(len(masked)), rows * vocab",
            "h, f, pad = _bucket(len(hist)), _bucket(len(masked)), 0",
        ),
    ),
    vector(
        "vec-checks-skip-stride",
        CHECKS,
        "B26",
        "the all-members check lets a drafter table longer than the meta stride through, so the group "
        "proposes instead of failing with the stride overflow",
        ("    if any(len(t) > meta_stride for t in tables):\n        return False\n", ""),
    ),
    vector(
        "vec-pad-drafter-length-off-by-one",
        PADDED,
        "B17",
        "the padded drafter pass attends over one position fewer than it has written",
        ("RowMeta(blocks[i], offs[i], tabs, pos + (i + 1),", "RowMeta(blocks[i], offs[i], tabs, pos + i,"),
    ),
    vector(
        "vec-pad-conf-sliced-wrong",
        PADDED,
        "B18 D4",
        "the confidences handed back are the drafts' columns",
        ("[row[k:-1] for row in host] if with_conf else []", "[row[:k] for row in host] if with_conf else []"),
    ),
    vector(
        "vec-pad-draft-kv-block-of-first-position",
        PADDED,
        "B17",
        "every draft's KV goes into the block of the propose position, so a draft past a block boundary "
        "overwrites an earlier position of the same sequence",
        (
            "blocks = [tabs.gather(1, (q // bs)[:, None])[:, 0] for q in at]",
            "blocks = [tabs.gather(1, (pos // bs)[:, None])[:, 0] for q in at]",
        ),
    ),
    vector(
        "vec-static-inputs-loaded-once",
        PADDED,
        "B17 B14",
        "a static pass's inputs are loaded when its buffers are made and not on later calls of the same "
        "shape, so a second group of that shape proposes from the first group's tokens and tables",
        (
            "    p.load(sections)\n    tok, stash_rows",
            "    if p.calls == 0:\n        p.load(sections)\n    tok, stash_rows",
        ),
    ),
    vector(
        "vec-argmax-verdicts-stale",
        VMODEL,
        "B6 B7 B9",
        "argmax_batch takes the verdicts the last decode computed whatever logits it is given, so a row "
        "made bad after the decode (an injected NaN row) still gets a token",
        (
            "if memo is None or memo.logits is not logits or logits._version != memo.version:",
            "if memo is None:",
        ),
    ),
    vector(
        "vec-argmax-verdicts-blind-to-edits",
        VMODEL,
        "B6 B7 B9",
        "argmax_batch takes the decode's verdicts whenever it is given the very tensor the decode returned, "
        "even after that tensor was edited in place (a logits processor's NaN row still gets a token)",
        (
            "if memo is None or memo.logits is not logits or logits._version != memo.version:",
            "if memo is None or memo.logits is not logits:",
        ),
    ),
    vector(
        "vec-argmax-verdicts-rows-shifted",
        PADDED,
        "B6",
        "the verdicts handed to argmax_batch are the padded pass's last n rows, not its first n",
        ("HostCopy.of(verdicts[:, :n])", "HostCopy.of(verdicts[:, verdicts.shape[1] - n :])"),
    ),
    vector(
        "vec-ahead-tokens-unchecked",
        AHEAD,
        "B17 B19",
        "the call takes the propose launched ahead without checking that it ran on the call's tokens",
        ("if [int(row.pop()) for row in host] != tokens:", "if [int(row.pop()) for row in host] is None:"),
    ),
    vector(
        "vec-ahead-undo-keys-only",
        AHEAD,
        "B13 B17",
        "undoing a propose launched ahead puts back the drafter cache's keys but not its values",
        ("        kv.v[:, blocks, offs] = old_v\n", ""),
    ),
    vector(
        "vec-ahead-stash-from-edited-rows",
        AHEAD,
        "B13 B17",
        "a stash copied after the decode's hidden rows were edited still counts as the rows the pass read",
        ("ok = model.hidden_states._version == a.hidden_version and rows", "ok = rows"),
    ),
    vector(
        "vec-ahead-cache-writes-unseen",
        AHEAD,
        "B17",
        "the call takes the propose launched ahead even when the drafter cache was written since",
        ("        and kv_versions(model) == a.kv_versions\n", ""),
    ),
    vector(
        "vec-ahead-any-stash-rows",
        AHEAD,
        "B17",
        "the call takes the propose launched ahead whatever stash rows its members read",
        ("        and stash_idx == list(range(n))\n", ""),
    ),
    vector(
        "vec-ahead-fallback-before-undo",
        VMODEL,
        "B20 B22",
        "a per-sequence propose runs while the propose launched ahead is pending, whose undo later puts back "
        "the entries the per-sequence propose wrote",
        (
            "        self.settle_ahead()\n        return super().run_mtp_propose_multi",
            "        return super().run_mtp_propose_multi",
        ),
    ),
    vector(
        "vec-ahead-call-tokens-unchecked",
        VMODEL,
        "B17 B26",
        "a call that matches the propose launched ahead skips the check of its own tokens",
        ("            and ints_in(tokens, 0, self.cfg.vocab_size)\n", ""),
    ),
    vector(
        "vec-ahead-left-pending",
        STEP,
        "B13 B20 B21",
        "the step does not undo a propose launched ahead that no call took",
        ("        if ahead is not None:  # a propose", "        if ahead is None:  # a propose"),
    ),
    vector(
        "vec-tables-compared-by-length",
        MIRROR,
        "B2 B17",
        "the block tables on the device are rewritten only when a table's length changed, so a slot handed to "
        "another sequence, or a table edited in place, keeps the old table",
        ("if seen[s] != t]", "if seen[s] is None or len(seen[s]) != len(t)]"),
    ),
    vector(
        "vec-tables-seen-aliased",
        MIRROR,
        "B2 B17",
        "the mirror remembers each slot's table object, not a copy of it, so a table grown or edited in place "
        "looks unchanged and the device keeps the old one",
        ("self.seen[slots[j]] = list(tables[j])", "self.seen[slots[j]] = tables[j]"),
    ),
    vector(
        "vec-ahead-refused-not-undone",
        AHEAD,
        "B17 B21",
        "a propose launched ahead whose input row is not finite is refused, but the drafter cache entries it "
        "wrote stay",
        (
            "    if not all(row[-1] for row in host):  # refused: the pass wrote its entries all the same\n",
            "    if False:\n",
        ),
    ),
    vector(
        "vec-greedy-ignores-penalties",
        CLASSES,
        "B5 B4",
        "a row with a repetition penalty counts as plain greedy, so the batched argmax serves it unpenalised",
        ("        and a.repetition_penalty == 1.0\n", ""),
    ),
    vector(
        "vec-greedy-ignores-forced-zero",
        CLASSES,
        "B5",
        "a row whose temperature is forced to 0 is not served by the batched argmax",
        ("(a.temperature == 0.0 or force)", "a.temperature == 0.0"),
    ),
    vector(
        "vec-greedy-ignores-reasoning-floor",
        CLASSES,
        "B5 B4",
        "a row under the reasoning floor counts as plain greedy, so its banned ids are not banned",
        ("        and not reasoning_floor_holds(a, min_reasoning_floor)\n", ""),
    ),
)
