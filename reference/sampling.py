"""Per-sequence, stateless token sampling: penalties, EOS and grammar masks, then greedy argmax or
temperature, top-k, top-p and counter-based Gumbel noise.

The noise is a pure function of (sequence seed, position, token id): a keyed integer hash computed
in int64 tensor arithmetic that never overflows, so every device produces the same bits, and neither
batch order nor batch size can change a sampled token. There is no RNG anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from reference.decisions import DecisionKey, decide, observe, record_margin
from reference.errors import ModelError
from reference.grammar import GrammarState
from reference.model.protocol import Model
from reference.penalties import PenaltyGate, PenaltyParams, apply_penalties, classify_penalties
from reference.sampling_params import is_greedy
from reference.sched_ctx import SamplingConfig

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


class SamplingError(ModelError):
    """Sampling a row failed (no token allowed, a NaN or +inf logit, invalid parameters); the
    caller finishes that sequence."""


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def noise_keys(seed: int, position: int) -> tuple[int, int, int, int]:
    """Four 32-bit keys for (seed, position); the seed is taken modulo 2**64."""
    if position < 0:
        raise ValueError(f"noise position {position} must be >= 0")
    s = _splitmix64(_splitmix64(seed & _M64) ^ (position & _M64))
    t = _splitmix64(s)
    return s & _M32, s >> 32, t & _M32, t >> 32


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for int64 x in [0, 2**32): split in 16-bit halves so no product reaches 2**63."""
    lo = x & 0xFFFF
    hi = x >> 16
    return (lo * c + (((hi * c) & 0xFFFF) << 16)) & _M32


