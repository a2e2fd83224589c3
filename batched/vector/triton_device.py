"""Where the Triton kernels of the fully batched step (`batched.vector.attention`,
`batched.vector.noise`) can run."""

from __future__ import annotations

import torch


def available(device: torch.device) -> bool:
    """Whether a Triton kernel can run on `device`: a CUDA device and Triton importable."""
    if device.type != "cuda":
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True
