"""One sampling pass for many rows: the batched form of `reference.sampling.sample_token_with_grammar`.

Every row gets exactly what the per-row sampler gives it alone: the same refusals (with the same
text), the processed row (penalties, EOS mask, grammar mask: `batched.vector.masks`), then the argmax
of the processed row for a greedy row (temperature 0 or `force_temp_zero`, ties to the lowest id),
or for a sampled row the argmax of its cut scores (`batched.vector.cuts`) plus its counter-based
noise (`batched.vector.noise`). The pass issues a fixed number of device operations whatever the row
count and the parameters (one static pass of `batched.vector.static_passes`, replayed as a CUDA graph on a
GPU), reads nothing back (`outcomes` takes the host copies), and never modifies the logits or a
grammar.

Unlike the per-row sampler it makes no `model.argmax_on_device` call for a greedy row, and it does
not go through `reference.decisions` (it records no margins and takes no forced choice), so it can
be the implementation under test but not the reference.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from batched.vector.cuts import cut_scores_rows
from batched.vector.masks import (
    NEUTRAL,
    RowProcessing,
    grammar_words,
    history_ids,
    masked_ids,
    penalty_columns,
    processed_rows,
)
from batched.vector.noise import gumbel_from_keys, noise_key_rows
from batched.vector.readback import read_together
from batched.vector.row_scalars import divisors
from batched.vector.sample_checks import first_error
from batched.vector.static_passes import PassCache, padded, row_bucket
from reference.sampling import SamplingError


@dataclass(slots=True, frozen=True)
class SampleRequest:
    """One row for the pass: what the per-row sampler would be given for it, and its refusal from
    the parameters alone (`batched.vector.sample_checks.host_error`), if any."""

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


def _bucket(n: int) -> int:
    """The least power of two >= max(n, 1): the padded length of a variable-length id section."""
    return 1 << max(0, n - 1).bit_length()


def sample_pass(
    logits: torch.Tensor, requests: list[SampleRequest], vocab: int, cache: PassCache | None = None
) -> SampledRows:
    """Launch the pass for `requests` over logits [N, V] (no host sync). It runs on `row_bucket(m)`
    rows (padding rows greedy and neutral) and id sections padded to powers of two, as one static
    pass of `cache` (a CUDA graph there once captured; a cache of its own, never a graph, if none)."""
    dev = logits.device
    m = len(requests)
    if logits.dim() != 2 or logits.shape[1] != vocab:
        shape = f"row has shape {tuple(logits.shape[1:])}, expected ({vocab},)"
        return SampledRows(requests, torch.zeros(m, dtype=torch.int64), torch.zeros(m, 4, dtype=torch.bool), shape)
    if m == 0:
        return SampledRows(requests, torch.zeros(0, dtype=torch.int64), torch.zeros(0, 4, dtype=torch.bool))
    cache = PassCache(dev, None) if cache is None else cache
    rows = row_bucket(m)
    live = [r.host_error is None for r in requests]
    extra = rows - m  # padding rows: greedy, neutral, reading request 0's row
    procs = [r.processing if ok else NEUTRAL for r, ok in zip(requests, live, strict=True)] + [NEUTRAL] * extra
    sampled = [int(ok and not r.greedy) for r, ok in zip(requests, live, strict=True)] + [0] * extra
    temps = [r.temperature if on else 1.0 for r, on in zip(requests, sampled, strict=False)] + [1.0] * extra
    top_ps = [r.top_p if on else 1.0 for r, on in zip(requests, sampled, strict=False)] + [1.0] * extra
    hist, masked = history_ids(procs, vocab), masked_ids(procs, vocab)
    grammars = [pr.grammar for pr in procs]
    words = grammar_words(grammars, vocab) if any(g is not None for g in grammars) else None
    h, f, pad = _bucket(len(hist)), _bucket(len(masked)), rows * vocab  # id rows * V: padding
    sections = [
        padded([r.row for r in requests], rows),
        [r.top_k if on else 0 for r, on in zip(requests, sampled, strict=False)] + [0] * extra,
        sampled,
        noise_key_rows([r.seed for r in requests] + [0] * extra, [r.position for r in requests] + [0] * extra),
        list(hist) + [pad] * (h - len(hist)),
        list(masked) + [pad] * (f - len(masked)),
    ]
    specs = {"raw": ((rows, vocab), logits.dtype), "floats": ((6, rows, 1), torch.float64)}
    if words is not None:
        specs["words"] = (tuple(words.shape), words.dtype)
    key = ("sample", rows, h, f, words is not None, vocab, logits.dtype, any(sampled))
    p = cache.get(key, [rows, rows, rows, 4 * rows, h, f], specs)
    p.load(sections)
    floats = [*penalty_columns(procs, dev), divisors(temps, dev), top_ps]
    p.fill("floats", torch.frombuffer(array("d", chain.from_iterable(floats)), dtype=torch.float64).view(6, rows, 1))
    if words is not None:
        p.fill("words", words)
    row_ids, top_k, on, keys, hist_ids, masked_ids_ = p.views
    raw = p.tensors["raw"]
    torch.index_select(logits, 0, row_ids, out=raw)  # [R, V]
    cols, temp_div, top_p = p.tensors["floats"][:4], p.tensors["floats"][4], p.tensors["floats"][5]
    grammar = p.tensors.get("words")
    any_sampled = key[-1]

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        proc = processed_rows(raw, hist_ids, cols, masked_ids_, grammar)  # [R, V]
        flags = torch.stack(
            [
                raw.isnan().any(-1),
                raw.isposinf().any(-1),
                (proc.isnan() | proc.isposinf()).any(-1),
                ~proc.isfinite().any(-1),
            ],
            dim=1,
        )  # [R, 4]
        tokens = torch.argmax(proc, dim=-1)  # [R]: the greedy token, ties to the lowest id
        if any_sampled:
            chosen = torch.argmax(cut_scores_rows(proc, temp_div, top_k, top_p) + gumbel_from_keys(keys, vocab), dim=-1)
            tokens = torch.where(on.bool(), chosen, tokens)  # [R]
        return tokens, flags

    (tokens, flags), replayed = cache.run(p, run)
    if replayed:  # the graph's buffers: a later replay would overwrite them
        tokens, flags = tokens.clone(), flags.clone()
    return SampledRows(requests, tokens[:m], flags[:m])


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


def sample_rows(
    logits: torch.Tensor, requests: list[SampleRequest], vocab: int, cache: PassCache | None = None
) -> list[int | SamplingError]:
    """`sample_pass` and its outcomes with one host read."""
    s = sample_pass(logits, requests, vocab, cache)
    tokens, flags = read_together([s.tokens, s.flags])
    return outcomes(s, tokens, flags)
