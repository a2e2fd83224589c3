"""The log check (P7): the implementation's log records, as a multiset (D3), against the lines the
seed writes for the outcomes that happened, and the once-per-process keys it marks (B24)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from properties.sides.call_plan import KEY_ARGMAX, KEY_ENGAGED, KEY_GATE
from properties.sides.mismatch import Mismatch, expect

if TYPE_CHECKING:
    from properties.sides.side_by_side import SideBySide


def expected_logs(sbs: SideBySide) -> Counter[tuple[str, str]]:
    """The (level, message) multiset the seed writes for what happened in this run."""
    plan = sbs.plan
    seen = set(sbs.before.sched.telemetry.seen)
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
    keys = set(sbs.before.sched.telemetry.seen)
    calls = sbs.impl.model.calls
    if not any(c.op == "decode_batch" for c in calls) or any(
        c.op == "decode_batch" and c.outcome == "err" for c in calls
    ):
        return keys  # the per-sequence loop ran (or the batched step stopped at its decode)
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
    expect(
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
