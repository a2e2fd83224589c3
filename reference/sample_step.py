"""Sampling one sequence's token from its logits row, as the bootstrap step does it."""

from __future__ import annotations

import torch

from reference.eos_hold import eos_mask_ids
from reference.model.protocol import Model
from reference.penalties import PenaltyParams, penalty_history_scope
from reference.sampling import sample_token_with_grammar
from reference.sched_ctx import LogitsContext
from reference.state import ActiveSeq


def sample_for_seq(
    model: Model, a: ActiveSeq, row_logits: torch.Tensor, pen: PenaltyParams, verify_ctx: LogitsContext
) -> int:
    """The token for `a` from `row_logits` [vocab]: penalties `pen` over the scoped history, the EOS
    ids its hold masks, its grammar, its sampling parameters and its own noise at its next output
    position. Raises `ModelError` (a `SamplingError`) when no token can be sampled."""
    history = penalty_history_scope(a.output_tokens, a.tool_call_end_token)
    eos_mask = eos_mask_ids(a, len(a.output_tokens))
    return sample_token_with_grammar(
        model,
        row_logits,
        a.temperature,
        a.top_k,
        a.top_p,
        eos_mask,
        a.grammar_state,
        pen,
        history,
        verify_ctx.sampling,
        seq_id=a.seq_id,
        seed=a.sampling_seed,
        position=len(a.output_tokens),
    )
