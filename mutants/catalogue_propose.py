"""Mutants of the batched step's stash, group proposes, fallbacks, checkpoints and once-per-process
logs (`batched/step.py`, B13-B24)."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

STEP = "batched/step.py"
GROUP_OK = (
    "                if result[g]:\n"
    "                    members[g].pending_drafts = list(result[g])\n"
    "                    members[g].pending_draft_conf = list(conf[g]) if g < len(conf) else []\n"
    "                done[s] = True\n"
)
GROUP_ERR = (
    '                log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)\n'
    "                for s in group:\n"
    "                    done[s] = True\n"
    "                continue\n"
)
CKPT_LOOP = "    for a in refs:\n        if a.finished:\n            continue\n        try:\n"

MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "stash-proposing-rows-only",
        STEP,
        "B13",
        "only the proposing rows are stashed, so stash slot j is no longer decode row j",
        ("model.stash_verify_hidden_rows(list(range(n)), 0)", "model.stash_verify_hidden_rows(proposing, 0)"),
    ),
    mutant(
        "propose-after-failed-stash",
        STEP,
        "B13",
        "rows propose even when the stash failed",
        ("    if stash_ok:\n        propose_from_stash(", "    if proposing:\n        propose_from_stash("),
    ),
    mutant(
        "stash-without-proposers",
        STEP,
        "B13",
        "the stash runs even when no row proposes",
        ("    if proposing:\n        try:\n", "    if refs:\n        try:\n"),
    ),
    mutant(
        "group-cap-unclamped",
        STEP,
        "B14 B24",
        "the group cap is not clamped to at least 1",
        ("group_cap = max(model.mtp_propose_batch_max(), 1)", "group_cap = model.mtp_propose_batch_max()"),
    ),
    mutant(
        "batchable-with-grammar",
        STEP,
        "B15",
        "grammar rows are batchable when their effective drafts equal the ladder",
        (
            "if refs[row].grammar_state is None and effective_drafts_under_grammar(refs[row], ladder_nd) == ladder_nd",
            "if effective_drafts_under_grammar(refs[row], ladder_nd) == ladder_nd",
        ),
    ),
    mutant(
        "batchable-any-drafts",
        STEP,
        "B15",
        "a row whose drafts are clamped below the ladder is batchable",
        (
            "effective_drafts_under_grammar(refs[row], ladder_nd) == ladder_nd",
            "effective_drafts_under_grammar(refs[row], ladder_nd) > 0",
        ),
    ),
    mutant(
        "group-chunk-off-by-one",
        STEP,
        "B16",
        "groups are chunked one member too large",
        ("group = batchable[start : start + group_cap]", "group = batchable[start : start + group_cap + 1]"),
    ),
    mutant(
        "group-of-one-batched",
        STEP,
        "B16",
        "a group of one proposes batched instead of falling back",
        ("            if len(group) < 2:\n", "            if not group:\n"),
    ),
    mutant(
        "group-ladder-zero",
        STEP,
        "B16",
        "batched proposes run with a ladder of 0",
        ("if group_cap >= 2 and ladder_nd >= 1:", "if group_cap >= 2:"),
    ),
    mutant(
        "group-position-off-by-one",
        STEP,
        "B17",
        "the drafter position is seq_len - 1",
        ("[a.seq.seq_len for a in members]", "[a.seq.seq_len - 1 for a in members]"),
    ),
    mutant(
        "group-stash-index-of-proposer",
        STEP,
        "B17 B13",
        "the stash row passed is the position among proposers, not the decode row",
        ("[proposing[s] for s in group],", "list(group),"),
    ),
    mutant(
        "conf-dcut-only",
        STEP,
        "B18",
        "confidences are asked for only with D-Cut, not for a draft-stop logprob",
        ("want_conf = levers.dcut_enabled or levers.draft_stop_logprob is not None", "want_conf = levers.dcut_enabled"),
    ),
    mutant(
        "conf-wrong-group-index",
        STEP,
        "B19 B18 D4",
        "a member's confidences are indexed by its position among proposers, not in its group",
        ("list(conf[g]) if g < len(conf) else []", "list(conf[s]) if s < len(conf) else []"),
    ),
    mutant(
        "group-empty-drafts-replace",
        STEP,
        "B19",
        "an empty member result still replaces the pending drafts and confidences",
        (
            GROUP_OK,
            "                members[g].pending_drafts = list(result[g])\n"
            "                members[g].pending_draft_conf = list(conf[g]) if g < len(conf) else []\n"
            "                done[s] = True\n",
        ),
    ),
    mutant(
        "group-empty-member-not-done",
        STEP,
        "B19 B22",
        "a member with an empty result is not marked done and proposes again per sequence",
        (
            GROUP_OK,
            "                if result[g]:\n"
            "                    members[g].pending_drafts = list(result[g])\n"
            "                    members[g].pending_draft_conf = list(conf[g]) if g < len(conf) else []\n"
            "                    done[s] = True\n",
        ),
    ),
    mutant(
        "group-none-done",
        STEP,
        "B20",
        "a group that returned None is marked done, so its members never propose",
        (
            "            if result is None:  # B20: members fall back per sequence\n                continue\n",
            "            if result is None:\n                for s in group:\n                    done[s] = True\n"
            "                continue\n",
        ),
    ),
    mutant(
        "group-error-not-done",
        STEP,
        "B21",
        "a failed group is left not done: its members propose again per sequence",
        (
            GROUP_ERR,
            '                log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)\n'
            "                continue\n",
        ),
    ),
    mutant(
        "group-error-not-logged",
        STEP,
        "B21 B25",
        "a failed group is not logged",
        ('                log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)\n', ""),
    ),
    mutant(
        "fallback-save-failure-proposes",
        STEP,
        "B22",
        "a failed save from the stash does not skip that row's propose",
        (
            '            log.error(f"batched bootstrap save_hidden_for_mtp_from_stash({row}): {format_chain(e)}")\n'
            "            continue\n",
            '            log.error(f"batched bootstrap save_hidden_for_mtp_from_stash({row}): {format_chain(e)}")\n',
        ),
    ),
    mutant(
        "fallback-no-grammar-mask",
        STEP,
        "B22",
        "the per-sequence fallback proposes without the grammar mask",
        ("mask = mtp_grammar_mask_for(a)", "mask = None"),
    ),
    mutant(
        "fallback-full-ladder",
        STEP,
        "B22",
        "the per-sequence fallback proposes the full ladder instead of the effective drafts",
        ("eff = effective_drafts_under_grammar(a, ladder_nd)", "eff = ladder_nd"),
    ),
    mutant(
        "fallback-error-at-warning",
        STEP,
        "B22",
        "a failed per-sequence propose is logged at warning",
        (
            'log.error(f"run_mtp_propose_multi: {format_chain(e)}")',
            'log.warning(f"run_mtp_propose_multi: {format_chain(e)}")',
        ),
    ),
    mutant(
        "fallback-empty-silent",
        STEP,
        "B22",
        "an empty per-sequence propose logs at debug instead of warning",
        ('log.warning("MTP propose returned empty")', 'log.debug("MTP propose returned empty")'),
    ),
    mutant(
        "checkpoint-finished-row",
        STEP,
        "B23",
        "a finished row is checkpointed",
        (CKPT_LOOP, "    for a in refs:\n        try:\n"),
    ),
    mutant(
        "checkpoint-proposers-only",
        STEP,
        "B23",
        "only proposing rows are checkpointed",
        (
            CKPT_LOOP,
            "    for a in (refs[j] for j in proposing):\n        if a.finished:\n            continue\n        try:\n",
        ),
    ),
    mutant(
        "checkpoint-failure-stops",
        STEP,
        "B23",
        "a failed checkpoint stops the remaining checkpoints",
        (
            '            log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")\n',
            '            log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")\n'
            "            break\n",
        ),
    ),
    mutant(
        "once-key-wrong",
        STEP,
        "B24",
        "the ENGAGED notice uses the batched-argmax notice's once key",
        (
            'if sched.telemetry.once("log:mtp_batched_bootstrap"):',
            'if sched.telemetry.once("log:mtp_bootstrap_batched_argmax"):',
        ),
    ),
    mutant(
        "once-key-never-marked",
        STEP,
        "B24",
        "the propose-gate notice checks its key without marking it, so it logs every tick",
        (
            'if sched.telemetry.once("log:dflash_batch_propose_gate"):',
            'if "log:dflash_batch_propose_gate" not in sched.telemetry.seen:',
        ),
    ),
)
