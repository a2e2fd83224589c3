"""What the batched step must do with the model, derived from the world before the step and the
reference's outcome, independently of the batched code.

`expected_plan` lays out the rows (B1), the greedy rows (B5), the proposing rows (B12, from the
reference: a sequence proposes exactly when the loop saved its hidden state), the groups the
proposes must form (B14-B16) and the rows whose per-row sampling takes the fast-greedy argmax.
`call_mismatch` holds one recorded call against it: fault translation trusts only calls that match
(`properties.sides.translate`), and the call check (P3, `properties.checks.calls`) reports the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from properties.worlds.fault_kinds import Call
from properties.worlds.specs import StepSpec
from reference.eos_hold import presample_hold_for
from reference.model.kernels import bits_equal
from reference.penalties import (
    PenaltyGate,
    PenaltyParams,
    PositionKind,
    classify_penalties,
    penalty_history_scope,
    penalty_params_for,
)
from reference.sampling import SamplingError, processed_row
from reference.sampling_params import SamplingParams
from reference.spec_step import effective_drafts_under_grammar
from reference.state import ActiveSeq

KEY_ARGMAX = "log:mtp_bootstrap_batched_argmax"
KEY_GATE = "log:dflash_batch_propose_gate"
KEY_ENGAGED = "log:mtp_batched_bootstrap"


@dataclass(slots=True)
class Group:
    slots: tuple[int, ...]
    rows: tuple[int, ...]


@dataclass(slots=True)
class Plan:
    """The expected calls. `before` and `after` map slot -> the sequence before the step and after
    the reference's run of it."""

    rows: list[int] = field(default_factory=list)  # slot of row j
    tokens: list[int] = field(default_factory=list)
    eligible: list[bool] = field(default_factory=list)
    proposing_rows: list[int] = field(default_factory=list)
    batchable_rows: list[int] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    group_cap: int = 1
    ladder: int = 0
    want_conf: bool = False
    fast_greedy_slots: list[int] = field(default_factory=list)  # per-row fast-greedy argmax, row order
    before: dict[int, ActiveSeq] = field(default_factory=dict)
    after: dict[int, ActiveSeq] = field(default_factory=dict)


def row_key(a: ActiveSeq) -> int:
    return a.seq.ssm_slot if a.seq.ssm_slot is not None else a.seq.slot_idx


def eligible(a: ActiveSeq, step: StepSpec) -> bool:
    """B5, from the design's words."""
    pen = penalty_params_for(a, PositionKind.VERIFY, step.min_reasoning_floor)
    return (
        step.mtp_boot_argmax
        and step.fast_greedy_grammar
        and SamplingParams.of(a).greedy(step.force_temp_zero)
        and a.grammar_state is None
        and not presample_hold_for(a, len(a.output_tokens)).any()
        and classify_penalties(pen) == PenaltyGate.NEUTRAL
    )


def expected_plan(
    before: Sequence[ActiveSeq],
    idxs: Sequence[int],
    after: Sequence[ActiveSeq],
    ref_calls: Sequence[Call],
    step: StepSpec,
    group_cap: int,
    per_row_fast_greedy_calls: bool = True,
) -> Plan:
    """The plan for bootstrapping `before[i]`, i in `idxs`, given the reference's sequences `after`
    the step and the calls the reference made (`ref_calls`); `group_cap` is the model's cap;
    `per_row_fast_greedy_calls` the implementation's call contract (`properties.impl.Impl`)."""
    rows = sorted((before[i] for i in idxs), key=row_key)  # stable: ascending index among equal keys
    plan = Plan(
        rows=[a.seq.slot_idx for a in rows],
        tokens=[a.last_token for a in rows],
        eligible=[eligible(a, step) for a in rows],
        group_cap=max(group_cap, 1),
        ladder=step.ladder_nd,
        want_conf=step.dcut_enabled or step.draft_stop_logprob is not None,
        before={a.seq.slot_idx: a for a in before},
        after={a.seq.slot_idx: a for a in after},
    )
    saved = {c.slots[0] for c in ref_calls if c.op == "save_hidden_for_mtp"}
    plan.proposing_rows = [j for j, slot in enumerate(plan.rows) if slot in saved]
    plan.batchable_rows = [
        j
        for j in plan.proposing_rows
        if plan.after[plan.rows[j]].grammar_state is None
        and effective_drafts_under_grammar(plan.after[plan.rows[j]], plan.ladder) == plan.ladder
    ]
    if plan.group_cap >= 2 and plan.ladder >= 1:
        for start in range(0, len(plan.batchable_rows), plan.group_cap):
            chunk = plan.batchable_rows[start : start + plan.group_cap]
            if len(chunk) >= 2:
                plan.groups.append(Group(tuple(plan.rows[j] for j in chunk), tuple(chunk)))
    fast = {c.slots[0] for c in ref_calls if c.op == "argmax_on_device" and c.slots}
    if per_row_fast_greedy_calls:
        plan.fast_greedy_slots = [s for s in plan.rows if s in fast]
    return plan


def served_slots(plan: Plan, calls: Sequence[Call]) -> set[int]:
    """The slots a successful `argmax_batch` served (the eligible rows)."""
    if not any(c.op == "argmax_batch" and c.outcome == "ok" for c in calls):
        return set()
    return {s for s, e in zip(plan.rows, plan.eligible, strict=True) if e}


def fallback_rows(plan: Plan, calls: Sequence[Call]) -> list[int]:
    """Proposing rows, in row order, that no group made done (B19-B21), when the stash succeeded."""
    if not any(c.op == "stash_verify_hidden_rows" and c.outcome == "ok" for c in calls):
        return []
    groups = [c for c in calls if c.op == "run_mtp_propose_batched"]
    done: set[int] = set()
    for c, g in zip(groups, plan.groups, strict=False):
        if c.outcome in ("ok", "err"):
            done.update(g.rows)
    return [j for j in plan.proposing_rows if j not in done]


