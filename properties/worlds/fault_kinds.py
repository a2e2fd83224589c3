"""What a fault plan can inject, and what the recording model (`properties.sides.faults.FaultyModel`) records:
the operations, their alternate results, the bad logits rows, one call and a per-sequence fault."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

INJECTED = "injected fault"


# Logits rows the per-row sampler refuses: one NaN logit (on the row's least likely token, as one
# overflowing head leaves it: a path that skips NaNs emits the row's usual token); a +inf logit
# (there too, so a path that takes it emits another token); -inf everywhere; finite only where the
# row's own masks (EOS while held, banned ids, the grammar) exclude every token (-inf everywhere
# without masks).
BAD_ROWS = ("nan_row", "posinf_row", "neginf_row", "masked_row")


# Operation -> the alternate results it can be made to return besides an error.
ALTERNATES: dict[str, tuple[str, ...]] = {
    "decode": BAD_ROWS,
    "decode_batch": BAD_ROWS,
    "argmax_batch": (),
    "stash_verify_hidden_rows": (),
    "save_hidden_for_mtp": (),
    "save_hidden_for_mtp_from_stash": (),
    "run_mtp_propose_batched": ("none", "empty"),
    "run_mtp_propose_multi": ("empty",),
    "start_checkpoint_async": (),
    "argmax_on_device": (),
}


RECORDED = tuple(ALTERNATES)


# The model operations the batched step calls; each can fail or return its alternate result.
BATCHED_STEP_OPS = (
    "decode_batch",
    "argmax_batch",
    "stash_verify_hidden_rows",
    "save_hidden_for_mtp_from_stash",
    "run_mtp_propose_batched",
    "run_mtp_propose_multi",
    "start_checkpoint_async",
    "argmax_on_device",
)


# Operations the batched step calls at most once: a fault on a later call would never fire.
ONCE_PER_STEP = frozenset({"decode_batch", "argmax_batch", "stash_verify_hidden_rows"})


@dataclass(slots=True)
class Call:
    """One model call: operation, the sequences (slot_idx) it concerns in row order, its outcome
    ("ok", "err", "none", "empty", "nan_row"), whether a fault caused that outcome, the rows of a
    batched result that were empty, and the error chain."""

    op: str
    slots: tuple[int, ...]
    outcome: str = "ok"
    injected: bool = False
    empty_rows: tuple[int, ...] = ()
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def bad_row(row: torch.Tensor, kind: str, masked: torch.Tensor | None) -> torch.Tensor:
    """A copy of the logits row [V] made into the bad row `kind` names (see `BAD_ROWS`); `masked`
    (bool [V], True = a token the row's masks exclude) shapes a `masked_row`."""
    out = row.detach().clone()
    if kind in ("nan_row", "posinf_row"):
        out[int(torch.argmin(out.double()))] = float("nan") if kind == "nan_row" else float("inf")
        return out
    if kind == "neginf_row" or masked is None or not bool(masked.any()):
        return out.fill_(float("-inf"))
    if kind == "masked_row":
        return out.masked_fill(~masked.to(out.device), float("-inf"))
    raise ValueError(f"bad row kind {kind!r}: expected one of {', '.join(BAD_ROWS)}")


@dataclass(slots=True)
class SeqFault:
    """A fault addressed to one sequence's per-sequence call (the reference side of a translation)."""

    op: str
    slot: int
    kind: str
