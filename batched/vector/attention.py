"""Decode attention that reads the paged KV cache in place: a Triton kernel for fast numerics on a GPU.

The gather-then-attend path (`PagedKv.gather`, then `kernels.attention`) copies every row's whole
span out of the cache and reads the copy again: on the H200 at n = 64 that copy and its read took
1.1 ms of the 1.8 ms a step kept the device busy. This kernel walks each row's block table and
reads each block once, up to the row's own length, `TILE_TOKENS` positions per step of its loop,
with an online softmax in float32. Each row and head is split into chunks of its span
(`split_count`), one program each, and a second small kernel rescales the chunks' partial results
to their common maximum and sums them (split-sequence or "flash-decoding" attention). A program
loads the next tile and the block ids of the one after while it computes the current tile
(`PREFETCH`: Triton does not pipeline a loop whose loads depend on loaded block ids). Its loads are
masked at the row's length (and chunk): nothing at or past it is read, whatever it holds.

It is another kernel, so its bits are not the gather path's: it serves fast numerics only, where
the replay oracle judges rounding. `paged_read` is the `RowMeta.read` that plugs it into a pass;
`batched.vector.triton_device.available(device)` says whether it can run there (CUDA and Triton present).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from reference.model.paged_kv import PagedKv, RowMeta

# Positions a program reads per step of its loop (a power of two; at least one cache block), and the
# warps of a program. Measured on the H200 at 64 rows of 512 positions, 16 heads of 128 in bf16
# (`python -m benchmarks.profile --mode kernel`): one 16-position block per step with 4 warps took 183 us a call; 32
# positions 209 us, 64 positions 254 us, 128 positions 553 us (wider tiles spill registers). With
# the rows split into chunks, 2 warps took 150-155 us against 205 us with 4; loading ahead (below)
# with 1 warp took 126 us, and 473-484 us against 560-570 us at 256 rows. So a step reads one
# block, with 1 warp, loading ahead.
TILE_TOKENS = 16
WARPS = 1
# Programs a call aims for (each row and head split into chunks of its span until there are this
# many): with one program per row and head, small batches leave most of the device idle. At 64 rows
# the chunks gained at most a fifth (2 warps: 187 us with one chunk, 150-155 us with 2 to 16).
TARGET_PROGRAMS = 4096
# Whether a program loads the next tile (and the block ids of the one after) while it computes this
# one. Either way every output bit is the same: the same operations on the same values, in order.
# With 2 or 4 warps it gained nothing or lost; with 1 warp it gained a sixth over the best of them.
PREFETCH = True


@functools.cache
def _kernels() -> tuple[Any, Any]:
    """The Triton kernels, compiled on first use (Triton is imported only where it runs)."""
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["tables", "lengths", "stride", "chunk", "q", "out", "k", "v", "part"])
    def paged_decode(q, k, v, tables, lengths, out, part, stride, scale, chunk,
                     HEADS: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr,
                     SPLITS: tl.constexpr, PREFETCH: tl.constexpr):  # fmt: skip
        # One program: one row, one head, positions [split * chunk, (split + 1) * chunk) of the row's
        # length (chunk a multiple of TILE). SPLITS == 1 writes the output; else the unnormalised
        # accumulator and (max, sum) to `part` [rows, HEADS, SPLITS, DIM + 2] for `combine_splits`.
        row = tl.program_id(0)
        head = tl.program_id(1)
        split = tl.program_id(2)
        length = tl.load(lengths + row)
        d = tl.arange(0, DIM)
        t = tl.arange(0, TILE)  # a tile spans TILE // BLOCK cache blocks
        qv = tl.load(q + (row * HEADS + head) * DIM + d).to(tl.float32)  # [DIM]
        acc = tl.zeros([DIM], dtype=tl.float32)
        m_i = tl.full([], -float("inf"), tl.float32)
        l_i = tl.full([], 0.0, tl.float32)
        start = split * chunk
        stop = tl.minimum(start + chunk, length)
        row_table = tables + row * stride
        if PREFETCH:
            # Software pipelining by hand: while a step computes tile j, the loads of tile j + 1 (its
            # keys and values) and the block ids of tile j + 2 are already in flight, so no step waits
            # on the chain block id -> block that the compiler does not pipeline.
            pos0 = start + t
            valid0 = pos0 < stop
            block0 = tl.load(row_table + pos0 // BLOCK, mask=valid0, other=0)
            at0 = ((block0 * BLOCK + pos0 % BLOCK)[:, None] * HEADS + head) * DIM + d[None, :]
            kb = tl.load(k + at0, mask=valid0[:, None], other=0.0)
            vb = tl.load(v + at0, mask=valid0[:, None], other=0.0)
            block1 = tl.load(row_table + (pos0 + TILE) // BLOCK, mask=pos0 + TILE < stop, other=0)
            for j in range(start, stop, TILE):
                pos = j + t  # [TILE]
                valid = pos < stop
                valid1 = pos + TILE < stop
                at1 = ((block1 * BLOCK + (pos + TILE) % BLOCK)[:, None] * HEADS + head) * DIM + d[None, :]
                kb1 = tl.load(k + at1, mask=valid1[:, None], other=0.0)
                vb1 = tl.load(v + at1, mask=valid1[:, None], other=0.0)
                block1 = tl.load(row_table + (pos + 2 * TILE) // BLOCK, mask=pos + 2 * TILE < stop, other=0)
                s = tl.where(valid, tl.sum(kb.to(tl.float32) * qv[None, :], axis=1) * scale, -float("inf"))
                m_new = tl.maximum(m_i, tl.max(s, axis=0))
                p = tl.exp(s - m_new)
                alpha = tl.exp(m_i - m_new)
                acc = acc * alpha + tl.sum(p[:, None] * vb.to(tl.float32), axis=0)
                l_i = l_i * alpha + tl.sum(p, axis=0)
                m_i = m_new
                kb = kb1
                vb = vb1
        else:
            for j in range(start, stop, TILE):
                pos = j + t  # [TILE]
                valid = pos < length
                block = tl.load(row_table + pos // BLOCK, mask=valid, other=0)  # [TILE]
                at = ((block * BLOCK + pos % BLOCK)[:, None] * HEADS + head) * DIM + d[None, :]  # [TILE, DIM]
                kb = tl.load(k + at, mask=valid[:, None], other=0.0).to(tl.float32)
                s = tl.where(valid, tl.sum(kb * qv[None, :], axis=1) * scale, -float("inf"))  # [TILE]
                m_new = tl.maximum(m_i, tl.max(s, axis=0))
                p = tl.exp(s - m_new)
                alpha = tl.exp(m_i - m_new)
                vb = tl.load(v + at, mask=valid[:, None], other=0.0).to(tl.float32)
                acc = acc * alpha + tl.sum(p[:, None] * vb, axis=0)
                l_i = l_i * alpha + tl.sum(p, axis=0)
                m_i = m_new
        if SPLITS == 1:
            tl.store(out + (row * HEADS + head) * DIM + d, (acc / l_i).to(out.dtype.element_ty))
        else:  # an empty chunk (past the row's length) leaves max -inf, sum 0, accumulator 0
            base = part + ((row * HEADS + head) * SPLITS + split) * (DIM + 2)
            tl.store(base + d, acc)
            tl.store(base + DIM, m_i)
            tl.store(base + DIM + 1, l_i)

    @triton.jit(do_not_specialize=["part", "out"])
    def combine_splits(part, out, HEADS: tl.constexpr, DIM: tl.constexpr, SPLITS: tl.constexpr):
        # One program per row and head: the chunks' accumulators rescaled to their common maximum.
        # Chunk 0 always holds position 0, so that maximum is finite.
        row = tl.program_id(0)
        head = tl.program_id(1)
        sp = tl.arange(0, SPLITS)
        d = tl.arange(0, DIM)
        base = part + ((row * HEADS + head) * SPLITS + sp) * (DIM + 2)  # [SPLITS]
        m = tl.load(base + DIM)
        l_s = tl.load(base + DIM + 1)
        w = tl.exp(m - tl.max(m, axis=0))  # [SPLITS]: 0 for an empty chunk
        acc = tl.load(base[:, None] + d[None, :])  # [SPLITS, DIM]
        o = tl.sum(w[:, None] * acc, axis=0) / tl.sum(w * l_s, axis=0)
        tl.store(out + (row * HEADS + head) * DIM + d, o.to(out.dtype.element_ty))

    return paged_decode, combine_splits


def split_count(rows: int, heads: int, positions: int, tile: int) -> int:
    """Chunks per row and head: the least power of two that brings the call to `TARGET_PROGRAMS`
    programs, keeping at least two tiles a chunk (a span of fewer than four tiles stays whole)."""
    splits = 1
    while rows * heads * splits < TARGET_PROGRAMS and positions >= 4 * tile * splits:
        splits *= 2
    return splits


def paged_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    tables: torch.Tensor,
    lengths: torch.Tensor,
    tile: int = TILE_TOKENS,
    warps: int | None = None,
    splits: int | None = None,
    stages: int | None = None,
    prefetch: bool | None = None,
) -> torch.Tensor:
    """Each row's query over its own positions < lengths[m] of the paged cache: q [M, Hh, D],
    k/v [blocks, block_size, Hh, D] (one layer, contiguous), tables [M, span] int64 covering each
    row's length, lengths [M] int64 >= 1 -> [M, Hh, D] in q's dtype. `tile` (a power of two),
    `warps` (default `WARPS`), `splits` (chunks of each row's span, a power of two; default
    `split_count`), `stages` (Triton's software pipelining depth; default Triton's) and `prefetch`
    (default `PREFETCH`) tune the kernel, not what it computes."""
    m, heads, dim = q.shape
    if k.shape[2:] != (heads, dim) or not (k.is_contiguous() and v.is_contiguous()):
        raise ValueError(f"paged_attention: cache {tuple(k.shape)} does not hold {heads} heads of {dim}")
    block = k.shape[1]
    tile = max(block, tile)
    positions = tables.shape[1] * block
    splits = splits or split_count(m, heads, positions, tile)
    if splits & (splits - 1):
        raise ValueError(f"paged_attention: splits {splits} is not a power of two")
    chunk = -(-positions // (splits * tile)) * tile  # whole tiles
    out = torch.empty_like(q)
    part = torch.empty(m, heads, splits, dim + 2, dtype=torch.float32, device=q.device) if splits > 1 else out
    decode, combine = _kernels()
    tuning = {"num_warps": warps or WARPS} | ({"num_stages": stages} if stages else {})
    decode[(m, heads, splits)](
        q.contiguous(), k, v, tables, lengths, out, part, tables.stride(0), 1.0 / math.sqrt(dim), chunk,
        HEADS=heads, DIM=dim, BLOCK=block, TILE=tile, SPLITS=splits,
        PREFETCH=PREFETCH if prefetch is None else prefetch, **tuning,
    )  # fmt: skip
    if splits > 1:
        combine[(m, heads)](part, out, HEADS=heads, DIM=dim, SPLITS=splits, num_warps=1)
    return out


def warm(device: torch.device, dtype: torch.dtype, heads: int, dim: int, block: int) -> None:
    """Compile and load the kernel for these shapes by running it once on a tiny input: a CUDA
    graph capture must not be the first call."""
    q = torch.zeros(1, heads, dim, dtype=dtype, device=device)
    cache = torch.zeros(2, block, heads, dim, dtype=dtype, device=device)
    one = torch.ones(1, dtype=torch.long, device=device)
    paged_attention(q, cache, cache, one.view(1, 1), one)
    torch.cuda.synchronize(device)


def paged_read(q: torch.Tensor, kv: PagedKv, layer: int, meta: RowMeta) -> torch.Tensor:
    """`RowMeta.read` for `paged_attention` over layer `layer` of `kv`."""
    return paged_attention(q, kv.k[layer], kv.v[layer], meta.tables, meta.lengths)
