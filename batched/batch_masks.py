"""Logit processing for many rows at once: penalties over each row's scoped history, banned ids, the
EOS mask while held and the grammar bitmask, on a float64 [m, V] copy of the rows.

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

from batched.row_scalars import column, divide_rows, int_column
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


def grammar_allowed(states: Sequence[GrammarState], vocab: int, device: torch.device) -> torch.Tensor:
    """[g, V] bool on `device`: the tokens each grammar allows next (all False once terminated), as
    `GrammarState.allowed_mask` gives them, from one bitmask filled for every live matcher."""
    bitmask = xgr.allocate_token_bitmask(len(states), vocab)  # [g, ceil(V / 32)] int32, all bits set
    live = [i for i, s in enumerate(states) if not s.is_terminated()]
    if live:
        _batch_matcher().batch_fill_next_token_bitmask([states[i].matcher for i in live], bitmask, live)
    for i in set(range(len(states))) - set(live):
        bitmask[i] = 0  # a terminated grammar allows nothing
    words = bitmask.to(device, non_blocking=True)
    shifts = torch.arange(32, dtype=torch.int32, device=device)
    bits = (words[:, :, None] >> shifts) & 1  # [g, W, 32]: bit j of word w is token 32 w + j
    return bits.flatten(1)[:, :vocab].bool()


def _counts(rows: Sequence[int], histories: Sequence[Sequence[int]], m: int, vocab: int, device: torch.device):
    """[m, V] int64: how often each token occurs in row rows[i]'s history (other rows zero)."""
    flat = array("q")
    for r, hist in zip(rows, histories, strict=True):
        base = r * vocab
        flat.extend(base + t for t in hist)
    counts = torch.zeros(m * vocab, dtype=torch.int64, device=device)
    if flat:
        idx = int_column(flat, device)
        counts.scatter_add_(0, idx, torch.ones_like(idx))
    return counts.view(m, vocab)


def apply_penalties_rows(proc: torch.Tensor, rows: Sequence[RowProcessing]) -> torch.Tensor:
    """proc [m, V] float64 with repetition, frequency and presence applied over each row's history."""
    m, vocab = proc.shape
    active = [
        i for i, r in enumerate(rows) if r.pen.repetition != 1.0 or r.pen.frequency != 0.0 or r.pen.presence != 0.0
    ]
    if not active:
        return proc
    counts = _counts(active, [rows[i].history for i in active], m, vocab, proc.device)  # [m, V]
    seen = counts > 0
    dev = proc.device
    if any(rows[i].pen.repetition != 1.0 for i in active):
        reps = [r.pen.repetition for r in rows]
        on = column([float(r.pen.repetition != 1.0) for r in rows], dev) > 0  # [m, 1]
        scaled = torch.where(proc > 0, divide_rows(proc, reps), proc * column(reps, dev))
        proc = torch.where(on & seen, scaled, proc)
    if any(rows[i].pen.frequency != 0.0 for i in active):
        on = column([float(r.pen.frequency != 0.0) for r in rows], dev) > 0
        proc = torch.where(on, proc - counts.to(proc.dtype) * column([r.pen.frequency for r in rows], dev), proc)
    if any(rows[i].pen.presence != 0.0 for i in active):
        on = column([float(r.pen.presence != 0.0) for r in rows], dev) > 0
        proc = torch.where(on, proc - seen.to(proc.dtype) * column([r.pen.presence for r in rows], dev), proc)
    return proc


def apply_masks_rows(proc: torch.Tensor, rows: Sequence[RowProcessing]) -> torch.Tensor:
    """proc [m, V] with each row's banned ids, EOS mask and grammar's disallowed tokens at -inf (in
    place; returned)."""
    vocab = proc.shape[1]
    flat = array("q")
    for i, r in enumerate(rows):
        base = i * vocab
        flat.extend(base + t for t in r.pen.banned_ids)
        flat.extend(base + t for t in r.eos_mask)
    if flat:
        proc.view(-1).index_fill_(0, int_column(flat, proc.device), NEG_INF)
    g_rows = [i for i, r in enumerate(rows) if r.grammar is not None]
    if g_rows:
        allowed = grammar_allowed([rows[i].grammar for i in g_rows], vocab, proc.device)  # type: ignore[misc]
        idx = int_column(g_rows, proc.device)
        proc.index_copy_(0, idx, proc.index_select(0, idx).masked_fill_(~allowed, NEG_INF))
    return proc


def processed_rows(raw: torch.Tensor, rows: Sequence[RowProcessing]) -> torch.Tensor:
    """A float64 copy of raw [m, V] with each row's penalties and masks applied (never in place on
    `raw`)."""
    return apply_masks_rows(apply_penalties_rows(raw.to(torch.float64, copy=True), rows), rows)
