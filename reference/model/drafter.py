"""The DeepSeek-V3-style MTP drafter over rows.

Drafter position p takes (hidden of position p - 1, token at p): h' = proj [norm(hidden); norm(embed(token))],
then one transformer block whose attention reads and writes the drafter's own paged KV, then the
shared head on norm(h'). h' is the hidden the next draft step takes.
"""

from __future__ import annotations

import torch

from reference.model.config import ModelConfig
from reference.model.kernels import Numerics, linear, rms_norm
from reference.model.paged_kv import PagedKv, RowMeta, block_forward, paged_attend
from reference.model.weights import Weights


def drafter_rows(
    nm: Numerics,
    cfg: ModelConfig,
    w: Weights,
    kv: PagedKv,
    hidden: torch.Tensor,
    tokens: torch.Tensor,
    meta: RowMeta,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One drafter step for M rows: hidden [M, H] and tokens [M] at the rows' positions (KV written
    at meta's write slots) -> (output hidden [M, H], logits [M, vocab] in the logits dtype)."""
    d = w.drafter
    eps = cfg.rms_eps
    e = w.embed[tokens]  # [M, H]
    x = torch.cat([rms_norm(nm, hidden, d.h_norm, eps), rms_norm(nm, e, d.e_norm, eps)], dim=-1)  # [M, 2H]
    x = linear(nm, x, d.proj)
    x = block_forward(nm, d.block, eps, x, cfg.n_heads, paged_attend(kv, 0, meta))
    logits = linear(nm, rms_norm(nm, x, d.final_norm, eps), w.embed).to(cfg.logits_dtype)
    return x, logits


def draft_span_blocks(cfg: ModelConfig, exact: bool, last_positions: list[int]) -> int:
    """Blocks the drafter attends over: fixed in exact mode, else up to the furthest row's last position."""
    if exact:
        return cfg.draft_blocks_per_seq
    return -(-(max(last_positions) + 1) // cfg.block_size)
