"""Log-probabilities of a sampled token and the row's best tokens, from the raw logits."""

from __future__ import annotations

import torch

from reference.model.kernels import row_softmax
from reference.model.protocol import Model
from reference.state import TokenLogprobs


def extract_single_logprobs(model: Model, row_logits: torch.Tensor, tok: int, k: int) -> TokenLogprobs | None:
    """`tok`'s log-probability and the top-k (id, logprob) pairs, best first (ties: lowest id), from
    the float64 log-softmax of the RAW row (before penalties and masks); k = 0 gives an empty top,
    k above the vocabulary gives all of it. Never modifies `row_logits`.

    None when the log-softmax is undefined (a NaN or +inf logit, or every logit -inf). Raises
    ValueError for a row that is not [vocab], `tok` outside the vocabulary or k < 0."""
    vocab = model.vocab_size()
    if row_logits.dim() != 1 or row_logits.shape[0] != vocab:
        raise ValueError(f"row has shape {tuple(row_logits.shape)}, expected ({vocab},)")
    if not 0 <= tok < vocab:
        raise ValueError(f"token {tok} outside the vocabulary of {vocab}")
    if k < 0:
        raise ValueError(f"top logprobs count {k} must be >= 0")
    row = row_logits.detach().to(torch.float64)
    if bool(torch.isnan(row).any() | torch.isposinf(row).any()) or not bool(torch.isfinite(row).any()):
        return None
    lp = row_softmax(row[None], log=True)[0]  # bits that do not depend on where the row sits
    order = torch.sort(lp, descending=True, stable=True).indices[: min(k, vocab)]
    top = tuple(zip(order.tolist(), lp[order].tolist(), strict=True))
    return TokenLogprobs(token=tok, logprob=float(lp[tok]), top=top)
