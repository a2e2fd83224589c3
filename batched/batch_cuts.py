"""Temperature, top-k and top-p for many rows at once, as `reference.sampling._cut_scores` does them
for one row.

Row i: candidates ranked on the processed row (stable sort, best first, ties to the lowest id);
top-k keeps the k best when 0 < k < the finite candidates; scores = (row - max(row)) / T; top-p keeps
the smallest prefix whose mass (softmax over what top-k kept, cumulated in rank order) is >= p.
Rows of different cut lengths share one [m, V] pass: a row's kept prefix is softmaxed with -inf
after it, which adds exact zeros; on the CPU that was measured bit-equal to the softmax of the
prefix alone, and the cumulative sum is sequential there (tests/test_batch_sampling.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from batched.row_scalars import column, divide_rows, int_column

NEG_INF = float("-inf")


def cut_scores_rows(
    proc: torch.Tensor, temperatures: Sequence[float], top_ks: Sequence[int], top_ps: Sequence[float]
) -> torch.Tensor:
    """[m, V] float64: row i's temperature-scaled scores where top-k and top-p keep the token, -inf
    elsewhere. proc [m, V] float64 holds the processed rows; every parameter is valid (T > 0)."""
    vocab = proc.shape[1]
    dev = proc.device
    n_finite = torch.isfinite(proc).sum(-1)  # [m]
    k = int_column(top_ks, dev)  # [m]
    keep = torch.where((k > 0) & (k < n_finite), k, n_finite)  # [m]
    scores = divide_rows(proc - proc.amax(-1, keepdim=True), temperatures)  # [m, V]
    order = torch.sort(proc, dim=-1, descending=True, stable=True).indices  # [m, V], best first
    rank = torch.arange(vocab, device=dev)  # [V]
    if any(p < 1.0 for p in top_ps):
        in_keep = rank < keep[:, None]  # [m, V] in rank order
        probs = torch.softmax(torch.where(in_keep, scores.gather(-1, order), NEG_INF), dim=-1)
        csum = torch.cumsum(probs, dim=-1)  # [m, V]
        p = column(top_ps, dev)  # [m, 1]
        kept = torch.minimum(((csum < p) & in_keep).sum(-1) + 1, keep)
        keep = torch.where((p[:, 0] < 1.0) & (keep > 1), kept, keep)
    kept_ranked = rank < keep[:, None]  # [m, V] in rank order
    kept_ids = torch.zeros_like(kept_ranked).scatter_(-1, order, kept_ranked)  # [m, V] by token id
    return torch.where(kept_ids, scores, NEG_INF)
