"""The checks a property applies to one side-by-side run; each returns the mismatches it found.

`check_equivalence` is the comparator (P1, P5). `check_calls` holds the implementation's model calls
against the oracle's plan (P3). `check_logs` holds its log records, as a multiset (D3), against the
lines the seed writes for the outcomes that happened (P7).
"""

from __future__ import annotations

from collections import Counter

from properties.compare import Mismatch, compare
from properties.faults import Call
from properties.harness import SideBySide, envelope
from properties.oracle import KEY_ARGMAX, KEY_ENGAGED, KEY_GATE, expected_plan
from properties.translate import explained

check_equivalence = compare


def _calls(sbs: SideBySide, op: str) -> list[Call]:
    return [c for c in sbs.impl.model.calls if c.op == op]


def _expect(out: list[Mismatch], ok: bool, what: str, expected: object, got: object, ids: tuple[str, ...]) -> None:
    if not ok:
        out.append(Mismatch(None, what, str(expected), str(got), ids))


def check_calls(sbs: SideBySide) -> list[Mismatch]:
    """P3: one decode_batch of the rows in slot order with their last tokens; no per-sequence
    decode; argmax_batch once exactly when two or more rows are eligible; the stash of all rows
    exactly when a row proposes; the groups the oracle forms, with their inputs; per-sequence
    fallbacks for the rest; one checkpoint per unfinished row."""
    plan = expected_plan(sbs)
    out: list[Mismatch] = []
    decodes = _calls(sbs, "decode_batch")
    _expect(out, len(decodes) == 1, "decode_batch calls", 1, len(decodes), ("B2",))
    _expect(out, not _calls(sbs, "decode"), "per-sequence decode calls", 0, len(_calls(sbs, "decode")), ("B2",))
    if len(decodes) != 1:
        return out
    d = decodes[0]
    _expect(out, list(d.slots) == plan.rows, "decode_batch row order (slots)", plan.rows, list(d.slots), ("B1",))
    _expect(out, d.detail["tokens"] == plan.tokens, "decode_batch tokens", plan.tokens, d.detail["tokens"], ("B2",))
    if d.outcome == "err":
        later = [c.op for c in sbs.impl.model.calls[sbs.impl.model.calls.index(d) + 1 :]]
        _expect(out, not later, "calls after a failed decode_batch", [], later, ("B3",))
        return out

    n_eligible = sum(plan.eligible)
    argmaxes = _calls(sbs, "argmax_batch")
    _expect(
        out,
        len(argmaxes) == (1 if n_eligible >= 2 else 0),
        "argmax_batch calls",
        f"{1 if n_eligible >= 2 else 0} ({n_eligible} eligible rows)",
        len(argmaxes),
        ("B5", "B6"),
    )
    out += _check_fast_greedy(sbs, plan.eligible, argmaxes)

    stashes = _calls(sbs, "stash_verify_hidden_rows")
    want_stash = 1 if plan.proposing_rows else 0
    _expect(
        out,
        len(stashes) == want_stash,
        "stash_verify_hidden_rows calls",
        f"{want_stash} (proposing rows {plan.proposing_rows})",
        len(stashes),
        ("B12", "B13"),
    )
    if stashes:
        rows = stashes[0].detail["rows"]
        _expect(out, rows == list(range(len(plan.rows))), "stash rows", list(range(len(plan.rows))), rows, ("B13",))
    stash_ok = bool(stashes) and stashes[0].outcome == "ok"

    groups = _calls(sbs, "run_mtp_propose_batched")
    want_groups = [g.slots for g in plan.groups] if stash_ok else []
    _expect(
        out,
        [c.slots for c in groups] == want_groups,
        "run_mtp_propose_batched groups (slots)",
        want_groups,
        [c.slots for c in groups],
        ("B14", "B15", "B16"),
    )
    after = {a.seq.slot_idx: a for a in sbs.ref.world.active}
    for c, g in zip(groups, plan.groups, strict=False):
        if c.slots != g.slots:
            break
        want = {
            "tokens": [after[s].last_token for s in g.slots],
            "positions": [after[s].seq.seq_len for s in g.slots],
            "stash_idx": list(g.rows),
            "k": sbs.spec.step.ladder_nd,
            "conf": plan.want_conf,
        }
        got = {k: c.detail[k] for k in want}
        _expect(out, got == want, f"run_mtp_propose_batched inputs of group {list(g.slots)}", want, got, ("B17", "B18"))
        out += _check_stride(sbs, c)

    fallback_rows = _fallback_rows(plan, groups, stash_ok)
    saves = _calls(sbs, "save_hidden_for_mtp_from_stash")
    got_rows = [c.detail["row"] for c in saves]
    _expect(
        out,
        got_rows == fallback_rows,
        "save_hidden_for_mtp_from_stash rows",
        fallback_rows,
        got_rows,
        ("B19", "B20", "B21", "B22"),
    )
    saved_ok = [plan.rows[c.detail["row"]] for c in saves if c.outcome == "ok"]
    proposes = [c.slots[0] for c in _calls(sbs, "run_mtp_propose_multi")]
    _expect(out, proposes == saved_ok, "per-sequence proposes (slots)", saved_ok, proposes, ("B22",))

    out += check_failures_explained(sbs)
    unfinished = [s for s in plan.rows if not _impl_seq(sbs, s).finished]
    ckpts = [c.slots[0] for c in _calls(sbs, "start_checkpoint_async")]
    _expect(out, ckpts == unfinished, "checkpoints (slots, row order)", unfinished, ckpts, ("B23",))
    return out


