"""The fully batched step with FlashInfer's top-k/top-p sampling kernels as its sampler (a CUDA device
and the `flashinfer` extra; measured with flashinfer-python 0.5.3).

The rows are the vector step's own processed rows (penalties, banned ids, the EOS hold and the
grammar applied by its sampling pass); greedy rows and refusals stay the pass's. A sampled row's
probabilities are softmax((row - max(row)) / T) in float32, and its token is drawn by
`flashinfer.sampling.top_k_top_p_sampling_from_probs` with `filter_apply_order="top_k_first"` (top-k,
then top-p over the mass top-k kept, the order the reference cuts in) and `deterministic=True`.

Seeds, in two variants:
- `flashinfer` (`step_flashinfer`): one kernel call per sampled row, with a torch generator seeded
  from its request's `generator_seed(seed, position)`; a row is then alone in its call, so its token
  depends on its own row, seed and output position only.
- `flashinfer-batch` (`step_flashinfer_batch`): one kernel call for every sampled row, as an engine
  makes it, with one generator seeded from the first sampled request. The kernel takes each row's
  Philox subsequence from its index in the batch (0.7's per-row seed and offset tensors are read at
  element 0 only), so a request's token depends on its batch position: the suite's seed-invariance
  checks report it.

FlashInfer is imported on first use: importing this module needs neither it nor CUDA; running the
step or the row sampler without them raises a RuntimeError that names what is missing.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType

import torch

from batched.vector import step as vector_step
from batched.vector.own_noise import generator_seed
from batched.vector.requests import sample_row_requests
from batched.vector.rows import column, divide_by, divisors
from batched.vector.sampling_pass import SampleRequest, is_sampled
from batched.vector.step import step_with_noise
from reference.row_request import RowRequest
from reference.sampling import SamplingError

NOISE = "own"
# The model the step runs on (`properties.impl` reads it from this module): the vector step's.
prepare_model = vector_step.prepare_model
# As `batched.vector.step`: greedy rows the batched argmax does not serve are argmaxed in the pass.
PER_ROW_FAST_GREEDY_CALLS = False

EXTRA = "flashinfer-python (the project's `flashinfer` extra)"


@functools.cache
def _kernels() -> ModuleType:
    """`flashinfer.sampling`; RuntimeError when CUDA or FlashInfer is missing."""
    if not torch.cuda.is_available():
        raise RuntimeError("the flashinfer sampler needs a CUDA device: torch sees none")
    try:
        import flashinfer.sampling as sampling  # optional: GPU only
    except ImportError as e:
        raise RuntimeError(f"the flashinfer sampler needs FlashInfer, which is not installed: {EXTRA}") from e
    return sampling


def require() -> None:
    """Raise the RuntimeError `_kernels` raises when the sampler cannot run here."""
    _kernels()


def probabilities(proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
    """[m, V] float32: softmax((row - max(row)) / T) of each sampled row of proc [m, V] float64; a
    uniform row for the others and for rows the pass refuses (a NaN or +inf, no finite score), so
    that no kernel sees a NaN."""
    dev, vocab = proc.device, proc.shape[1]
    temps = [r.temperature if is_sampled(r) else 1.0 for r in requests]
    scores = divide_by(proc - proc.amax(-1, keepdim=True), column(divisors(temps, dev), dev))  # [m, V]
    probs = torch.softmax(scores.to(torch.float32), dim=-1)
    usable = torch.isfinite(proc).any(-1) & ~(proc.isnan() | proc.isposinf()).any(-1)  # [m]
    usable &= torch.tensor([is_sampled(r) for r in requests], dtype=torch.bool, device=dev)
    return torch.where(usable[:, None], probs, 1.0 / vocab)


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _kernel_call(probs: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """FlashInfer's top-k-first top-k/top-p draw of each row of probs [r, V] float32 (top_k [r] int32,
    0 or V: off; top_p [r] float32)."""
    return _kernels().top_k_top_p_sampling_from_probs(
        probs, top_k, top_p, filter_apply_order="top_k_first", deterministic=True, generator=gen
    )


def _cut_parameters(requests: Sequence[SampleRequest], vocab: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    ks = [r.top_k if 0 < r.top_k < vocab else vocab for r in requests]  # 0: off
    return (
        torch.tensor(ks, dtype=torch.int32, device=device),
        torch.tensor([r.top_p for r in requests], dtype=torch.float32, device=device),
    )


def _sampled_rows(proc: torch.Tensor, requests: Sequence[SampleRequest]) -> tuple[torch.Tensor, list[int]]:
    if proc.device.type != "cuda":
        raise RuntimeError(f"the flashinfer sampler needs the rows on a CUDA device, not {proc.device}")
    _kernels()
    return probabilities(proc, requests), [i for i, r in enumerate(requests) if is_sampled(r)]


def flashinfer_draw(proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
    """An `OwnDraw`: [m] int64, each sampled row's token from FlashInfer's top-k-first kernel, one
    call per row with a generator seeded from its request's `generator_seed` (module docstring); 0
    in other rows."""
    probs, rows = _sampled_rows(proc, requests)  # [m, V] float32
    tokens = torch.zeros(len(requests), dtype=torch.int64, device=proc.device)
    top_k, top_p = _cut_parameters(requests, proc.shape[1], proc.device)
    for i in rows:
        r = requests[i]
        gen = _generator(proc.device, generator_seed(r.seed, r.position))
        tokens[i] = _kernel_call(probs[i : i + 1], top_k[i : i + 1], top_p[i : i + 1], gen)[0].to(torch.int64)
    return tokens


def flashinfer_batch_draw(proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
    """An `OwnDraw`: one kernel call for every sampled row with one generator, seeded from the first
    sampled request (module docstring); 0 in other rows."""
    probs, rows = _sampled_rows(proc, requests)
    tokens = torch.zeros(len(requests), dtype=torch.int64, device=proc.device)
    if not rows:
        return tokens
    first = requests[rows[0]]
    top_k, top_p = _cut_parameters([requests[i] for i in rows], proc.shape[1], proc.device)
    idx = torch.tensor(rows, dtype=torch.int64, device=proc.device)
    drawn = _kernel_call(probs[idx], top_k, top_p, _generator(proc.device, generator_seed(first.seed, first.position)))
    tokens[idx] = drawn.to(torch.int64)
    return tokens


step_flashinfer = step_with_noise(
    flashinfer_draw,
    "step_flashinfer",
    "The fully batched step, its sampled rows drawn by FlashInfer's kernels, one call per row. RuntimeError, "
    "before anything runs, without CUDA or FlashInfer.",
    require,
)
step_flashinfer_batch = step_with_noise(
    flashinfer_batch_draw,
    "step_flashinfer_batch",
    "The fully batched step, its sampled rows drawn by one FlashInfer kernel call with one generator.",
    require,
)


def sample_rows_batch(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
    """`step_flashinfer_batch`'s sampler as a `reference.row_request.RowSampler`."""
    require()
    return sample_row_requests(logits, requests, flashinfer_batch_draw)


def sample_rows(logits: torch.Tensor, requests: Sequence[RowRequest]) -> list[int | SamplingError]:
    """`step_flashinfer`'s sampler as a `reference.row_request.RowSampler` (logits [m, V] on CUDA).
    RuntimeError without CUDA or FlashInfer."""
    require()
    return sample_row_requests(logits, requests, flashinfer_draw)


# The distribution oracle's sampler when the step is named as module:function.
ROW_SAMPLER = sample_rows
