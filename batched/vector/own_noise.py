"""The fully batched step with samplers of their own randomness: an exponential race on torch generators.

A sampled row's token is the argmax, over the tokens its cut keeps, of (kept score - log E) with
E ~ Exp(1) drawn per token (`Tensor.exponential_`). -log E is standard Gumbel noise, so the token
follows the softmax of the kept scores: the reference's distribution
(`reference.row_request.distribution`), drawn with noise the reference cannot reproduce. The cut
(`cut_rows`: temperature, top-k, then top-p over the mass top-k kept) is this sampler's own, with
the reference's arithmetic, so that it keeps exactly the tokens `reference.row_request.support` keeps.
The race runs after the sampling pass, outside any CUDA graph (`batched.vector.sampling_pass.OwnDraw`);
the processing, greedy rows and refusals are the pass's.

Two noise sources:
- `per_request_noise` (`vector-torch`): one `torch.Generator` per sampled request on the rows' device,
  seeded from the request's (seed, output position) (`generator_seed`): a request's token depends on
  its own row, seed and position only, never on its batch.
- `one_generator_noise` (`vector-torch-batch`): one generator for the whole pass, seeded from the first
  sampled request, drawing [m, V] at once, as an engine does for an unseeded batch: a request's token
  depends on its batch position and on the batch's first sampled request.

The steps are `batched.vector.step` with the noise threaded down to its sampling pass; the row
samplers run the same pass on `RowRequest`s, so a step and its row sampler give the same tokens for
the same rows and requests. Each step is loaded through its registry name (`properties.impl`), which
names its row sampler: this module hosts two, so it declares none of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from batched.vector import step as vector_step
from batched.vector.requests import sample_row_requests
from batched.vector.rows import NEG_INF, column, divide_by, divisors, int_column
from batched.vector.sampling_pass import SampleRequest, is_sampled
from batched.vector.step import step_with_noise
from reference.row_request import RowRequest
from reference.sampling import SamplingError

NOISE = "own"
# The model the steps run on (`properties.impl` reads it from the registry entry's module): the vector step's.
prepare_model = vector_step.prepare_model
# As `batched.vector.step`: greedy rows the batched argmax does not serve are argmaxed in the pass.
PER_ROW_FAST_GREEDY_CALLS = False

_M64 = (1 << 64) - 1
_SALT = 0x6F776E5F6E6F6973  # keeps these streams apart from the reference's noise keys of the same seed
_TINY = torch.finfo(torch.float64).tiny


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def generator_seed(seed: int, position: int) -> int:
    """The 63-bit non-negative generator seed of a request's draw at output `position` (the seed
    taken modulo 2**64): a pure function of the pair, distinct pairs as good as unrelated."""
    return _splitmix64(_splitmix64((seed ^ _SALT) & _M64) ^ (position & _M64)) >> 1


def _neg_log_exponential(shape: tuple[int, ...], g: torch.Generator, device: torch.device) -> torch.Tensor:
    """-log E, E ~ Exp(1) float64 of `shape` from `g` (standard Gumbel noise)."""
    e = torch.empty(shape, dtype=torch.float64, device=device).exponential_(generator=g)
    return -torch.log(e.clamp_(min=_TINY))  # an exact 0 would give +inf, and +inf - inf a NaN


# A noise source: -log E [m, V] float64 on `device` for the requests of a pass (request i in row i);
# the rows of requests that are not sampled may hold anything.
NoiseSource = Callable[[Sequence[SampleRequest], int, torch.device], torch.Tensor]


def per_request_noise(requests: Sequence[SampleRequest], vocab: int, device: torch.device) -> torch.Tensor:
    """[m, V]: row i from a generator of its own seeded with `generator_seed(seed, position)` of
    request i when it is sampled (zeros otherwise): a function of that pair and V only."""
    out = torch.zeros(len(requests), vocab, dtype=torch.float64, device=device)
    for i, r in enumerate(requests):
        if is_sampled(r):
            g = torch.Generator(device=device)
            g.manual_seed(generator_seed(r.seed, r.position))
            out[i] = _neg_log_exponential((vocab,), g, device)
    return out


def one_generator_noise(requests: Sequence[SampleRequest], vocab: int, device: torch.device) -> torch.Tensor:
    """[m, V] drawn at once from one generator seeded from the first sampled request's seed and
    position (zeros when no request is sampled)."""
    first = next((r for r in requests if is_sampled(r)), None)
    if first is None:
        return torch.zeros(len(requests), vocab, dtype=torch.float64, device=device)
    g = torch.Generator(device=device)
    g.manual_seed(generator_seed(first.seed, first.position))
    return _neg_log_exponential((len(requests), vocab), g, device)


def cut_rows(proc: torch.Tensor, temp_div: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """[m, V] float64: row i's temperature-scaled scores (row - max(row)) / T where top-k and then
    top-p keep the token, -inf elsewhere; the kept set and scores bit-equal to
    `reference.sampling.cut_scores` on the row alone. proc [m, V] float64 holds the processed rows,
    temp_div [m, 1] the temperatures as `batched.vector.rows.divisors` gives them, k [m] int64 the
    top-k (0: off), p [m, 1] float64 the top-p (1: off); every parameter valid (T > 0)."""
    vocab = proc.shape[1]
    n_finite = torch.isfinite(proc).sum(-1)  # [m]
    keep = torch.where((k > 0) & (k < n_finite), k, n_finite)  # [m]: what top-k keeps
    scores = divide_by(proc - proc.amax(-1, keepdim=True), temp_div)  # [m, V]
    order = torch.sort(proc, dim=-1, descending=True, stable=True).indices  # [m, V], best first (ties: lowest id)
    rank = torch.arange(vocab, device=proc.device)  # [V]
    in_top_k = rank < keep[:, None]  # [m, V] in rank order
    ranked = scores.gather(-1, order)  # [m, V]: the tempered scores, best first
    mass = torch.softmax(torch.where(in_top_k, ranked, NEG_INF), dim=-1)  # renormalised over the top-k
    below = ((torch.cumsum(mass, dim=-1) < p) & in_top_k).sum(-1)  # [m]: tokens before the mass reaches p
    n_top_p = torch.minimum(below + 1, keep)  # the smallest prefix whose mass reaches p
    keep = torch.where((p[:, 0] < 1.0) & (keep > 1), n_top_p, keep)
    kept = torch.zeros_like(in_top_k).scatter_(-1, order, rank < keep[:, None])  # [m, V] by token id
    return torch.where(kept, scores, NEG_INF)


@dataclass(slots=True, frozen=True)
class TorchRace:
    """An `OwnDraw`: the exponential race over `cut_rows` with the noise `source` draws."""

    source: NoiseSource

    def __call__(self, proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
        """[m] int64: each sampled row's argmax of its kept scores plus its noise (other rows: any)."""
        return torch.argmax(kept_scores(proc, requests) + self.source(requests, proc.shape[1], proc.device), dim=-1)


