"""The registered differences D1 and D4 over whole generations.

D1: where the loop engine's bootstrap skipped a checkpoint after a failed save and the
implementation engine's took it, the two checkpoints differ. The entry stays open (left out of the
state comparison) until both engines have written it again; a verify that restores it in the
meantime is counted and its consequences are held to the comparison like anything else.
D4: the implementation engine's confidences must equal the reference drafter's where a group
recorded them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from properties.worlds.fault_kinds import Call
from reference.engine import Engine, StepRecord

Entry = tuple[str, int]  # ("ckpt_pos", slot) or ("ssm.ckpt", SSM slot)


def d1_slots(impl_calls: list[Call], ref_calls: list[Call]) -> frozenset[int]:
    """Slots whose checkpoint the implementation engine took while the loop engine, after a failed
    save, did not call it."""
    impl_ok = {c.slots[0] for c in impl_calls if c.op == "start_checkpoint_async" and c.outcome == "ok"}
    ref_called = {c.slots[0] for c in ref_calls if c.op == "start_checkpoint_async"}
    saves = {c.slots[0] for c in ref_calls if c.op == "save_hidden_for_mtp" and c.outcome == "err"}
    return frozenset((impl_ok - ref_called) & saves)


def d1_entries(engine: Engine, slots: frozenset[int]) -> frozenset[Entry]:
    """The state entries D1 leaves different for the running requests in `slots`."""
    out = set()
    for a in engine.active:
        if a.seq.slot_idx in slots:
            out.add(("ckpt_pos", a.seq.slot_idx))
            if a.seq.ssm_slot is not None:
                out.add(("ssm.ckpt", a.seq.ssm_slot))
    return frozenset(out)


@dataclass(slots=True)
class OpenD1:
    """The D1 entries open now, each with the step that opened it."""

    entries: dict[Entry, int] = field(default_factory=dict)

    def update(self, new: frozenset[int], impl: Engine, ref: Engine, step: int) -> int:
        """Open this step's entries (`new` slots); close every entry both engines now hold alike;
        returns how many were closed so."""
        for entry in d1_entries(ref, new):
            self.entries[entry] = step
        closed = [entry for entry in self.entries if entry_equal(entry, impl, ref)]
        for entry in closed:
            del self.entries[entry]
        return len(closed)

    def reads(self, ref: Engine, rec: StepRecord) -> int:
        """The verifies of this step that restored a checkpoint D1 left different."""
        slots = {a.seq_id: a.seq.slot_idx for a in ref.active}
        slots.update({sid: None for sid in rec.released})
        return sum(("ckpt_pos", slots.get(v.seq_id, -1)) in self.entries for v in rec.verified)


def entry_equal(entry: Entry, impl: Engine, ref: Engine) -> bool:
    buf, i = entry
    a, b = impl.model.ssm, ref.model.ssm
    if buf == "ckpt_pos":
        return a.ckpt_pos[i] == b.ckpt_pos[i]
    return bool(torch.equal(a.ckpt[i], b.ckpt[i]))


def d4_confidences(impl_calls: list[Call], ref_confidences: dict[int, list[float]]) -> dict[int, list[float]]:
    """By slot, the confidences the implementation engine's sequences must hold: the reference
    drafter's, where a successful group asked for them and proposed."""
    out: dict[int, list[float]] = {}
    for c in impl_calls:
        if c.op == "run_mtp_propose_batched" and c.outcome == "ok" and c.detail.get("conf"):
            for g, slot in enumerate(c.slots):
                if g not in c.empty_rows:
                    out[slot] = ref_confidences.get(slot, [])
    return out
