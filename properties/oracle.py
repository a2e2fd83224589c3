"""What the batched step must do with the model, and what it must log, derived from the world
before the step and the reference's outcome — independently of the batched code.

`expected_plan` lays out the rows (B1), the greedy rows (B5), the proposing rows (B12, from the
reference: a sequence proposes exactly when the loop saved its hidden state), and the groups the
proposes must form (B14-B16). The call and log checks in `properties.checks` hold the recorded
calls and logs against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from properties.harness import SideBySide
from reference.eos_hold import presample_hold_for
from reference.penalties import PenaltyGate, PositionKind, classify_penalties, penalty_params_for
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
    rows: list[int] = field(default_factory=list)  # slot of row j
    tokens: list[int] = field(default_factory=list)
    eligible: list[bool] = field(default_factory=list)
    proposing_rows: list[int] = field(default_factory=list)
    batchable_rows: list[int] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    group_cap: int = 1
    want_conf: bool = False


def row_key(a: ActiveSeq) -> int:
    return a.seq.ssm_slot if a.seq.ssm_slot is not None else a.seq.slot_idx


def eligible(a: ActiveSeq, sbs: SideBySide) -> bool:
    """B5, from the design's words."""
    step = sbs.spec.step
    pen = penalty_params_for(a, PositionKind.VERIFY, step.min_reasoning_floor)
    return (
        step.mtp_boot_argmax
        and step.fast_greedy_grammar
        and (a.temperature == 0.0 or step.force_temp_zero)
        and a.grammar_state is None
        and not presample_hold_for(a, len(a.output_tokens)).any()
        and classify_penalties(pen) == PenaltyGate.NEUTRAL
    )


def expected_plan(sbs: SideBySide) -> Plan:
    before = [sbs.before.active[i] for i in sbs.before.idxs]
    rows = sorted(before, key=row_key)  # stable: ascending index among equal keys
    plan = Plan(
        rows=[a.seq.slot_idx for a in rows],
        tokens=[a.last_token for a in rows],
        eligible=[eligible(a, sbs) for a in rows],
    )
    saved = {c.slots[0] for c in sbs.ref.model.calls if c.op == "save_hidden_for_mtp"}
    plan.proposing_rows = [j for j, slot in enumerate(plan.rows) if slot in saved]
    after = {a.seq.slot_idx: a for a in sbs.ref.world.active}
    ladder = sbs.spec.step.ladder_nd
    plan.batchable_rows = [
        j
        for j in plan.proposing_rows
        if after[plan.rows[j]].grammar_state is None
        and effective_drafts_under_grammar(after[plan.rows[j]], ladder) == ladder
    ]
    plan.group_cap = max(sbs.before.model.mtp_propose_batch_max(), 1)
    if plan.group_cap >= 2 and ladder >= 1:
        for start in range(0, len(plan.batchable_rows), plan.group_cap):
            chunk = plan.batchable_rows[start : start + plan.group_cap]
            if len(chunk) >= 2:
                plan.groups.append(Group(tuple(plan.rows[j] for j in chunk), tuple(chunk)))
    step = sbs.spec.step
    plan.want_conf = step.dcut_enabled or step.draft_stop_logprob is not None
    return plan
