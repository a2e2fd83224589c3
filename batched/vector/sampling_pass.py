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
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
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
    PositionKind,
    check_penalty_params,
    penalty_history_scope,
    penalty_params_for,
)
from reference.sampling import SamplingError
from reference.sched_ctx import SamplingConfig
from reference.state import ActiveSeq

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


def sample_request(
    a: ActiveSeq, row: int, held: bool, min_reasoning_floor: int, sampling: SamplingConfig, vocab: int
) -> SampleRequest:
    """Row `row` of the logits for `a`: its verify penalties (with the reasoning-floor ban) over the
    history after its last tool-call end, its EOS ids while `held`, its grammar, temperature, cuts,
    and its noise at its next output position."""
    pen = penalty_params_for(a, PositionKind.VERIFY, min_reasoning_floor)
    history = penalty_history_scope(a.output_tokens, a.tool_call_end_token) if penalties_active(pen) else []
    eos_mask = tuple(a.eos_ids) if held else ()
    return SampleRequest(
        row=row,
        temperature=a.temperature,
        top_k=a.top_k,
        top_p=a.top_p,
        greedy=a.temperature == 0.0 or sampling.force_temp_zero,
        processing=RowProcessing(pen, history, eos_mask, a.grammar_state),
        seed=a.sampling_seed,
        position=len(a.output_tokens),
        host_error=host_error(vocab, a.temperature, a.top_k, a.top_p, pen, history, eos_mask, a.grammar_state),
    )
