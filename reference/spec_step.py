"""How many drafts a sequence may propose after its bootstrap token, and its drafter mask."""

from __future__ import annotations

import torch

from reference.state import ActiveSeq

# A grammar sequence drafts at most this many tokens: the drafter's first position can be masked
# with the grammar's current mask, later positions would need the matcher advanced by unverified
# drafts, so they are not drafted at all.
GRAMMAR_MAX_DRAFTS = 1


def effective_drafts_under_grammar(a: ActiveSeq, ladder_nd: int) -> int:
    """min(ladder_nd, max_tokens - len(output_tokens)) clamped to >= 0 (drafts never run past max
    tokens), and at most `GRAMMAR_MAX_DRAFTS` for a sequence with a grammar."""
    eff = max(0, min(ladder_nd, a.max_tokens - len(a.output_tokens)))
    if a.grammar_state is not None:
        eff = min(eff, GRAMMAR_MAX_DRAFTS)
    return eff


def mtp_grammar_mask_for(a: ActiveSeq) -> torch.Tensor | None:
    """The grammar's allowed mask, bool [vocab] on the CPU, for the drafter's first position; None
    without a grammar."""
    return None if a.grammar_state is None else a.grammar_state.allowed_mask()
