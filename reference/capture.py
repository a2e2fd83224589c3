"""Capture of the drafter rows a model decides drafts on, for an oracle that replays the decisions.

A drafter step turns a row of logits into a draft (its argmax, ties to the lowest id). A model calls
`capture_draft_rows` with the rows exactly as it decided on them (a grammar mask already applied)
and, where a mask was applied, the rows before it (an oracle's rounding tolerance is relative to
the magnitudes a row was computed from, which a mask hides); while a `DraftRows` capture is
installed (a context manager) each row is kept under the key (sequence slot, propose position,
draft index). With none installed the call does nothing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from reference.installed import Installed

_current: contextvars.ContextVar[DraftRows | None] = contextvars.ContextVar("draft_rows", default=None)

DraftKey = tuple[int, int, int]  # (sequence slot, propose position, draft index)


@dataclass(slots=True)
class DraftRows(Installed):
    """The drafter rows of one run, by (slot, propose position, draft index); a later capture of the
    same key replaces an earlier one (the run's last word)."""

    rows: dict[DraftKey, torch.Tensor] = field(default_factory=dict)
    unmasked: dict[DraftKey, torch.Tensor] = field(default_factory=dict)  # only rows a mask was applied to
    _token: contextvars.Token | None = None
    CURRENT: ClassVar[contextvars.ContextVar[DraftRows | None]] = _current


def capture_draft_rows(
    slots: Sequence[int],
    positions: Sequence[int],
    index: int,
    rows: torch.Tensor,
    unmasked: torch.Tensor | None = None,
) -> None:
    """Keep rows[m] ([M, vocab]) as the row draft `index` of sequence slot `slots[m]`, proposed from
    `positions[m]`, was decided on, and unmasked[m] (same shape) as that row before its mask, when a
    mask was applied. Copies nothing when no capture is installed."""
    cap = _current.get()
    if cap is None:
        return
    kept = rows.detach().clone()
    before = None if unmasked is None else unmasked.detach().clone()
    for m, (slot, pos) in enumerate(zip(slots, positions, strict=True)):
        cap.rows[(slot, pos, index)] = kept[m]
        if before is not None:
            cap.unmasked[(slot, pos, index)] = before[m]
        else:
            cap.unmasked.pop((slot, pos, index), None)
