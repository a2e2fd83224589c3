"""The registry of documented differences between the per-sequence loop and the batched step.

Nothing else may differ. Each entry says why the difference exists and how the comparator checks
the implementation's side of it (a registered difference is an expected outcome, not a free pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from properties.sides.side_by_side import SideBySide


@dataclass(slots=True, frozen=True)
class Difference:
    id: str
    what: str
    why: str
    checked_by: str


REGISTRY: dict[str, Difference] = {
    d.id: d
    for d in (
        Difference(
            "D1",
            "a save-hidden failure skips the checkpoint in the loop, not in the batched path",
            "the loop's `continue` after a failed save also jumps over `start_checkpoint_async`; the batched "
            "step checkpoints every unfinished row after all proposes",
            "the implementation's checkpoint must hold the current SSM state at the current length",
        ),
        Difference(
            "D2",
            "a decode_batch failure finishes every row, a decode failure only its sequence",
            "retrying rows one at a time could decode a sequence twice if the failed call had advanced it",
            "the failure is translated into a failed decode of every row for the reference",
        ),
        Difference(
            "D3",
            "log order follows row order (SSM-slot order), not index order",
            "the batched step walks rows sorted by SSM slot",
            "logs are compared as multisets",
        ),
        Difference(
            "D4",
            "group proposes record draft confidences when asked, per-sequence proposes never do",
            "only the batched drafter writes the confidence buffer D-Cut ranks by",
            "recorded confidences must equal the reference drafter's for the same drafts; absent elsewhere",
        ),
    )
}


def d1_slots(sbs: SideBySide) -> set[int]:
    """Slots whose hidden-state save failed in the reference run (so the loop skipped their
    checkpoint) while the implementation's checkpoint of them went through. Where that checkpoint
    failed too, neither side checkpointed and the plain comparison applies."""
    failed_ckpt = {c.slots[0] for c in sbs.impl.model.calls if c.op == "start_checkpoint_async" and c.outcome == "err"}
    saves = {c.slots[0] for c in sbs.ref.model.calls if c.op == "save_hidden_for_mtp" and c.outcome == "err"}
    return saves - failed_ckpt


def expected_confidences(sbs: SideBySide) -> dict[int, list[float]]:
    """D4: the confidences the implementation must hold per slot: the reference drafter's, for
    members of a successful group propose that asked for them with non-empty drafts; none elsewhere."""
    out: dict[int, list[float]] = {}
    for c in sbs.impl.model.calls:
        if c.op != "run_mtp_propose_batched" or c.outcome != "ok" or not c.detail.get("conf"):
            continue
        for g, slot in enumerate(c.slots):
            if g not in c.empty_rows:
                out[slot] = sbs.ref.model.conf_by_slot.get(slot, [])
    return out
