"""The call check (P3): the implementation's model calls against the plan (`properties.sides.call_plan`):
one decode_batch of the rows in slot order with their last tokens; no per-sequence decode;
argmax_batch once exactly when two or more rows are eligible; the stash of all rows exactly when a
row proposes; the groups the plan forms, with their inputs; per-sequence fallbacks for the rest;
one checkpoint per unfinished row; every failure with a cause; every call whose outcome was
translated for the reference matching the plan."""

from __future__ import annotations

from properties.sides.call_plan import fallback_rows, group_inputs
from properties.sides.harness import envelope
from properties.sides.mismatch import Mismatch, expect
from properties.sides.side_by_side import SideBySide
from properties.sides.translate import explained
from properties.worlds.fault_kinds import BAD_ROWS, Call


def _calls(sbs: SideBySide, op: str) -> list[Call]:
    return [c for c in sbs.impl.model.calls if c.op == op]


def check_calls(sbs: SideBySide) -> list[Mismatch]:
    """P3: every expectation of the module docstring; the mismatches found."""
    plan = sbs.plan
    out = [Mismatch(None, "call outcome not translated", "", why, ("B2",)) for why in sbs.translation.untrusted]
    decodes = _calls(sbs, "decode_batch")
    expect(out, len(decodes) == 1, "decode_batch calls", 1, len(decodes), ("B2",))
    expect(out, not _calls(sbs, "decode"), "per-sequence decode calls", 0, len(_calls(sbs, "decode")), ("B2",))
    if len(decodes) != 1:
        return out
    d = decodes[0]
    expect(out, list(d.slots) == plan.rows, "decode_batch row order (slots)", plan.rows, list(d.slots), ("B1",))
    expect(out, d.detail["tokens"] == plan.tokens, "decode_batch tokens", plan.tokens, d.detail["tokens"], ("B2",))
    if d.outcome == "err":
        later = [c.op for c in sbs.impl.model.calls[sbs.impl.model.calls.index(d) + 1 :]]
        expect(out, not later, "calls after a failed decode_batch", [], later, ("B3",))
        return out

    n_eligible = sum(plan.eligible)
    argmaxes = _calls(sbs, "argmax_batch")
    expect(
        out,
        len(argmaxes) == (1 if n_eligible >= 2 else 0),
        "argmax_batch calls",
        f"{1 if n_eligible >= 2 else 0} ({n_eligible} eligible rows)",
        len(argmaxes),
        ("B5", "B6"),
    )
    for c in argmaxes:
        got = {"n": c.detail["n"], "rank": c.detail["rank"], "the decoded logits": c.detail["logits"]}
        want = {"n": len(plan.rows), "rank": 0, "the decoded logits": True}
        expect(out, got == want, "argmax_batch arguments", want, got, ("B6",))
    out += _check_fast_greedy(sbs, plan.eligible, argmaxes)

    stashes = _calls(sbs, "stash_verify_hidden_rows")
    want_stash = 1 if plan.proposing_rows else 0
    expect(
        out,
        len(stashes) == want_stash,
        "stash_verify_hidden_rows calls",
        f"{want_stash} (proposing rows {plan.proposing_rows})",
        len(stashes),
        ("B12", "B13"),
    )
    if stashes:
        rows = stashes[0].detail["rows"]
        expect(out, rows == list(range(len(plan.rows))), "stash rows", list(range(len(plan.rows))), rows, ("B13",))
    stash_ok = bool(stashes) and stashes[0].outcome == "ok"

    groups = _calls(sbs, "run_mtp_propose_batched")
    want_groups = [g.slots for g in plan.groups] if stash_ok else []
    expect(
        out,
        [c.slots for c in groups] == want_groups,
        "run_mtp_propose_batched groups (slots)",
        want_groups,
        [c.slots for c in groups],
        ("B14", "B15", "B16"),
    )
    for c, g in zip(groups, plan.groups, strict=False):
        if c.slots != g.slots:
            break
        want = group_inputs(plan, g)
        got = {k: c.detail[k] for k in want}
        expect(out, got == want, f"run_mtp_propose_batched inputs of group {list(g.slots)}", want, got, ("B17", "B18"))
        out += _check_stride(sbs, c)

    want_rows = fallback_rows(plan, sbs.impl.model.calls)
    saves = _calls(sbs, "save_hidden_for_mtp_from_stash")
    got_rows = [c.detail["row"] for c in saves]
    expect(
        out,
        got_rows == want_rows,
        "save_hidden_for_mtp_from_stash rows",
        want_rows,
        got_rows,
        ("B19", "B20", "B21", "B22"),
    )
    saved_ok = [plan.rows[c.detail["row"]] for c in saves if c.outcome == "ok"]
    proposes = [c.slots[0] for c in _calls(sbs, "run_mtp_propose_multi")]
    expect(out, proposes == saved_ok, "per-sequence proposes (slots)", saved_ok, proposes, ("B22",))

    out += check_failures_explained(sbs)
    unfinished = [s for s in plan.rows if not _impl_seq(sbs, s).finished]
    ckpts = [c.slots[0] for c in _calls(sbs, "start_checkpoint_async")]
    expect(out, ckpts == unfinished, "checkpoints (slots, row order)", unfinished, ckpts, ("B23",))
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
    bad_rows = any(c.op == "decode_batch" and c.outcome in BAD_ROWS for c in sbs.impl.model.calls)
    out: list[Mismatch] = []
    for c in sbs.impl.model.calls:
        if c.outcome != "err" or explained(c, env):
            continue
        if c.op == "argmax_batch" and bad_rows and c.detail.get("logits"):
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
    expect(
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
    successful `argmax_batch` served. An implementation whose contract says it makes none
    (`properties.impl.Impl.per_row_fast_greedy_calls`) must make none."""
    got = len(_calls(sbs, "argmax_on_device"))
    out: list[Mismatch] = []
    if not sbs.under_test.per_row_fast_greedy_calls:
        expect(
            out,
            got == 0,
            "per-row fast-greedy argmax calls",
            "0 (its contract: greedy rows in its sampling pass)",
            got,
            ("B5", "B8"),
        )
        return out
    served = sum(eligible) if any(c.outcome == "ok" for c in argmaxes) else 0
    loop = sum(c.op == "argmax_on_device" for c in sbs.ref.model.calls)
    expect(
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
