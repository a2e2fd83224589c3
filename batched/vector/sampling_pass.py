"""One sampling pass for many rows: the batched form of `reference.sampling.sample_token_with_grammar`.

What the pass is asked for a bootstrap row (`sample_request`) is everything
`reference.sample_step.sample_for_seq` hands the per-row sampler (B4, B8). Every row gets exactly
what the per-row sampler gives it alone: the same refusals with the same text, in the per-row order
(its shape, a NaN logit, a +inf logit, then its parameters, known on the host: `host_error`; then what
the processed row holds: `first_error` merges the two), the processed row (`batched.vector.rows`),
then the argmax of the processed row for a greedy row (ties to the lowest id), or for a sampled row
the argmax of its cut scores plus its counter-based noise (`batched.vector.noise`). The pass issues
a fixed number of device operations whatever the row count and the parameters (one static pass of
`batched.vector.static_passes`, replayed as a CUDA graph on a GPU), reads nothing back until
`read_together` copies every result to the host at once, and never modifies the logits or a grammar.

Unlike the per-row sampler it makes no `model.argmax_on_device` call for a greedy row, and it does
not go through `reference.decisions` (it records no margins and takes no forced choice), so it can
be the implementation under test but not the reference.

A sampler with its own randomness (`OwnDraw`, the pass's keyword `noise`) replaces the
counter-based noise: the static pass then hands back the processed rows as well, and the own
sampler draws each sampled row's token from them after the pass, outside any CUDA graph (its
generators' state cannot live in one). Refusals, greedy rows and the processing stay the pass's.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from batched.vector.noise import gumbel_from_keys, noise_key_rows
from batched.vector.rows import (
    NEUTRAL,
    RowProcessing,
    cut_scores_rows,
    divisors,
    grammar_words,
    history_ids,
    masked_ids,
    penalty_columns,
    processed_rows,
)
from batched.vector.static_passes import PassCache, padded, row_bucket
from reference.grammar import GrammarState
from reference.penalties import (
    PenaltyParams,
    check_penalty_params,
)
from reference.sampling import SamplingError

NAN_ROW = "row has NaN logits"
POSINF_ROW = "row has +inf logits"
BAD_PENALTIES = "penalties produced NaN or +inf logits"
NONE_ALLOWED = "no token is allowed: banned ids, the EOS mask and the grammar mask exclude all"


def penalties_active(pen: PenaltyParams) -> bool:
    """Whether repetition, frequency or presence changes a logit (the history is read)."""
    return pen.repetition != 1.0 or pen.frequency != 0.0 or pen.presence != 0.0


def host_error(
    vocab: int,
    temperature: float,
    top_k: int,
    top_p: float,
    pen: PenaltyParams,
    history: Sequence[int],
    eos_mask: Sequence[int],
    grammar: GrammarState | None,
) -> str | None:
    """The first refusal the per-row sampler raises from a row's parameters (after its NaN and +inf
    checks), or None."""
    if not (math.isfinite(temperature) and temperature >= 0.0):
        return f"temperature {temperature} must be finite and >= 0"
    if top_k < 0:
        return f"top_k {top_k} must be >= 0 (0: off)"
    if not (math.isfinite(top_p) and 0.0 < top_p <= 1.0):
        return f"top_p {top_p} must be in (0, 1] (1: off)"
    try:
        check_penalty_params(pen, vocab)
    except ValueError as e:
        return f"penalties: {e}"
    if penalties_active(pen) and history and (min(history) < 0 or max(history) >= vocab):
        return f"penalties: history holds a token outside the vocabulary of {vocab}"
    bad = [i for i in eos_mask if not 0 <= i < vocab]
    if bad:
        return f"EOS mask ids {bad} outside the vocabulary of {vocab}"
    if grammar is not None and grammar.vocab_size != vocab:
        return f"grammar mask has {grammar.vocab_size} tokens, the row {vocab}"
    return None


def first_error(host: str | None, nan: bool, posinf: bool, bad_processed: bool, none_finite: bool) -> str | None:
    """The per-row sampler's refusal of a row from its host refusal and its device flags."""
    if nan:
        return NAN_ROW
    if posinf:
        return POSINF_ROW
    if host is not None:
        return host
    if bad_processed:
        return BAD_PENALTIES
    if none_finite:
        return NONE_ALLOWED
    return None


