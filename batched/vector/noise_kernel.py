"""The uniforms of the counter-based noise (`batched.vector.noise`) in one Triton kernel on a GPU.

`gumbel_from_keys` hashes every (row, id) through two chains of MurmurHash3's 32-bit finalizer in
int64 tensor arithmetic: about fifty elementwise device operations over [m, 2, V], which took about
0.17 ms of a sampling pass at 16 rows of 32768 ids on the H200. This kernel does the same integer
hash in 32-bit unsigned arithmetic (which wraps modulo 2**32, as `_mul32` does by hand) and the same
exact conversion to u = (2 * bits + 1) / 2**53, one pass writing [m, V] float64. Every bit equals the
tensor version's: integer arithmetic and a conversion of integers below 2**53 are exact.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

IDS_PER_PROGRAM = 1024


@functools.cache
def _kernel() -> Any:
    """The Triton kernel, compiled on first use (Triton is imported only where it runs)."""
    from batched.vector.noise_triton import noise_uniform_kernel

    return noise_uniform_kernel


def noise_uniform(keys: torch.Tensor, vocab: int) -> torch.Tensor:
    """[m, V] float64 u = (2 * bits + 1) / 2**53 from keys [4 m] int64 (`noise_key_rows`), the bits
    of `batched.vector.noise.gumbel_from_keys`."""
    if keys.dtype != torch.int64 or keys.dim() != 1 or keys.numel() % 4:
        raise ValueError(f"noise_uniform: keys {keys.dtype} {tuple(keys.shape)} are not 4 int64 per row")
    m = keys.numel() // 4
    out = torch.empty(m, vocab, dtype=torch.float64, device=keys.device)
    if m:
        _kernel()[(m, -(-vocab // IDS_PER_PROGRAM))](keys.contiguous(), out, vocab, IDS=IDS_PER_PROGRAM)
    return out


def warm(device: torch.device, vocab: int) -> None:
    """Compile and load the kernel by running it once: a CUDA graph capture must not be the first call."""
    noise_uniform(torch.zeros(4, dtype=torch.int64, device=device), vocab)
    torch.cuda.synchronize(device)
