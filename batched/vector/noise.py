"""The counter-based Gumbel noise of `reference.sampling` for many rows at once.

Row i gets `gumbel_noise(seeds[i], positions[i], vocab)`: the same keys (`noise_keys`, on the host),
the same integer hash (`_fmix32`, applied to a [m, 2, V] tensor holding both hash chains of every
row), the same 52 bits and u, and the same two logs. Integer arithmetic is exact on every device; the
logs are elementwise, and on the CPU a row's logs inside [m, V] were measured bit-equal to the same
row's logs alone (tests/test_batch_sampling.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from batched.vector import noise_kernel
from batched.vector.row_scalars import int_column
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
    uniforms come from one kernel (`batched.vector.noise_kernel`, the same bits)."""
    uniform = noise_kernel.noise_uniform if available(keys.device) else uniform_from_keys
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