# The behaviour ids a call's unexplained failure breaks.
FAILURE_IDS = {
    "decode_batch": ("B2",),
    "argmax_batch": ("B6",),
    "stash_verify_hidden_rows": ("B13",),
    "run_mtp_propose_batched": ("B17",),
    "save_hidden_for_mtp_from_stash": ("B22",),
    "run_mtp_propose_multi": ("B22",),
    "start_checkpoint_async": ("B23",),
}


def check_failures_explained(sbs: SideBySide) -> list[Mismatch]:
    """Every call that failed has a cause: an injected fault, a world the call cannot serve (a full
    sequence, a stash too small, a table over the meta stride), or, for `argmax_batch`, NaN logits
    from an injected NaN row. Any other failure comes from the arguments the implementation passed.
    Its visible outcome can still match: a failed `argmax_batch` falls back to per-row sampling with
    the same tokens. The batched path has stopped working all the same."""
    env = envelope(sbs.before)
    nan_logits = any(c.op == "decode_batch" and c.outcome == "nan_row" for c in sbs.impl.model.calls)
    out: list[Mismatch] = []
    for c in sbs.impl.model.calls:
        if c.outcome != "err" or explained(c, env):
            continue
        if c.op == "argmax_batch" and nan_logits and "NaN" in c.error:
            continue
        out.append(
            Mismatch(None, f"{c.op} failed without a cause in the world", "success", c.error, FAILURE_IDS.get(c.op, ()))
        )
    return out


def _check_stride(sbs: SideBySide, c: Call) -> list[Mismatch]:
    """B26: a group call that runs (ladder within the batched drafter's limit, no injected outcome)
    fails with "exceeds meta stride" exactly when a member's drafter block table is longer than the
    stride (or with an error its other checks raise first). Past the stride the packed table loses
    blocks, which changes nothing visible while the lost blocks are ones the drafter does not write,
    so only the call itself shows a missed check."""
    if c.injected or sbs.spec.step.ladder_nd > sbs.spec.model.max_batched_drafts:
        return []
    env = envelope(sbs.before)
    stride = env.meta_stride
    over = [s for s in c.slots if len(env.before[s].draft_block_table) > stride]
    stride_error = c.outcome == "err" and "exceeds meta stride" in c.error
    out: list[Mismatch] = []
    _expect(
        out,
        c.outcome == "err" if over else not stride_error,
        f"run_mtp_propose_batched outcome of group {list(c.slots)} (meta stride {stride})",
        f"'exceeds meta stride' for slots {over}" if over else "no stride error",
        f"{c.outcome}: {c.error}" if c.outcome == "err" else c.outcome,
        ("B26",),
    )
    return out


def _check_fast_greedy(sbs: SideBySide, eligible: list[bool], argmaxes: list[Call]) -> list[Mismatch]:
    """B5, B8: every row the batched argmax did not serve samples per row exactly as the loop does,
    so it takes the per-row fast-greedy argmax (`argmax_on_device`) exactly when the loop's row
    did: the implementation makes the loop's number of those calls, less one per eligible row a
    successful `argmax_batch` served."""
    served = sum(eligible) if any(c.outcome == "ok" for c in argmaxes) else 0
    loop = sum(c.op == "argmax_on_device" for c in sbs.ref.model.calls)
    got = len(_calls(sbs, "argmax_on_device"))
    out: list[Mismatch] = []
    _expect(
        out,
        got == loop - served,
        "per-row fast-greedy argmax calls",
        f"{loop - served} (the loop's {loop}, less {served} rows the batched argmax served)",
        got,
        ("B5", "B8"),
    )
    return out


def _impl_seq(sbs: SideBySide, slot: int):
    return next(a for a in sbs.impl.world.active if a.seq.slot_idx == slot)


def _fallback_rows(plan, groups: list[Call], stash_ok: bool) -> list[int]:
    """Proposing rows, in row order, that no group made done (B19-B21)."""
    if not stash_ok:
        return []
    done: set[int] = set()
    for c, g in zip(groups, plan.groups, strict=False):
        if c.outcome in ("ok", "err"):
            done.update(g.rows)
    return [j for j in plan.proposing_rows if j not in done]


