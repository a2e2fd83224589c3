"""What the sampling pass is asked for each row: a bootstrap sequence's request (`sample_request`), a
`reference.row_request.RowRequest` (`row_sample_request`), and the pass as a `RowSampler`."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from batched.vector.rows import (
    RowProcessing,
)
from batched.vector.sampling_pass import OwnDraw, SampleRequest, host_error, penalties_active, sample_rows
from reference.penalties import (
    PositionKind,
    penalty_history_scope,
    penalty_params_for,
)
from reference.row_request import RowRequest
from reference.sampling import SamplingError
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


def row_sample_request(req: RowRequest, row: int, vocab: int) -> SampleRequest:
    """Row `row` of logits [m, V] sampled as `req` asks: exactly what `sample_request` makes for the
    sequence `req` was made from (`reference.row_request.request_for`)."""
    history = req.history if penalties_active(req.pen) else ()
    return SampleRequest(
        row=row,
        temperature=req.temperature,
        top_k=req.top_k,
        top_p=req.top_p,
        greedy=req.greedy,
        processing=RowProcessing(req.pen, history, req.eos_mask, req.grammar),
        seed=req.seed,
        position=req.position,
        host_error=host_error(
            vocab, req.temperature, req.top_k, req.top_p, req.pen, history, req.eos_mask, req.grammar
        ),
    )


def sample_row_requests(
    logits: torch.Tensor, requests: Sequence[RowRequest], noise: OwnDraw | None = None
) -> list[int | SamplingError]:
    """A `reference.row_request.RowSampler` on the pass: row i of logits [m, V] sampled as
    requests[i] asks, in one pass (with the noise `sample_pass` takes) and one host read."""
    vocab = logits.shape[-1]
    reqs = [row_sample_request(r, i, vocab) for i, r in enumerate(requests)]
    return sample_rows(logits, reqs, vocab, noise=noise)
