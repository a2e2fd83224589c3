"""What the one-pass sampler is asked for a bootstrap row: everything `reference.sample_step.sample_for_seq`
hands the per-row sampler (B4, B8), as a `SampleRequest`."""

from __future__ import annotations

from batched.vector.masks import RowProcessing
from batched.vector.sample_checks import host_error, penalties_active
from batched.vector.sampling_pass import SampleRequest
from reference.penalties import PositionKind, penalty_history_scope, penalty_params_for
from reference.sched_ctx import SamplingConfig
from reference.state import ActiveSeq


def sample_request(
    a: ActiveSeq, row: int, held: bool, min_reasoning_floor: int, sampling: SamplingConfig, vocab: int
) -> SampleRequest:
    """Row `row` of the logits for `a`: its verify penalties (with the reasoning-floor ban) over the
    history after its last tool-call end, its EOS ids while `held`, its grammar, temperature, cuts,
    and its noise at its next output position."""
    pen = penalty_params_for(a, PositionKind.VERIFY, min_reasoning_floor)
    history = penalty_history_scope(a.output_tokens, a.tool_call_end_token) if penalties_active(pen) else []
    eos_mask = tuple(a.eos_ids) if held else ()
    return SampleRequest(
        row=row,
        temperature=a.temperature,
        top_k=a.top_k,
        top_p=a.top_p,
        greedy=a.temperature == 0.0 or sampling.force_temp_zero,
        processing=RowProcessing(pen, history, eos_mask, a.grammar_state),
        seed=a.sampling_seed,
        position=len(a.output_tokens),
        host_error=host_error(vocab, a.temperature, a.top_k, a.top_p, pen, history, eos_mask, a.grammar_state),
    )
