"""Translate what happened to the implementation's model calls into per-sequence faults for the
reference run, so that the reference shows the outcome the implementation is held to.

The batched step reaches the model through calls the per-sequence loop never makes (a batched
decode, a stash, group proposes). Each outcome of such a call has a per-sequence equivalent: a
failed `decode_batch` is a failed `decode` of every row (D2), a failed stash is a failed hidden-state
save of every proposing row (then D1 applies), a failed group propose is a failed propose of each
member, an empty member result is an empty propose. Outcomes with no visible effect on the
sequences (a failed `argmax_batch`, a group that returned None) translate to nothing.

Only injected outcomes and organic errors the world explains (a full sequence, a stash too small,
a drafter block table over the meta stride) translate, and only for calls whose arguments match the
expected plan (`properties.sides.call_plan`): an implementation that fails a call by passing it wrong
arguments, or whose wrong call an injected fault happens to hit, must not make the reference fail
with it. Such a call is left untranslated (the comparison then shows what it cost) and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from properties.sides.call_plan import Plan, argmax_on_device_slot, call_mismatch
from properties.worlds.fault_kinds import BAD_ROWS, Call, SeqFault
from reference.state import SequenceState


@dataclass(slots=True)
class Translation:
    seq_faults: list[SeqFault] = field(default_factory=list)
    differences: set[str] = field(default_factory=set)  # registered difference ids engaged
    notes: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)  # failed calls that did not match the plan


@dataclass(slots=True)
class Envelope:
    """What the world says about organic failures: the state of each sequence before the step (by
    slot), the model's limits."""

    before: dict[int, SequenceState]
    last_tokens: dict[int, int]
    vocab_size: int
    max_seq_len: int
    stash_capacity: int
    meta_stride: int


def explained(c: Call, env: Envelope) -> bool:
    """Whether an organic failure of `c` follows from the world rather than from its arguments."""
    if c.injected:
        return True
    if c.op in ("decode_batch", "decode"):
        return any(
            env.before[s].seq_len >= env.max_seq_len or not 0 <= env.last_tokens[s] < env.vocab_size for s in c.slots
        )
    if c.op == "stash_verify_hidden_rows":
        return len(c.slots) > env.stash_capacity
    if c.op == "run_mtp_propose_batched":
        return "exceeds meta stride" in c.error and any(
            len(env.before[s].draft_block_table) > env.meta_stride for s in c.slots
        )
    return False


def translate(
    calls: list[Call], env: Envelope, plan: Plan | None = None, impl_rows: dict[int, torch.Tensor] | None = None
) -> Translation:
    """Per-sequence faults for the reference, from the implementation's recorded calls. With a
    `plan`, a call that does not match it is not translated; without one (the first reference run,
    before there is a plan) every explained outcome is, except the fast-greedy argmax's, whose
    sequence only the plan names."""
    t = Translation()
    for i, c in enumerate(calls):
        if c.outcome == "ok" and not c.injected:
            continue
        if c.outcome != "ok" and not explained(c, env):
            if c.outcome == "err":
                t.notes.append(f"{c.op} failed without a cause in the world: {c.error}")
            continue
        if plan is not None and (why := call_mismatch(plan, calls, i, impl_rows)) is not None:
            t.untrusted.append(f"{c.op} -> {c.outcome} not translated: it does not match the plan: {why}")
            continue
        if c.op == "decode_batch" and c.outcome == "err":
            t.seq_faults += [SeqFault("decode", s, "err") for s in c.slots]
            t.differences.add("D2")
            t.notes.append(f"decode_batch failed: every row of {list(c.slots)} fails to decode (D2)")
        elif c.op == "decode_batch" and c.outcome in BAD_ROWS:
            slot = c.slots[c.detail["row"]]
            t.seq_faults.append(SeqFault("decode", slot, c.outcome))
        elif c.op == "decode" and (c.outcome == "err" or c.outcome in BAD_ROWS):
            t.seq_faults.append(SeqFault("decode", c.slots[0], c.outcome))
        elif c.op == "argmax_on_device" and c.outcome == "err":
            nth = sum(1 for d in calls[:i] if d.op == c.op)
            slot = c.slots[0] if c.slots else (argmax_on_device_slot(plan, calls, nth) if plan else None)
            if slot is not None:
                t.seq_faults.append(SeqFault("argmax_on_device", slot, "err"))
        elif c.op == "stash_verify_hidden_rows" and c.outcome == "err":
            t.seq_faults += [SeqFault("save_hidden_for_mtp", s, "err") for s in c.slots]
            t.notes.append("stash failed: no row proposes; proposing rows are as if saving their hidden failed")
        elif c.op in ("save_hidden_for_mtp_from_stash", "save_hidden_for_mtp") and c.outcome == "err":
            t.seq_faults.append(SeqFault("save_hidden_for_mtp", c.slots[0], "err"))
        elif c.op == "run_mtp_propose_batched" and c.outcome == "err":
            t.seq_faults += [SeqFault("run_mtp_propose_multi", s, "err") for s in c.slots]
        elif c.op == "run_mtp_propose_batched" and c.outcome == "ok" and c.injected:
            t.seq_faults += [SeqFault("run_mtp_propose_multi", c.slots[g], "empty") for g in c.empty_rows]
        elif c.op == "run_mtp_propose_multi" and c.outcome in ("err", "empty"):
            t.seq_faults.append(SeqFault("run_mtp_propose_multi", c.slots[0], c.outcome))
        elif c.op == "start_checkpoint_async" and c.outcome == "err":
            t.seq_faults.append(SeqFault("start_checkpoint_async", c.slots[0], "err"))
    return t
