"""Per-row scalars as device columns, and division by them with the per-row path's rounding.

The per-row sampler divides a row by a Python float (`row / temperature`, `logit / repetition`).
On the CPU that is a true division; on CUDA, PyTorch computes `a * (1 / b)` for a CPU scalar
divisor, which may differ from `a / b` in the last bit. `divide_rows` divides row i by `b[i]` the
way the per-row path divides by the scalar `b[i]` on the same device.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import torch

from batched.vector.int_pack import packed
from reference.model.paged_kv import to_device


def column(values: Sequence[float], device: torch.device) -> torch.Tensor:
    """[m, 1] float64 on `device` from host floats (one copy, no host sync)."""
    host = torch.frombuffer(array("d", values), dtype=torch.float64) if values else torch.zeros(0, dtype=torch.float64)
    return to_device(host, device).view(-1, 1)


def int_column(values: Sequence[int], device: torch.device) -> torch.Tensor:
    """[m] int64 on `device` from host ints (one copy, no host sync)."""
    return to_device(packed(values), device)


def divisors(values: Sequence[float], device: torch.device) -> list[float]:
    """What `divide_by` takes to divide by `values` on `device`: the reciprocals (computed in float64
    on the host) on CUDA, the values themselves elsewhere."""
    return [1.0 / d for d in values] if device.type == "cuda" else list(values)


def divide_by(x: torch.Tensor, col: torch.Tensor) -> torch.Tensor:
    """x [m, V] float64 with row i divided by the divisor `col` [m, 1] holds for it (`divisors`),
    rounded as `x[i] / d` is when d is a Python float: true division on the CPU, multiplication by
    the reciprocal on CUDA."""
    return x * col if x.device.type == "cuda" else x / col


def divide_rows(x: torch.Tensor, values: Sequence[float]) -> torch.Tensor:
    """x [m, V] float64 with row i divided by values[i], as `divide_by` rounds it."""
    return divide_by(x, column(divisors(values, x.device), x.device))
