"""The oracle of whole generations: plain autoregressive decoding of one request alone.

A fresh model (zero caches) from the given weights, the request alone in slot 0 (SSM slot 0 if it
wants one), every prompt token decoded one at a time, then one decode and one sampled token per
step until the sequence finishes: no prefill, no speculation, no batching, no other request. An
engine's result for the request must equal it: tokens, logprobs and finish reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference.model.config import ModelConfig
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.model.weights import Weights
from reference.plain_token import sample_and_emit
from reference.request import Request, active_seq_for
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import FinishReason, SequenceState, TokenLogprobs


@dataclass(slots=True, frozen=True)
class SoloResult:
    tokens: tuple[int, ...]
    logprobs: tuple[TokenLogprobs | None, ...]
    finish_reason: FinishReason | None


def solo_decode(
    cfg: ModelConfig,
    weights: Weights,
    req: Request,
    sched: SchedCtx,
    verify_ctx: LogitsContext,
    seq_id: int = 0,
    rows: dict[int, torch.Tensor] | None = None,
) -> SoloResult:
    """`req` decoded plainly and alone (see the module docstring) with the sampling config of
    `verify_ctx` and the reasoning floor of `sched`; `seq_id` names its decisions (a `DecisionLog`
    installed by the caller records them, and may force them). `rows`, when given, receives the
    logits row each token was sampled from, by output position. A sampling failure ends it without
    a reason, as in the engine; a failing decode raises."""
    req.check(cfg.vocab_size, cfg.max_seq_len)
    model = TinyMtpModel(cfg, weights)
    blocks = BlockAllocator(cfg.num_blocks, cfg.block_size)
    seq = SequenceState(0, 0 if req.ssm else None, 0, blocks.alloc_for(req.positions()))
    for tok in req.prompt[:-1]:
        model.decode(tok, seq)
    a = active_seq_for(req, seq_id, seq, cfg.vocab_size)
    while not a.finished:
        logits = model.decode(a.last_token, a.seq)
        if rows is not None:
            rows[len(a.output_tokens)] = logits.detach().clone()
        tok = sample_and_emit(model, a, logits, sched, verify_ctx, "solo")
        if tok is not None:
            a.last_token = tok
    return SoloResult(tuple(a.output_tokens), tuple(a.output_logprobs), a.finish_reason)
