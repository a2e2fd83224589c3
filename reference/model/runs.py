"""Whole token runs of one sequence: `prefill` into the caches and the from-scratch `forward_full`.

Both process all T positions of a layer at once, which the stack allows: every attention layer comes
before the recurrent one, so a layer's keys for positions <= p depend only on earlier layers' rows
<= p, and the recurrent layer scans its T gate rows in order. In exact mode each row goes through the
same row kernels on the same padded shapes as a decode, so both are bit-equal to decoding the tokens
one at a time. The callers (`TinyMtpModel.prefill` / `forward_full`) check the inputs first.
"""

from __future__ import annotations

from typing import Protocol

import torch

from reference.model.config import ModelConfig
from reference.model.drafter import draft_span_blocks, drafter_rows
from reference.model.kernels import Numerics, attention
from reference.model.paged_kv import PagedKv, block_forward, pack_sections, paged_attend, row_meta, row_sections
from reference.model.ssm import SsmSlots, ssm_layer, ssm_scan
from reference.model.weights import Weights
from reference.state import SequenceState


class TinyMtpModel(Protocol):
    """What a run reads of the model (`reference.model.model.TinyMtpModel`)."""

    cfg: ModelConfig
    nm: Numerics
    weights: Weights
    kv: PagedKv
    draft_kv: PagedKv
    ssm: SsmSlots
    device: torch.device

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """Logits [M, vocab] of residual rows x [M, H]."""


def prefill(
    model: TinyMtpModel, seq: SequenceState, tokens: list[int], prev_hidden: torch.Tensor | None
) -> torch.Tensor:
    """Run `tokens` at positions seq_len.. through the main model (KV written, SSM slot advanced) and
    the drafter (drafter position p gets (hidden of p - 1, token p); the first takes `prev_hidden`
    [H], zeros if None). Advances seq_len; leaves scratch alone. Returns the hidden states [T, H]."""
    cfg, nm, w = model.cfg, model.nm, model.weights
    pos = list(range(seq.seq_len, seq.seq_len + len(tokens)))
    span = cfg.main_blocks_per_seq if nm.exact else -(-(pos[-1] + 1) // cfg.block_size)
    dspan = draft_span_blocks(cfg, nm.exact, pos)
    views = pack_sections(
        [
            tokens,
            *row_sections(pos, [seq.block_table] * len(pos), span, cfg.block_size),
            *row_sections(pos, [seq.draft_block_table] * len(pos), dspan, cfg.block_size),
        ],
        model.device,
    )
    tok, meta, dmeta = views[0], row_meta(views[1:5], span), row_meta(views[5:], dspan)
    x = w.embed[tok]  # [T, H]
    for i, layer in enumerate(w.layers):
        x = block_forward(nm, layer, cfg.rms_eps, x, cfg.n_heads, paged_attend(model.kv, i, meta))
    x, h_last = ssm_scan(nm, w.ssm, cfg.rms_eps, x, model.ssm.initial(seq))
    if seq.ssm_slot is not None:
        model.ssm.state[seq.ssm_slot].copy_(h_last[0])
    first = torch.zeros_like(x[:1]) if prev_hidden is None else prev_hidden.to(x)[None]
    drafter_rows(nm, cfg, w, model.draft_kv, torch.cat([first, x[:-1]]), tok, dmeta)
    seq.seq_len += len(tokens)
    return x


def forward_full(model: TinyMtpModel, tokens: list[int]) -> torch.Tensor:
    """Logits [T, vocab] of `tokens` from position 0 with no paged cache and no slots (zero SSM
    state); nothing is written. Keys are laid out contiguously, padded to the decode's length."""
    cfg, nm, w, t = model.cfg, model.nm, model.weights, len(tokens)
    span = cfg.max_seq_len if nm.exact else -(-t // cfg.block_size) * cfg.block_size
    tok = torch.tensor(tokens, dtype=torch.long, device=model.device)
    lengths = torch.arange(1, t + 1, device=model.device)

    def attend(num: Numerics, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        pad = torch.zeros(span - t, *k.shape[1:], dtype=k.dtype, device=k.device)
        keys, values = torch.cat([k, pad]), torch.cat([v, pad])  # [span, Hh, D]
        return attention(num, q, keys.expand(t, *keys.shape), values.expand(t, *values.shape), lengths)

    x = w.embed[tok]
    for layer in w.layers:
        x = block_forward(nm, layer, cfg.rms_eps, x, cfg.n_heads, attend)
    h0 = torch.zeros(1, cfg.ssm_state, dtype=x.dtype, device=x.device)
    x, _ = ssm_scan(nm, w.ssm, cfg.rms_eps, x, h0)
    return model.head(x)


def decode_run(model: TinyMtpModel, seq: SequenceState, tokens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Run `tokens` at positions seq_len.. through the main model only (KV written, SSM slot
    advanced, seq_len advanced; without an SSM slot every row starts the recurrent layer from zeros,
    as a decode does); the drafter and the scratch are left alone. The rows go through
    the same kernels on the same padded shapes as `prefill`'s main part and a decode, so in exact
    numerics each row is bit-equal to decoding its token alone. Returns (hidden [T, H] before the
    final norm, logits [T, vocab])."""
    cfg, nm, w = model.cfg, model.nm, model.weights
    pos = list(range(seq.seq_len, seq.seq_len + len(tokens)))
    span = cfg.main_blocks_per_seq if nm.exact else -(-(pos[-1] + 1) // cfg.block_size)
    views = pack_sections(
        [tokens, *row_sections(pos, [seq.block_table] * len(pos), span, cfg.block_size)], model.device
    )
    meta = row_meta(views[1:], span)
    x = w.embed[views[0]]  # [T, H]
    for i, layer in enumerate(w.layers):
        x = block_forward(nm, layer, cfg.rms_eps, x, cfg.n_heads, paged_attend(model.kv, i, meta))
    if seq.ssm_slot is None:  # every position starts the recurrent layer from zeros, as a decode does
        x, _ = ssm_layer(
            nm, w.ssm, cfg.rms_eps, x, torch.zeros(len(tokens), cfg.ssm_state, dtype=x.dtype, device=x.device)
        )
    else:
        x, h_last = ssm_scan(nm, w.ssm, cfg.rms_eps, x, model.ssm.initial(seq))
        model.ssm.state[seq.ssm_slot].copy_(h_last[0])
    seq.seq_len += len(tokens)
    return x, model.head(x)
