"""The Triton code of `batched.vector.noise` (imported only where the kernel runs: Triton resolves a
kernel's helpers among its module's globals)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fmix32(x):
    """MurmurHash3's finalizer on uint32 (multiplications wrap modulo 2**32, shifts are logical)."""
    x = x ^ (x >> 16)
    x = x * tl.full(x.shape, 0x85EBCA6B, tl.uint32)
    x = x ^ (x >> 13)
    x = x * tl.full(x.shape, 0xC2B2AE35, tl.uint32)
    return x ^ (x >> 16)


@triton.jit(do_not_specialize=["keys", "out", "vocab"])
def noise_uniform_kernel(keys, out, vocab, IDS: tl.constexpr):
    """One program: ids [block * IDS, (block + 1) * IDS) of one row; keys [m, 4] as `noise_key_rows`
    lays them out: (k0, k2, k1, k3)."""
    row = tl.program_id(0)
    ids = tl.program_id(1) * IDS + tl.arange(0, IDS)
    inside = ids < vocab
    k0 = tl.load(keys + 4 * row).to(tl.uint32)
    k2 = tl.load(keys + 4 * row + 1).to(tl.uint32)
    k1 = tl.load(keys + 4 * row + 2).to(tl.uint32)
    k3 = tl.load(keys + 4 * row + 3).to(tl.uint32)
    x = ids.to(tl.uint32)
    h1 = fmix32(fmix32(x ^ k0) ^ k1).to(tl.uint64)
    h2 = fmix32(fmix32(x ^ k2) ^ k3).to(tl.uint64)
    bits = ((h1 << 20) | (h2 >> 12)).to(tl.int64)  # 52 bits
    u = (bits * 2 + 1).to(tl.float64) * 1.1102230246251565e-16  # 2**-53, exact
    tl.store(out + row.to(tl.int64) * vocab + ids, u, mask=inside)
