"""The counter-based Gumbel noise of `reference.sampling` for many rows at once.

Row i gets `gumbel_noise(seeds[i], positions[i], vocab)`: the same keys (`noise_keys`, on the host),
the same integer hash applied to a [m, 2, V] tensor holding both hash chains of every row, the same
52 bits and u, and the same two logs. Integer arithmetic is exact on every device; the logs are
elementwise, and on the CPU a row's logs inside [m, V] were measured bit-equal to the same row's logs
alone (tests/test_batch_sampling.py).

On a GPU the uniforms come from one Triton kernel (`batched.vector.noise_triton`) instead of about
fifty elementwise operations over [m, 2, V] (0.17 ms of a sampling pass at 16 rows of 32768 ids on
the H200): the same hash in 32-bit unsigned arithmetic (which wraps modulo 2**32, as `_mul32` does
by hand) and the same exact conversion to u, so every bit equals the tensor version's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

from batched.vector.rows import int_column
from batched.vector.triton_device import available
from reference.sampling import _fmix32, noise_keys


def noise_key_rows(seeds: Sequence[int], positions: Sequence[int]) -> list[int]:
    """Four keys per row, laid out as `gumbel_from_keys` reads them: (k0, k2, k1, k3) of
    `noise_keys(seeds[i], positions[i])`."""
    flat: list[int] = []
    for seed, pos in zip(seeds, positions, strict=True):
        k0, k1, k2, k3 = noise_keys(seed, pos)
        flat += (k0, k2, k1, k3)
    return flat


def gumbel_from_keys(keys: torch.Tensor, vocab: int) -> torch.Tensor:
    """[m, V] float64 standard Gumbel noise from keys [4 m] int64 (`noise_key_rows`). On a GPU the
    uniforms come from one kernel (`batched.vector.noise`, the same bits)."""
    uniform = noise_uniform if available(keys.device) else uniform_from_keys
    return -torch.log(-torch.log(uniform(keys, vocab)))


def uniform_from_keys(keys: torch.Tensor, vocab: int) -> torch.Tensor:
    """[m, V] float64 u = (2 * bits + 1) / 2**53 of every row, in tensor arithmetic."""
    keys = keys.view(-1, 2, 2, 1)  # [m, (first, second key), (chain 1, chain 2), 1]
    ids = torch.arange(vocab, dtype=torch.int64, device=keys.device)  # [V]
    h = _fmix32(_fmix32(ids ^ keys[:, 0]) ^ keys[:, 1])  # [m, 2, V]: (h1, h2) of every row
    bits = (h[:, 0] << 20) | (h[:, 1] >> 12)  # [m, V], 52 bits
    return (bits * 2 + 1).to(torch.float64) * 2.0**-53


def gumbel_rows(seeds: Sequence[int], positions: Sequence[int], vocab: int, device: torch.device) -> torch.Tensor:
    """[m, V] float64 standard Gumbel noise, row i a pure function of (seeds[i], positions[i], id)."""
    return gumbel_from_keys(int_column(noise_key_rows(seeds, positions), device), vocab)


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
