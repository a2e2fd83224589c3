"""The min-tokens EOS hold: EOS may not end a sequence before it has its minimum output tokens."""

from __future__ import annotations

from dataclasses import dataclass

from reference.state import ActiveSeq


@dataclass(slots=True, frozen=True)
class Hold:
    """Why EOS is held before sampling; `min_tokens`: the sequence has fewer than its min tokens."""

    min_tokens: bool

    def any(self) -> bool:
        return self.min_tokens


def presample_hold_for(a: ActiveSeq, n_out: int) -> Hold:
    """The hold for a sequence with `n_out` output tokens: held while `n_out < a.min_tokens` and
    the sequence has EOS ids."""
    return Hold(min_tokens=n_out < a.min_tokens and len(a.eos_ids) > 0)


def eos_mask_ids(a: ActiveSeq, n_out: int) -> tuple[int, ...]:
    """The EOS ids to mask (-inf) before sampling: `a.eos_ids` while held, else ()."""
    return tuple(a.eos_ids) if presample_hold_for(a, n_out).any() else ()
