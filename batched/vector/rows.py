"""Row processing of the one-pass sampler, for many rows at once, bit for bit the per-row path's.

Per-row scalars as device columns, divided by as the per-row path divides: the per-row sampler
divides a row by a Python float (`row / temperature`, `logit / repetition`); on the CPU that is a
true division, on CUDA PyTorch computes `a * (1 / b)` for a CPU scalar divisor, which may differ in
the last bit, and `divide_rows` does what the per-row path does on the same device.

Penalties over each row's scoped history, banned ids, the EOS mask while held and the grammar
bitmask, on a float64 [m, V] copy of the rows: the host packs each row's inputs (`history_ids`,
`masked_ids`, `penalty_columns`, `grammar_words`); the device pass (`processed_rows`) branches on
nothing, so it keeps one shape for a given row count. Row i gets exactly what
`reference.sampling.processed_row` gives its row alone: repetition on the input values, then
frequency and presence, then banned ids, EOS ids and the tokens the grammar does not allow set to
-inf. Counts are integers (exact on every device); every other operation is elementwise and
correctly rounded, so the batch changes no bit.

Temperature, top-k and top-p as `reference.sampling.cut_scores` does them for one row: candidates
ranked on the processed row (stable sort, ties to the lowest id); top-k keeps the k best; scores =
(row - max(row)) / T; top-p keeps the smallest prefix whose mass is >= p. Rows of different cut
lengths share one [m, V] pass: a kept prefix is softmaxed with -inf after it, which adds exact zeros
(measured bit-equal to the prefix alone on the CPU, whose cumulative sum is sequential;
tests/test_batch_sampling.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import torch

from batched.vector.int_pack import packed
from reference.grammar import GrammarState
from reference.model.paged_kv import to_device
from reference.penalties import PenaltyParams

if TYPE_CHECKING:
    import xgrammar as xgr  # imported where first used, as in reference.grammar


def column(values: Sequence[float], device: torch.device) -> torch.Tensor:
    """[m, 1] float64 on `device` from host floats (one copy, no host sync)."""
    host = torch.frombuffer(array("d", values), dtype=torch.float64) if values else torch.zeros(0, dtype=torch.float64)
    return to_device(host, device).view(-1, 1)


def int_column(values: Sequence[int], device: torch.device) -> torch.Tensor:
    """[m] int64 on `device` from host ints (one copy, no host sync)."""
    return to_device(packed(values), device)


def divisors(values: Sequence[float], device: torch.device) -> list[float]:
    """What `divide_by` takes to divide by `values` on `device`: the reciprocals (computed in float64
    on the host) on CUDA, the values themselves elsewhere."""
    return [1.0 / d for d in values] if device.type == "cuda" else list(values)


def divide_by(x: torch.Tensor, col: torch.Tensor) -> torch.Tensor:
    """x [m, V] float64 with row i divided by the divisor `col` [m, 1] holds for it (`divisors`),
    rounded as `x[i] / d` is when d is a Python float: true division on the CPU, multiplication by
    the reciprocal on CUDA."""
    return x * col if x.device.type == "cuda" else x / col


def divide_rows(x: torch.Tensor, values: Sequence[float]) -> torch.Tensor:
    """x [m, V] float64 with row i divided by values[i], as `divide_by` rounds it."""
    return divide_by(x, column(divisors(values, x.device), x.device))


NEG_INF = float("-inf")


def cut_scores_rows(proc: torch.Tensor, temp_div: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """[m, V] float64: row i's temperature-scaled scores where top-k and top-p keep the token, -inf
    elsewhere. proc [m, V] float64 holds the processed rows; temp_div [m, 1] the temperatures as
    `row_scalars.divisors` gives them, k [m] int64 the top-k, p [m, 1] float64 the top-p, every
    parameter valid (T > 0). Top-p runs for every row (a row with p >= 1 keeps its top-k cut), so
    the pass has one shape whatever the parameters."""
    vocab = proc.shape[1]
    n_finite = torch.isfinite(proc).sum(-1)  # [m]
    keep = torch.where((k > 0) & (k < n_finite), k, n_finite)  # [m]
    scores = divide_by(proc - proc.amax(-1, keepdim=True), temp_div)  # [m, V]
    order = torch.sort(proc, dim=-1, descending=True, stable=True).indices  # [m, V], best first
    rank = torch.arange(vocab, device=proc.device)  # [V]
    in_keep = rank < keep[:, None]  # [m, V] in rank order
    probs = torch.softmax(torch.where(in_keep, scores.gather(-1, order), NEG_INF), dim=-1)
    csum = torch.cumsum(probs, dim=-1)  # [m, V]
    kept = torch.minimum(((csum < p) & in_keep).sum(-1) + 1, keep)
    keep = torch.where((p[:, 0] < 1.0) & (keep > 1), kept, keep)
    kept_ranked = rank < keep[:, None]  # [m, V] in rank order
    kept_ids = torch.zeros_like(kept_ranked).scatter_(-1, order, kept_ranked)  # [m, V] by token id
    return torch.where(kept_ids, scores, NEG_INF)


NEG_INF = float("-inf")


@dataclass(slots=True, frozen=True)
class RowProcessing:
    """What one row's processing applies (neutral and empty for a row the sampler refuses)."""

    pen: PenaltyParams
    history: Sequence[int]  # the scoped history; read only when repetition, frequency or presence is active
    eos_mask: Sequence[int]
    grammar: GrammarState | None


