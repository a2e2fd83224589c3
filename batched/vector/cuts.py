"""Temperature, top-k and top-p for many rows at once, as `reference.sampling.cut_scores` does them
for one row.

Row i: candidates ranked on the processed row (stable sort, best first, ties to the lowest id);
top-k keeps the k best when 0 < k < the finite candidates; scores = (row - max(row)) / T; top-p keeps
the smallest prefix whose mass (softmax over what top-k kept, cumulated in rank order) is >= p.
Rows of different cut lengths share one [m, V] pass: a row's kept prefix is softmaxed with -inf
after it, which adds exact zeros; on the CPU that was measured bit-equal to the softmax of the
prefix alone, and the cumulative sum is sequential there (tests/test_batch_sampling.py).
"""

from __future__ import annotations

import torch

from batched.vector.row_scalars import divide_by

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
