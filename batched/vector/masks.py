"""Logit processing for many rows at once: penalties over each row's scoped history, banned ids, the
EOS mask while held and the grammar bitmask, on a float64 [m, V] copy of the rows. The host packs
each row's inputs (`history_ids`, `masked_ids`, `penalty_columns`, `grammar_words`); the device
pass (`processed_rows`) branches on nothing, so it keeps one shape for a given row count.

Row i gets exactly what `reference.sampling.processed_row` gives its row alone: repetition on the
input values (divide a positive logit, multiply a non-positive one, for tokens seen in the history),
then frequency (minus count * f) and presence (minus p once seen), then banned ids, EOS ids and the
tokens the grammar does not allow set to -inf. Counts are integers (exact on every device); every
other operation is elementwise and correctly rounded, so the batch changes no bit.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch
import xgrammar as xgr

from batched.vector.row_scalars import divide_by, divisors
from reference.grammar import GrammarState
from reference.penalties import PenaltyParams

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
    return xgr.BatchGrammarMatcher(max_threads=1)


def grammar_words(states: Sequence[GrammarState | None], vocab: int) -> torch.Tensor:
    """[m, ceil(V / 32)] int32 on the host: bit j of word w of row i set when states[i] allows token
    32 w + j next, as `GrammarState.allowed_mask` gives it (no bit once terminated, every bit for a
    row without a grammar), from one bitmask filled for every live matcher."""
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
