"""Top logprobs for many rows at once, as `reference.logprobs.extract_single_logprobs` gives them
for one row: from the float64 log-softmax of the RAW row (the logits as decoded, before penalties
and masks), the chosen token's logprob and the top min(k, V) (id, logprob) pairs, best first, ties to
the lowest id (a stable sort of the log-softmax); None where the log-softmax is undefined (a NaN or
+inf logit, or no finite one). The log-softmax is `reference.model.kernels.row_softmax`'s, as the
per-row path's, so a row's bits inside [r, V] are the same row's alone, on the CPU and on CUDA
(tests/test_batch_sampling.py, tests/test_softmax_rows.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from batched.vector.rows import int_column
from reference.model.kernels import row_softmax
from reference.state import TokenLogprobs


def check_count(k: int) -> None:
    """The per-row extraction's refusal of a negative count (a ValueError the step lets escape)."""
    if k < 0:
        raise ValueError(f"top logprobs count {k} must be >= 0")


@dataclass(slots=True)
class LogprobRows:
    """Device results for rows[i]: the chosen token's logprob [r], the top ids and logprobs
    [r, kmax], and whether the log-softmax is undefined [r]."""

    rows: list[int]
    ks: list[int]
    chosen: torch.Tensor
    top_ids: torch.Tensor
    top_lp: torch.Tensor
    undefined: torch.Tensor


def logprob_pass(logits: torch.Tensor, rows: list[int], tokens: torch.Tensor, ks: list[int]) -> LogprobRows:
    """Launch the logprobs of logits[rows[i]] for token tokens[i] [r] with count ks[i] >= 0 (no host
    sync). `logits` is never modified."""
    dev, vocab = logits.device, logits.shape[1]
    raw = logits.index_select(0, int_column(rows, dev)).to(torch.float64)  # [r, V]
    undefined = (raw.isnan() | raw.isposinf()).any(-1) | ~raw.isfinite().any(-1)  # [r]
    lp = row_softmax(raw, log=True)  # [r, V]: each row's bits as alone (reference.model.kernels)
    chosen = lp.gather(1, tokens[:, None])[:, 0]  # [r]
    kmax = min(max(ks, default=0), vocab)
    if kmax == 0:
        empty = torch.zeros(len(rows), 0, dtype=torch.float64, device=dev)
        return LogprobRows(rows, ks, chosen, empty, empty, undefined)
    order = torch.sort(lp, dim=-1, descending=True, stable=True).indices[:, :kmax]  # [r, kmax]
    return LogprobRows(rows, ks, chosen, order, lp.gather(1, order), undefined)


def to_logprobs(
    lr: LogprobRows,
    i: int,
    token: int,
    chosen: Sequence[float],
    ids: Sequence[float],
    lps: Sequence[float],
    undefined: Sequence[float],
) -> TokenLogprobs | None:
    """Row i's `TokenLogprobs` from the host copies (flattened) of `lr`'s tensors."""
    if undefined[i]:
        return None
    kmax = lr.top_ids.shape[1]
    k = min(lr.ks[i], kmax)
    top = tuple((int(ids[i * kmax + c]), lps[i * kmax + c]) for c in range(k))
    return TokenLogprobs(token=token, logprob=chosen[i], top=top)
