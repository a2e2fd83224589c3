"""What the sampling tests share: a model that answers what sampling asks of one, and the penalty
formula of `docs/semantics.md` one logit at a time."""

from __future__ import annotations

from collections import Counter

import torch

from reference.decisions import argmax_lowest
from reference.penalties import PenaltyParams

NEG_INF = float("-inf")


class ArgmaxModel:
    """What sampling asks of a model: the vocabulary size and the per-row argmax."""

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def vocab_size(self) -> int:
        return self.vocab

    def argmax_on_device(self, row: torch.Tensor) -> int:
        return argmax_lowest(row)


def py_penalize(row: list[float], p: PenaltyParams, history: list[int]) -> list[float]:
    """docs/semantics.md's penalty formula, one logit at a time."""
    counts = Counter(history)
    out = []
    for i, x in enumerate(row):
        c = counts.get(i, 0)
        if c and p.repetition != 1.0:
            x = x / p.repetition if x > 0 else x * p.repetition
        x = x - c * p.frequency
        if c:
            x = x - p.presence
        out.append(NEG_INF if i in p.banned_ids else x)
    return out