def group_inputs(plan: Plan, g: Group) -> dict[str, object]:
    """The inputs group `g` must be called with (B17, B18)."""
    return {
        "tokens": [plan.after[s].last_token for s in g.slots],
        "positions": [plan.after[s].seq.seq_len for s in g.slots],
        "stash_idx": list(g.rows),
        "k": plan.ladder,
        "conf": plan.want_conf,
    }


def fast_greedy_row(plan: Plan, slot: int, logits: torch.Tensor) -> torch.Tensor:
    """The row the per-row fast-greedy argmax must be handed for `slot`: its logits processed as the
    sampler processes them (neutral penalties, no EOS mask, its grammar's mask)."""
    a = plan.before[slot]
    grammar = a.grammar_state.fork() if a.grammar_state is not None else None
    return processed_row(logits, (), grammar, PenaltyParams(), penalty_history_scope(a.output_tokens, None))


def call_mismatch(
    plan: Plan, calls: Sequence[Call], index: int, impl_rows: dict[int, torch.Tensor] | None = None
) -> str | None:
    """Why call `calls[index]` does not match the plan, or None when it does. Checks the arguments
    the per-sequence equivalent of its outcome depends on; `impl_rows` (the implementation's logits
    rows by slot) lets an `argmax_on_device` call be mapped to its sequence. Operations with no
    per-sequence equivalent (argmax_batch) always match."""
    c = calls[index]
    nth = sum(1 for d in calls[:index] if d.op == c.op)
    if c.op == "decode_batch":
        if list(c.slots) != plan.rows or c.detail.get("tokens") != plan.tokens:
            return f"rows {list(c.slots)} with tokens {c.detail.get('tokens')}, expected {plan.rows} with {plan.tokens}"
    elif c.op == "decode":
        slot = c.slots[0]
        if slot not in plan.before or c.detail.get("token") != plan.before[slot].last_token:
            return f"slot {slot} with token {c.detail.get('token')}"
    elif c.op == "stash_verify_hidden_rows":
        want = list(range(len(plan.rows)))
        if c.detail.get("rows") != want:
            return f"stash rows {c.detail.get('rows')}, expected {want}"
    elif c.op == "save_hidden_for_mtp_from_stash":
        want_rows = fallback_rows(plan, calls)
        if nth >= len(want_rows) or c.detail.get("row") != want_rows[nth]:
            return f"stash row {c.detail.get('row')} as fallback {nth}, expected rows {want_rows}"
    elif c.op == "save_hidden_for_mtp":
        if c.slots[0] not in {plan.rows[j] for j in plan.proposing_rows}:
            return f"slot {c.slots[0]} does not propose"
    elif c.op == "run_mtp_propose_batched":
        if nth >= len(plan.groups) or c.slots != plan.groups[nth].slots:
            return f"group {list(c.slots)}, expected groups {[list(g.slots) for g in plan.groups]}"
        want = group_inputs(plan, plan.groups[nth])
        got = {k: c.detail.get(k) for k in want}
        if got != want:
            return f"group {list(c.slots)} inputs {got}, expected {want}"
    elif c.op == "run_mtp_propose_multi":
        slot = c.slots[0]
        if slot not in {plan.rows[j] for j in plan.proposing_rows}:
            return f"slot {slot} does not propose"
        a = plan.after[slot]
        want = {"token": a.last_token, "position": a.seq.seq_len, "k": effective_drafts_under_grammar(a, plan.ladder)}
        got = {k: c.detail.get(k) for k in want}
        if got != want:
            return f"slot {slot} propose inputs {got}, expected {want}"
    elif c.op == "start_checkpoint_async":
        if c.slots[0] not in plan.rows or plan.after[c.slots[0]].finished:
            return f"slot {c.slots[0]} is not an unfinished row"
    elif c.op == "argmax_on_device":
        return _fast_greedy_mismatch(plan, calls, index, nth, impl_rows)
    return None


def argmax_on_device_slot(plan: Plan, calls: Sequence[Call], nth: int) -> int | None:
    """The slot the `nth` per-row fast-greedy argmax of the batched step is for: the reference's
    fast-greedy rows, in row order, less those a successful `argmax_batch` served."""
    served = served_slots(plan, calls)
    want = [s for s in plan.fast_greedy_slots if s not in served]
    return want[nth] if nth < len(want) else None


def _fast_greedy_mismatch(
    plan: Plan, calls: Sequence[Call], index: int, nth: int, impl_rows: dict[int, torch.Tensor] | None
) -> str | None:
    c = calls[index]
    if c.slots:  # the per-sequence loop names its sequence
        return None if c.slots[0] in plan.fast_greedy_slots else f"slot {c.slots[0]} takes no fast-greedy argmax"
    slot = argmax_on_device_slot(plan, calls, nth)
    if slot is None:
        return f"fast-greedy argmax {nth} beyond the {len(plan.fast_greedy_slots)} expected"
    if impl_rows is None or slot not in impl_rows:
        return f"fast-greedy argmax {nth} (slot {slot}): no logits row to check it against"
    try:
        want = fast_greedy_row(plan, slot, impl_rows[slot])
    except SamplingError as e:
        return f"fast-greedy argmax {nth} (slot {slot}): the sampler refuses that row ({e})"
    if not bits_equal(c.detail.get("row"), want):
        return f"fast-greedy argmax {nth} was not handed slot {slot}'s processed row"
    return None