NEUTRAL = RowProcessing(PenaltyParams(), (), (), None)


@lru_cache(maxsize=1)
def _batch_matcher() -> xgr.BatchGrammarMatcher:
    import xgrammar as xgr

    return xgr.BatchGrammarMatcher(max_threads=1)


def grammar_words(states: Sequence[GrammarState | None], vocab: int) -> torch.Tensor:
    """[m, ceil(V / 32)] int32 on the host: bit j of word w of row i set when states[i] allows token
    32 w + j next, as `GrammarState.allowed_mask` gives it (no bit once terminated, every bit for a
    row without a grammar), from one bitmask filled for every live matcher."""
    import xgrammar as xgr

    bitmask = xgr.allocate_token_bitmask(len(states), vocab)  # all bits set
    live = [i for i, s in enumerate(states) if s is not None and not s.is_terminated()]
    if live:
        _batch_matcher().batch_fill_next_token_bitmask([states[i].matcher for i in live], bitmask, live)  # type: ignore[union-attr]
    for i, s in enumerate(states):
        if s is not None and s.is_terminated():
            bitmask[i] = 0  # a terminated grammar allows nothing
    return bitmask


def allowed_tokens(words: torch.Tensor, vocab: int) -> torch.Tensor:
    """[m, V] bool: the tokens the bitmask words [m, W] int32 allow."""
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    bits = (words[:, :, None] >> shifts) & 1  # [m, W, 32]: bit j of word w is token 32 w + j
    return bits.flatten(1)[:, :vocab].bool()


def history_ids(rows: Sequence[RowProcessing], vocab: int) -> array:
    """Flat ids r * V + t of every token t in the history of each row r with an active penalty."""
    flat = array("q")
    for r, p in enumerate(rows):
        if p.pen.repetition != 1.0 or p.pen.frequency != 0.0 or p.pen.presence != 0.0:
            base = r * vocab
            flat.extend(base + t for t in p.history)
    return flat


def masked_ids(rows: Sequence[RowProcessing], vocab: int) -> array:
    """Flat ids r * V + t of each row's banned ids and (while held) EOS ids."""
    flat = array("q")
    for r, p in enumerate(rows):
        base = r * vocab
        flat.extend(base + t for t in p.pen.banned_ids)
        flat.extend(base + t for t in p.eos_mask)
    return flat


def penalty_columns(rows: Sequence[RowProcessing], device: torch.device) -> list[list[float]]:
    """The four [m] float columns `penalties_rows` takes: repetition, its `divisors` form,
    frequency, presence (neutral values where a penalty is off)."""
    reps = [p.pen.repetition for p in rows]
    return [reps, divisors(reps, device), [p.pen.frequency for p in rows], [p.pen.presence for p in rows]]


def penalties_rows(proc: torch.Tensor, hist: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """proc [m, V] float64 with repetition, frequency and presence applied over each row's history:
    hist holds flat ids r * V + t (any id m * V counts nowhere: padding), cols [4, m, 1] the
    `penalty_columns`. A row whose penalty is off keeps its values."""
    m, vocab = proc.shape
    counts = torch.zeros(m * vocab + 1, dtype=torch.int64, device=proc.device)
    counts = counts.scatter_add_(0, hist, torch.ones_like(hist))[:-1].view(m, vocab)  # [m, V]
    seen = counts > 0
    rep, rep_div, freq, pres = cols  # [m, 1] each
    on = rep != 1.0
    scaled = torch.where(proc > 0, divide_by(proc, rep_div), proc * rep)
    proc = torch.where(on & seen, scaled, proc)
    proc = torch.where(freq != 0.0, proc - counts.to(proc.dtype) * freq, proc)
    return torch.where(pres != 0.0, proc - seen.to(proc.dtype) * pres, proc)


def masks_rows(proc: torch.Tensor, masked: torch.Tensor, words: torch.Tensor | None) -> torch.Tensor:
    """proc [m, V] with the flat ids `masked` (banned and EOS; any id m * V is padding) and, given
    grammar bitmask words [m, W], the tokens they disallow at -inf."""
    m, vocab = proc.shape
    flat = torch.cat([proc.reshape(-1), proc.new_zeros(1)])  # one scratch slot for padding ids
    proc = flat.index_fill_(0, masked, NEG_INF)[:-1].view(m, vocab)
    return proc if words is None else proc.masked_fill(~allowed_tokens(words, vocab), NEG_INF)


def processed_rows(
    raw: torch.Tensor, hist: torch.Tensor, cols: torch.Tensor, masked: torch.Tensor, words: torch.Tensor | None
) -> torch.Tensor:
    """A float64 copy of raw [m, V] with each row's penalties and masks applied (never in place on
    `raw`); the inputs as `penalties_rows` and `masks_rows` take them."""
    return masks_rows(penalties_rows(raw.to(torch.float64, copy=True), hist, cols), masked, words)
