"""Reading several device results back with one device-to-host copy."""

from __future__ import annotations

from collections.abc import Sequence

import torch


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