def _fmix32(x: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finalizer (a bijection on [0, 2**32))."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    return x ^ (x >> 16)


def noise_bits(seed: int, position: int, token_ids: torch.Tensor) -> torch.Tensor:
    """52 uniform bits (int64 in [0, 2**52)) per token id, a pure function of (seed, position, id)."""
    return keyed_bits(noise_keys(seed, position), token_ids)


def keyed_bits(keys: tuple[int | torch.Tensor, ...], token_ids: torch.Tensor) -> torch.Tensor:
    """`noise_bits` from the four keys of `noise_keys`: ints, or int64 tensors that broadcast with
    `token_ids` (the bits of several (seed, position) pairs at once)."""
    k0, k1, k2, k3 = keys
    ids = token_ids.to(torch.int64) & _M32
    h1 = _fmix32(_fmix32(ids ^ k0) ^ k1)
    h2 = _fmix32(_fmix32(ids ^ k2) ^ k3)
    return (h1 << 20) | (h2 >> 12)


def gumbel_noise(seed: int, position: int, vocab: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Float64 [vocab] standard Gumbel noise -log(-log(u)), u = (2 * bits + 1) / 2**53 in (0, 1).

    u is exact on every device; the two logs may differ by an ulp between devices."""
    bits = noise_bits(seed, position, torch.arange(vocab, dtype=torch.int64, device=device))
    u = (bits * 2 + 1).to(torch.float64) * 2.0**-53
    return -torch.log(-torch.log(u))


def _check_inputs(row: torch.Tensor, vocab: int, temperature: float, top_k: int, top_p: float) -> None:
    if row.dim() != 1 or row.shape[0] != vocab:
        raise SamplingError(f"row has shape {tuple(row.shape)}, expected ({vocab},)")
    if bool(torch.isnan(row).any()):
        raise SamplingError("row has NaN logits")
    if bool(torch.isposinf(row).any()):
        raise SamplingError("row has +inf logits")
    if not (math.isfinite(temperature) and temperature >= 0.0):
        raise SamplingError(f"temperature {temperature} must be finite and >= 0")
    if top_k < 0:
        raise SamplingError(f"top_k {top_k} must be >= 0 (0: off)")
    if not (math.isfinite(top_p) and 0.0 < top_p <= 1.0):
        raise SamplingError(f"top_p {top_p} must be in (0, 1] (1: off)")


def _mask_ids(row: torch.Tensor, ids: Sequence[int], what: str) -> None:
    if not ids:
        return
    bad = [i for i in ids if not 0 <= i < row.shape[0]]
    if bad:
        raise SamplingError(f"{what} ids {bad} outside the vocabulary of {row.shape[0]}")
    row[torch.as_tensor(list(ids), dtype=torch.int64, device=row.device)] = float("-inf")


def processed_row(
    row_logits: torch.Tensor,
    eos_mask: Sequence[int],
    grammar_state: GrammarState | None,
    pen: PenaltyParams,
    history: Sequence[int],
) -> torch.Tensor:
    """Float64 copy of the row with penalties over `history`, the EOS mask and the grammar mask
    applied (-inf). Raises SamplingError when no token is left or a penalty produced NaN/+inf."""
    row = row_logits.detach().to(torch.float64, copy=True)
    try:
        row = apply_penalties(row, pen, history)
    except ValueError as e:
        raise SamplingError(f"penalties: {e}") from e
    _mask_ids(row, eos_mask, "EOS mask")
    if grammar_state is not None:
        allowed = grammar_state.allowed_mask(row.device)
        if allowed.shape != row.shape:
            raise SamplingError(f"grammar mask has {allowed.shape[0]} tokens, the row {row.shape[0]}")
        row[~allowed] = float("-inf")
    if bool(torch.isnan(row).any() | torch.isposinf(row).any()):
        raise SamplingError("penalties produced NaN or +inf logits")
    if not bool(torch.isfinite(row).any()):
        raise SamplingError("no token is allowed: banned ids, the EOS mask and the grammar mask exclude all")
    return row


def cut_scores(
    row: torch.Tensor, temperature: float, top_k: int, top_p: float, seq_id: int, position: int
) -> torch.Tensor:
    """The temperature-scaled scores of the tokens top-k and top-p keep, -inf elsewhere.

    Candidates are ranked on the processed row, best first, ties to the lowest id. top-k keeps the
    k best; its margin (last kept minus first dropped, in logits) is recorded when it drops a
    finite candidate. top-p then keeps the smallest prefix whose probability mass, renormalized
    over what top-k kept, is >= p; its margin (distance of p from the cut, in probability mass) is
    recorded when it drops a candidate."""
    order = torch.sort(row, descending=True, stable=True).indices  # [V], best first
    keep = int(torch.isfinite(row).sum())
    if 0 < top_k < keep:
        margin = float(row[order[top_k - 1]] - row[order[top_k]])
        record_margin(DecisionKey(seq_id, position, "topk"), margin, top_k)
        keep = top_k
    # Shifting by the max keeps the scaled scores <= 0 however small the temperature.
    scores = (row - row.max()) / temperature
    if top_p < 1.0 and keep > 1:
        csum = torch.cumsum(torch.softmax(scores[order[:keep]], dim=0), dim=0)
        kept = min(int((csum < top_p).sum()) + 1, keep)
        if kept < keep:
            below = float(csum[kept - 2]) if kept >= 2 else 0.0
            margin = min(float(csum[kept - 1]) - top_p, top_p - below)
            record_margin(DecisionKey(seq_id, position, "topp"), margin, kept)
            keep = kept
    out = torch.full_like(scores, float("-inf"))
    out[order[:keep]] = scores[order[:keep]]
    return out


def sample_token_with_grammar(
    model: Model,
    row_logits: torch.Tensor,
    temperature: float,
    top_k: int,
    top_p: float,
    eos_mask: Sequence[int],
    grammar_state: GrammarState | None,
    pen: PenaltyParams,
    history: Sequence[int],
    sampling: SamplingConfig,
    *,
    seq_id: int,
    seed: int,
    position: int,
) -> int:
    """The token for output `position` of sequence `seq_id` from its row of logits [V].

    Never modifies `row_logits` or advances the grammar. Greedy (temperature 0 or
    `force_temp_zero`): the argmax of the processed row, through `model.argmax_on_device` when
    `fast_greedy_grammar` is on, the penalties are NEUTRAL and nothing is EOS-masked. Otherwise
    Gumbel-max over the temperature-scaled, top-k and top-p cut scores. Every choice and cut goes
    through `reference.decisions`. Raises SamplingError (see `_check_inputs`, `processed_row`)."""
    vocab = model.vocab_size()
    _check_inputs(row_logits, vocab, temperature, top_k, top_p)
    row = processed_row(row_logits, eos_mask, grammar_state, pen, history)
    key = DecisionKey(seq_id, position, "token")
    if is_greedy(temperature, sampling.force_temp_zero):
        neutral = classify_penalties(pen) is PenaltyGate.NEUTRAL
        if sampling.fast_greedy_grammar and neutral and not eos_mask:
            return observe(key, row, model.argmax_on_device(row))
        return decide(key, row)
    scores = cut_scores(row, temperature, top_k, top_p, seq_id, position)
    return decide(key, scores + gumbel_noise(seed, position, vocab, row.device))
