"""Tolerances of fast numerics, per dtype. Exact numerics compare bit for bit.

The same number computed by two kernels (a batched pass against one row at a time) may differ by
rounding, and rounding error scales with the operands, not with the result: a logit near zero that
came out of a dot product of large terms carries the rounding of those terms. So a value is held to
a tolerance relative to the largest magnitude of the unit it belongs to (the last dimension: a logits
row, one head's key or value vector, an SSM state row): `ROUNDING[dtype]` times that magnitude, a few
units in the last place of it (bf16: 2-4, float32: 16-32, float64: 32-64). The measured drift
(docs/numerics.md) stays well inside. Non-finite values must match exactly (NaN with NaN, inf with
inf of the same sign).
"""

from __future__ import annotations

import torch

ROUNDING: dict[str, float] = {"bfloat16": 2.0**-6, "float32": 2.0**-19, "float64": 2.0**-47}
# Values an oracle recomputes from the same row in another kernel (draft confidences in float32,
# logprobs in float64): the rounding of that computation alone.
COMPUTE_ROUNDING: dict[torch.dtype, float] = {torch.float32: 2.0**-19, torch.float64: 2.0**-47}


def rounding(dtype: str, exact: bool) -> float:
    """The relative tolerance of values in `dtype`: 0 in exact numerics."""
    return 0.0 if exact else ROUNDING[dtype]


def unit_scale(ref: torch.Tensor) -> torch.Tensor:
    """The largest finite magnitude of each unit (last dimension) of `ref`, kept as a trailing dim."""
    r = ref.detach().double()
    mag = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
    return mag.amax(dim=-1, keepdim=True) if r.dim() else mag


def differing(ref: torch.Tensor, impl: torch.Tensor, rtol: float) -> torch.Tensor:
    """Bool mask of the elements of `impl` outside the tolerance of `ref` (same shape): bitwise
    where rtol = 0; else finite values within rtol times their unit's scale, non-finite equal."""
    if rtol == 0:
        return _bits(ref) != _bits(impl)
    r = ref.detach().double()
    m = impl.detach().double().to(r.device)
    finite = torch.isfinite(r) & torch.isfinite(m)
    close = (r - m).abs() <= rtol * unit_scale(r)
    same_special = (r.isnan() & m.isnan()) | (~torch.isfinite(r) & (r == m))
    return ~torch.where(finite, close, same_special)


def row_difference(ref: torch.Tensor, impl: torch.Tensor) -> float:
    """The largest absolute difference of two rows over entries finite in both; inf when their
    non-finite entries differ."""
    r, m = ref.detach().double(), impl.detach().double().to(ref.device)
    finite = torch.isfinite(r) & torch.isfinite(m)
    same_special = (r.isnan() & m.isnan()) | (~torch.isfinite(r) & (r == m))
    if not bool((finite | same_special).all()):
        return float("inf")
    return float((r - m)[finite].abs().max()) if bool(finite.any()) else 0.0


def _bits(t: torch.Tensor) -> torch.Tensor:
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()]
    return t.detach().contiguous().view(as_int)
