"""Many draws of one row through a sampler, and two correct samplers to draw from.

`draw` measures a sampler's batched path: one call with the row repeated n times, each copy with its
own seed. `reference_row_sampler` is the reference's own sampler (counter-based Gumbel noise, a pure
function of seed, position and token id): over n seeds its tokens are a sample of the row's
distribution, so it is what a coupled implementation's tokens are checked with, and a sampler on
which the oracle must not raise an alarm. `inverse_cdf_sampler` is a correct sampler with other
randomness than the reference's (an inverse CDF over given probabilities), the stand-in for one with
its own noise. `check_row` is the distribution oracle on one row: the draws tested against the
reference's exact distribution (`properties.sampling.statistics`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields, replace

import torch

from properties.sampling.statistics import Bins, GofResult, goodness_of_fit, token_counts
from reference.row_request import RowRequest, RowSampler, distribution, kept_scores
from reference.sampling import SamplingError, keyed_bits, noise_keys

# The reference's Gumbel noise is -log(-log(u)) with u = (2 * bits + 1) / 2**53, so it lies in
# [G_MIN, G_MAX]: a kept token more than their span below the best can never win the argmax.
_U_MIN = 2.0**-53
G_MIN = -math.log(-math.log(_U_MIN))
G_MAX = -math.log(-math.log1p(-_U_MIN))
NEVER_WINS = G_MAX - G_MIN + 1.0  # one logit of room for the rounding of the two logs
ROW_DRAWS = 2000  # draws of one row by the single-row measurements (`power`, `false_alarms`)
CHUNK_ELEMENTS = 1 << 22  # noise values computed at once (seeds x candidates)
UNIFORM_ID = 0x5EED  # the token id whose counter-based bits give an inverse-CDF draw its uniform


def repeated(row: torch.Tensor, req: RowRequest, n: int, seed_base: int) -> tuple[torch.Tensor, list[RowRequest]]:
    """Logits [n, V] (`row` [V] n times) and n copies of `req` with seeds seed_base .. seed_base + n - 1,
    each for the same output position."""
    if n < 1:
        raise ValueError(f"n {n} must be >= 1")
    return row.unsqueeze(0).expand(n, -1).contiguous(), [replace(req, seed=seed_base + i) for i in range(n)]


def draw(sampler: RowSampler, row: torch.Tensor, req: RowRequest, n: int, seed_base: int) -> torch.Tensor:
    """Int64 [n] (on the CPU): the tokens `sampler` gives in ONE call for `row` [V] repeated n times, the
    i-th copy with seed seed_base + i (`repeated`). Raises the first refusal (a `SamplingError`) the
    sampler returns, and a ValueError when it answers with anything but n token ids."""
    logits, requests = repeated(row, req, n, seed_base)
    out = sampler(logits, requests)
    if len(out) != n:
        raise ValueError(f"the sampler returned {len(out)} results for {n} rows")
    for i, tok in enumerate(out):
        if isinstance(tok, SamplingError):
            raise SamplingError(f"the sampler refused copy {i} (seed {seed_base + i}) of the row: {tok}") from tok
        if isinstance(tok, bool) or not isinstance(tok, int):
            raise ValueError(f"the sampler returned {tok!r} ({type(tok).__name__}) for copy {i}, expected a token id")
    return torch.tensor(out, dtype=torch.int64)


def check_row(
    sampler: RowSampler,
    row: torch.Tensor,
    req: RowRequest,
    n: int,
    seed_base: int,
    probs: torch.Tensor | None = None,
    bins: Bins | None = None,
) -> GofResult:
    """The distribution oracle on one row: n draws of `row` through `sampler` (`draw`) tested against
    the reference's exact distribution of the row (`probs`, and its `bins` for n draws, when computed
    already). Raises what `draw` raises."""
    probs = distribution(row, req) if probs is None else probs
    tokens = draw(sampler, row, req, n, seed_base)
    return goodness_of_fit(token_counts(tokens, probs.shape[0]), probs, bins)


_BUT_SEED = tuple(f.name for f in fields(RowRequest) if f.name != "seed")


def same_but_seed(a: RowRequest, b: RowRequest) -> bool:
    """Whether two requests are equal but for their seeds (fields shared by identity compare fast)."""
    for name in _BUT_SEED:
        x, y = getattr(a, name), getattr(b, name)
        if x is not y and x != y:
            return False
    return True


def same_rows(logits: torch.Tensor, requests: Sequence[RowRequest]) -> Iterator[tuple[int, int]]:
    """(start, stop) of each run of consecutive rows that have equal logits and requests equal but for
    their seeds: the rows whose kept scores a sampler computes once."""
    m = logits.shape[0]
    equal = ((logits[1:] == logits[:-1]).all(dim=1)).tolist() if m > 1 else []
    start = 0
    for i in range(1, m):
        if not (equal[i - 1] and same_but_seed(requests[i], requests[start])):
            yield start, i
            start = i
    if m:
        yield start, m


def seed_keys(requests: Sequence[RowRequest], device: torch.device) -> tuple[torch.Tensor, ...]:
    """The reference's four noise keys of each request's (seed, position), as int64 [g, 1] tensors."""
    keys = torch.tensor([noise_keys(r.seed, r.position) for r in requests], dtype=torch.int64, device=device)
    return tuple(keys.T.unsqueeze(-1))


def _uniform(bits: torch.Tensor) -> torch.Tensor:
    return (bits * 2 + 1).to(torch.float64) * 2.0**-53


def reference_row_sampler(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
    """The reference's token for each row: the argmax of its kept scores plus the Gumbel noise of its
    (seed, position) (`reference.sampling.sample_token_with_grammar`; with no decision log installed,
    a greedy row's argmax). Noise is computed only for candidates that can win, which changes no token."""
    out: list[int | SamplingError] = []
    for start, stop in same_rows(logits, requests):
        try:
            scores = kept_scores(logits[start], requests[start])
        except SamplingError as e:
            out += [e] * (stop - start)
            continue
        best = scores.max()
        ids = torch.nonzero(scores >= best - NEVER_WINS).flatten()
        if ids.numel() == 1:
            out += [int(ids[0])] * (stop - start)
            continue
        cand = scores[ids]
        chunk = max(1, CHUNK_ELEMENTS // ids.numel())
        for lo in range(start, stop, chunk):
            keys = seed_keys(requests[lo : min(stop, lo + chunk)], logits.device)
            noise = -torch.log(-torch.log(_uniform(keyed_bits(keys, ids.unsqueeze(0)))))
            out += ids[torch.argmax(cand + noise, dim=1)].tolist()
    return out


Probabilities = Callable[[torch.Tensor, RowRequest], torch.Tensor]


def inverse_cdf_sampler(probabilities: Probabilities = distribution) -> RowSampler:
    """A correct sampler of `probabilities(row, req)` (float64 [V]; default the reference's exact
    distribution), independent of the reference's Gumbel noise: each row's uniform comes from the
    counter-based bits of its own (seed, position) at one fixed id, and its token is the inverse CDF
    there. It never returns a token of probability 0; refusals are what `probabilities` raises."""

    def sample(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
        out: list[int | SamplingError] = []
        for start, stop in same_rows(logits, requests):
            try:
                p = probabilities(logits[start], requests[start]).to(torch.float64)
            except SamplingError as e:
                out += [e] * (stop - start)
                continue
            cdf = torch.cumsum(p, dim=0)
            last = int(torch.nonzero(p > 0).flatten()[-1])
            keys = seed_keys(requests[start:stop], logits.device)
            u = _uniform(keyed_bits(keys, torch.tensor([[UNIFORM_ID]], device=logits.device))).flatten()
            tokens = torch.searchsorted(cdf, u * cdf[-1], right=True).clamp_max(last)
            out += tokens.tolist()
        return out

    return sample