def kept_scores(proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
    """[m, V]: each sampled row's tempered scores inside its top-k / top-p cut, -inf outside; an
    unsampled row's scores untouched (temperature 1, no cut)."""
    dev = proc.device
    on = [is_sampled(r) for r in requests]
    temps = [r.temperature if s else 1.0 for r, s in zip(requests, on, strict=True)]
    ks = [r.top_k if s else 0 for r, s in zip(requests, on, strict=True)]
    ps = [r.top_p if s else 1.0 for r, s in zip(requests, on, strict=True)]
    return cut_rows(proc, column(divisors(temps, dev), dev), int_column(ks, dev), column(ps, dev))


TORCH_GENERATORS = TorchRace(per_request_noise)
ONE_GENERATOR = TorchRace(one_generator_noise)


step_torch_generators = step_with_noise(
    TORCH_GENERATORS,
    "step_torch_generators",
    "The fully batched step, its sampled rows drawn with one generator per request.",
)
step_one_generator = step_with_noise(
    ONE_GENERATOR, "step_one_generator", "The fully batched step, its sampled rows drawn from one generator per pass."
)


def sample_rows_torch_generators(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
    """`step_torch_generators`'s sampler as a `reference.row_request.RowSampler` (logits [m, V])."""
    return sample_row_requests(logits, requests, TORCH_GENERATORS)


def sample_rows_one_generator(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
    """`step_one_generator`'s sampler as a `reference.row_request.RowSampler` (logits [m, V])."""
    return sample_row_requests(logits, requests, ONE_GENERATOR)