def read_together(tensors: Sequence[torch.Tensor]) -> list[list[float]]:
    """The values of every tensor, flattened, as host floats: one concatenation in float64 and one
    copy. Integers below 2**53 and booleans come back exact (as floats), float64 values bit for bit."""
    if not tensors:
        return []
    sizes = [t.numel() for t in tensors]
    if sum(sizes) == 0:
        return [[] for _ in tensors]
    host = torch.cat([t.reshape(-1).to(torch.float64) for t in tensors]).tolist()
    out, start = [], 0
    for size in sizes:
        out.append(host[start : start + size])
        start += size
    return out


@dataclass(slots=True, frozen=True)
class SampleRequest:
    """One row for the pass: what the per-row sampler would be given for it, and its refusal from
    the parameters alone (`batched.vector.sampling_pass.host_error`), if any."""

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


def is_sampled(r: SampleRequest) -> bool:
    """Whether the pass draws request `r`'s token (no host refusal and not greedy)."""
    return r.host_error is None and not r.greedy


# A sampler with its own randomness: from the processed rows [m, V] float64 of a pass's requests
# (request i in row i: penalties, banned ids, EOS hold and grammar applied, never to be modified),
# the token of every sampled row (`is_sampled`) as [m] int64 on the rows' device; any value in the
# other rows. Called after the pass is queued and outside any CUDA graph.
OwnDraw = Callable[[torch.Tensor, Sequence[SampleRequest]], torch.Tensor]


def _bucket(n: int) -> int:
    """The least power of two >= max(n, 1): the padded length of a variable-length id section."""
    return 1 << max(0, n - 1).bit_length()


def sample_pass(
    logits: torch.Tensor,
    requests: list[SampleRequest],
    vocab: int,
    cache: PassCache | None = None,
    *,
    noise: OwnDraw | None = None,
) -> SampledRows:
    """Launch the pass for `requests` over logits [N, V] (no host sync). It runs on `row_bucket(m)`
    rows (padding rows greedy and neutral) and id sections padded to powers of two, as one static
    pass of `cache` (a CUDA graph there once captured; a cache of its own, never a graph, if none).
    A sampled row draws with the counter-based noise, or with `noise` when given (called once, after
    the static pass, when some row is sampled)."""
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
    counter = any(sampled) and noise is None
    own = any(sampled) and noise is not None
    key = ("sample", rows, h, f, words is not None, vocab, logits.dtype, counter, own)
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

    def run() -> tuple[torch.Tensor, ...]:
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
        if counter:
            chosen = torch.argmax(cut_scores_rows(proc, temp_div, top_k, top_p) + gumbel_from_keys(keys, vocab), dim=-1)
            tokens = torch.where(on.bool(), chosen, tokens)  # [R]
        if own:  # the rows the own sampler draws from, after the pass
            return tokens, flags, proc
        return tokens, flags

    outs, replayed = cache.run(p, run)
    tokens, flags = outs[0], outs[1]
    if own and noise is not None:  # outside the graph; read before any later replay reuses its buffers
        tokens = torch.where(on[:m].bool(), noise(outs[2][:m], requests), tokens[:m])  # [m]
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
    logits: torch.Tensor,
    requests: list[SampleRequest],
    vocab: int,
    cache: PassCache | None = None,
    *,
    noise: OwnDraw | None = None,
) -> list[int | SamplingError]:
    """`sample_pass` and its outcomes with one host read."""
    s = sample_pass(logits, requests, vocab, cache, noise=noise)
    tokens, flags = read_together([s.tokens, s.flags])
    return outcomes(s, tokens, flags)