def expected_logs(sbs: SideBySide) -> Counter[tuple[str, str]]:
    """The (level, message) multiset the seed writes for what happened in this run."""
    plan = expected_plan(sbs)
    seen = set(sbs.spec.step.seen_log_keys)
    want: Counter[tuple[str, str]] = Counter()
    n = len(plan.rows)
    calls = sbs.impl.model.calls
    decode = next((c for c in calls if c.op == "decode_batch"), None)
    if decode is not None and decode.outcome == "err":
        want["ERROR", f"batched bootstrap decode_batch (n={n}): {decode.error}"] += 1
        return want
    for c in calls:
        if c.op == "argmax_batch":
            if c.outcome == "err":
                want["ERROR", f"batched bootstrap argmax_batch (n={n}): {c.error}"] += 1
            elif KEY_ARGMAX not in seen:
                k = sum(plan.eligible)
                want[
                    "INFO",
                    f"MTP bootstrap batched argmax ENGAGED (n={n}, greedy_rows={k}): one launch + one "
                    f"D2H replaces {k} single-CTA scans + syncs",
                ] += 1
        elif c.op == "stash_verify_hidden_rows":
            if c.outcome == "err":
                want["ERROR", f"batched bootstrap stash_verify_hidden_rows: {c.error}"] += 1
            elif KEY_GATE not in seen:
                want[
                    "DEBUG",
                    f"DFlash batched propose gate (first tick) group_cap={plan.group_cap} "
                    f"proposing={len(plan.proposing_rows)} ladder_nd={sbs.spec.step.ladder_nd}",
                ] += 1
        elif c.op == "run_mtp_propose_batched" and c.outcome == "err":
            level = "DEBUG" if "exceeds meta stride" in c.error else "ERROR"
            want[level, f"batched bootstrap run_mtp_propose_batched: {c.error}"] += 1
        elif c.op == "save_hidden_for_mtp_from_stash" and c.outcome == "err":
            want["ERROR", f"batched bootstrap save_hidden_for_mtp_from_stash({c.detail['row']}): {c.error}"] += 1
        elif c.op == "run_mtp_propose_multi":
            if c.outcome == "err":
                want["ERROR", f"run_mtp_propose_multi: {c.error}"] += 1
            elif c.outcome == "empty" or c.empty_rows:
                want["WARNING", "MTP propose returned empty"] += 1
        elif c.op == "start_checkpoint_async" and c.outcome == "err":
            want["ERROR", f"batched bootstrap start_checkpoint_async: {c.error}"] += 1
    for r in sbs.ref.logs:  # sampling errors are the same function's on the same row
        prefix = "mtp bootstrap sample error: "
        if r.level == "ERROR" and r.message.startswith(prefix):
            want["ERROR", "batched bootstrap sample error: " + r.message[len(prefix) :]] += 1
    if KEY_ENGAGED not in seen:
        want[
            "INFO",
            f"MTP batched bootstrap ENGAGED (n={n}): one decode_batch + batched propose replaces "
            f"{n} M=1 decodes + {n} drafter forwards per draft position",
        ] += 1
    return want


def expected_once_keys(sbs: SideBySide) -> set[str]:
    """B24: the once-per-process keys marked after the step: those marked before it, plus the key of
    every notice the step reached (the engaged notice unless `decode_batch` failed, the batched-argmax
    notice when `argmax_batch` succeeded, the propose-gate notice when the stash succeeded), whether
    or not the notice was written this time."""
    keys = set(sbs.spec.step.seen_log_keys)
    calls = sbs.impl.model.calls
    if any(c.op == "decode_batch" and c.outcome == "err" for c in calls):
        return keys
    keys.add(KEY_ENGAGED)
    if any(c.op == "argmax_batch" and c.outcome == "ok" for c in calls):
        keys.add(KEY_ARGMAX)
    if any(c.op == "stash_verify_hidden_rows" and c.outcome == "ok" for c in calls):
        keys.add(KEY_GATE)
    return keys


def check_logs(sbs: SideBySide) -> list[Mismatch]:
    """P7: the implementation's log records equal the expected multiset (order is free: D3), and
    it marked exactly the expected once-per-process keys (a notice that is never marked is written
    again at every step)."""
    got = Counter((r.level, r.message) for r in sbs.impl.logs)
    want = expected_logs(sbs)
    out: list[Mismatch] = []
    got_keys, want_keys = set(sbs.impl.world.sched.telemetry.seen), expected_once_keys(sbs)
    _expect(
        out,
        got_keys == want_keys,
        "once-per-process keys after the step",
        sorted(want_keys),
        sorted(got_keys),
        ("B24",),
    )
    for key in sorted(set(got) | set(want)):
        if got[key] != want[key]:
            level, msg = key
            out.append(
                Mismatch(
                    None,
                    f"log {level} x{want[key]} expected, x{got[key]} written",
                    msg[:200],
                    f"{got[key]} record(s)",
                    ("B24", "B25", "D3"),
                )
            )
    return out
