"""One row's sampling request, and the exact distribution the reference semantics give it.

A `RowRequest` is everything `reference.sampling.sample_token_with_grammar` is given for a row
besides the logits: the row's penalties over its scoped history, the EOS ids its hold masks, its
grammar, temperature, cuts, and its seed and output position. It is the vocabulary a sampler with its
own randomness is checked in (`RowSampler`): such a sampler cannot reproduce the reference's
counter-based noise, so its tokens are checked against `distribution` instead (support, distribution
and seed invariance), never against the reference's own draw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from reference.decisions import argmax_lowest
from reference.eos_hold import eos_mask_ids
from reference.grammar import GrammarState
from reference.penalties import PenaltyParams, PositionKind, penalty_history_scope, penalty_params_for
from reference.sampling import SamplingError, _check_inputs, cut_scores, processed_row
from reference.sampling_params import SamplingParams
from reference.sched_ctx import SamplingConfig
from reference.state import ActiveSeq


@dataclass(slots=True, frozen=True)
class RowRequest:
    """What sampling one row is given besides its logits. `params`: the request's sampling (its
    penalty strengths as asked; `pen` holds those in effect at this position); `greedy`:
    `params.greedy` under the scheduler's `force_temp_zero` (the argmax of the processed row, ties
    to the lowest id)."""

    params: SamplingParams
    greedy: bool
    pen: PenaltyParams
    history: tuple[int, ...]  # the scoped history the penalties count
    eos_mask: tuple[int, ...]  # the EOS ids the hold masks (-inf)
    grammar: GrammarState | None
    seed: int
    position: int  # the output position the token is for

    @property
    def temperature(self) -> float:
        return self.params.temperature

    @property
    def top_k(self) -> int:
        return self.params.top_k

    @property
    def top_p(self) -> float:
        return self.params.top_p


# A sampler under test: one token (or the refusal the per-row sampler raises) per row of logits
# [m, V], row i sampled as requests[i] asks. It may keep no state between calls but its own
# generators' (seeded from each request's seed and position, if it is seed-invariant).
RowSampler = Callable[[torch.Tensor, Sequence[RowRequest]], list["int | SamplingError"]]


def request_for(a: ActiveSeq, min_reasoning_floor: int, sampling: SamplingConfig) -> RowRequest:
    """The request the bootstrap step makes for `a`'s next token (`reference.sample_step`)."""
    pen = penalty_params_for(a, PositionKind.VERIFY, min_reasoning_floor)
    params = SamplingParams.of(a)
    return RowRequest(
        params=params,
        greedy=params.greedy(sampling.force_temp_zero),
        pen=pen,
        history=tuple(penalty_history_scope(a.output_tokens, a.tool_call_end_token)),
        eos_mask=eos_mask_ids(a, len(a.output_tokens)),
        grammar=a.grammar_state,
        seed=a.sampling_seed,
        position=len(a.output_tokens),
    )


def kept_scores(row_logits: torch.Tensor, req: RowRequest) -> torch.Tensor:
    """Float64 [V]: the scores the reference draws from for `req` on `row_logits` [V]: when greedy,
    0 at the processed row's argmax (ties to the lowest id); else the temperature-scaled scores of
    the tokens top-k and top-p keep; -inf elsewhere. Raises the `SamplingError` the per-row sampler
    raises for the row."""
    vocab = row_logits.shape[-1]
    _check_inputs(row_logits, vocab, req.temperature, req.top_k, req.top_p)
    row = processed_row(row_logits, req.eos_mask, req.grammar, req.pen, req.history)
    if req.greedy:
        out = torch.full((vocab,), float("-inf"), dtype=torch.float64, device=row.device)
        out[argmax_lowest(row)] = 0.0
        return out
    return cut_scores(row, req.temperature, req.top_k, req.top_p, -1, req.position)


def distribution(row_logits: torch.Tensor, req: RowRequest) -> torch.Tensor:
    """Float64 [V]: the probability of each token under the reference semantics (the softmax of
    `kept_scores`; a kept token far below the best may round to 0 here, see `support`)."""
    return torch.softmax(kept_scores(row_logits, req), dim=0)


def support(row_logits: torch.Tensor, req: RowRequest) -> torch.Tensor:
    """Bool [V]: the tokens the reference can draw for `req` (a finite kept score)."""
    return torch.isfinite(kept_scores(row_logits, req))


def distributions(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[torch.Tensor | SamplingError]:
    """`distribution` of each row of logits [m, V], or the refusal it raises."""
    out: list[torch.Tensor | SamplingError] = []
    for row, req in zip(logits, requests, strict=True):
        try:
            out.append(distribution(row, req))
        except SamplingError as e:
            out.append(e)
    return out
