"""One sampling pass for many rows: the batched form of `reference.sampling.sample_token_with_grammar`.

Every row gets exactly what the per-row sampler gives it alone: the same refusals (with the same
text), the processed row (penalties, EOS mask, grammar mask: `batched.batch_masks`), then the argmax
of the processed row for a greedy row (temperature 0 or `force_temp_zero`, ties to the lowest id),
or for a sampled row the argmax of its cut scores (`batched.batch_cuts`) plus its counter-based
noise (`batched.batch_noise`). The pass issues a fixed number of device operations whatever the row
count, reads nothing back (`collect` does, once), and never modifies the logits or a grammar.

Unlike the per-row sampler it makes no `model.argmax_on_device` call for a greedy row, and it does
not go through `reference.decisions` (it records no margins and takes no forced choice), so it can
be the implementation under test but not the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from batched.batch_cuts import cut_scores_rows
from batched.batch_masks import NEUTRAL, RowProcessing, processed_rows
from batched.batch_noise import gumbel_rows
from batched.readback import read_together
from batched.row_scalars import int_column
from batched.sample_checks import first_error
from reference.sampling import SamplingError


@dataclass(slots=True, frozen=True)
class SampleRequest:
    """One row for the pass: what the per-row sampler would be given for it, and its refusal from
    the parameters alone (`batched.sample_checks.host_error`), if any."""

    row: int  # the row of the logits
    temperature: float
    top_k: int
    top_p: float
    greedy: bool  # temperature 0 or force_temp_zero
    processing: RowProcessing
    seed: int
    position: int
    host_error: str | None = None


@dataclass(slots=True)
class SampledRows:
    """The device results of a pass: tokens [m] int64 and flags [m, 4] bool (a NaN logit, a +inf
    logit, NaN or +inf after processing, no finite logit left), request i in row i."""

    requests: list[SampleRequest]
    tokens: torch.Tensor
    flags: torch.Tensor
    shape_error: str | None = None


def sample_pass(logits: torch.Tensor, requests: list[SampleRequest], vocab: int) -> SampledRows:
    """Launch the pass for `requests` over logits [N, V] (no host sync)."""
    dev = logits.device
    m = len(requests)
    if logits.dim() != 2 or logits.shape[1] != vocab:
        shape = f"row has shape {tuple(logits.shape[1:])}, expected ({vocab},)"
        return SampledRows(requests, torch.zeros(m, dtype=torch.int64), torch.zeros(m, 4, dtype=torch.bool), shape)
    raw = logits.index_select(0, int_column([r.row for r in requests], dev))  # [m, V]
    proc = processed_rows(raw, [r.processing if r.host_error is None else NEUTRAL for r in requests])  # [m, V]
    flags = torch.stack(
        [
            raw.isnan().any(-1),
            raw.isposinf().any(-1),
            (proc.isnan() | proc.isposinf()).any(-1),
            ~proc.isfinite().any(-1),
        ],
        dim=1,
    )  # [m, 4]
    tokens = torch.argmax(proc, dim=-1)  # [m]: the greedy token, ties to the lowest id
    sampled = [i for i, r in enumerate(requests) if not r.greedy and r.host_error is None]
    if sampled:
        rs = [requests[i] for i in sampled]
        idx = None if len(sampled) == m else int_column(sampled, dev)
        sub = proc if idx is None else proc.index_select(0, idx)  # [s, V]
        cut = cut_scores_rows(sub, [r.temperature for r in rs], [r.top_k for r in rs], [r.top_p for r in rs])
        noise = gumbel_rows([r.seed for r in rs], [r.position for r in rs], vocab, dev)  # [s, V]
        chosen = torch.argmax(cut + noise, dim=-1)  # [s]
        tokens = chosen if idx is None else tokens.index_copy(0, idx, chosen)
    return SampledRows(requests, tokens, flags)


def outcomes(s: SampledRows, tokens: Sequence[float], flags: Sequence[float]) -> list[int | SamplingError]:
    """Per request, its token or the `SamplingError` the per-row sampler raises, from the host copies
    of `s.tokens` and `s.flags` (flattened)."""
    out: list[int | SamplingError] = []
    for i, r in enumerate(s.requests):
        if s.shape_error is not None:
            out.append(SamplingError(s.shape_error))
            continue
        nan, posinf, bad, none = (bool(f) for f in flags[4 * i : 4 * i + 4])
        err = first_error(r.host_error, nan, posinf, bad, none)
        out.append(SamplingError(err) if err is not None else int(tokens[i]))
    return out


def sample_rows(logits: torch.Tensor, requests: list[SampleRequest], vocab: int) -> list[int | SamplingError]:
    """`sample_pass` and its outcomes with one host read."""
    s = sample_pass(logits, requests, vocab)
    tokens, flags = read_together([s.tokens, s.flags])
    return outcomes(s, tokens, flags)
