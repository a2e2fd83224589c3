"""The `kernel` mode of `python -m benchmarks.profile`: the paged decode kernel's time per call
(`batched.vector.attention.paged_attention`) over a grid of its tuning (tile width, warps, chunks
per row, pipelining depth, loading ahead), for each number of rows, at the benchmark's shape by
default (16 heads of 128, blocks of 16, 512 positions a row, bf16). The time includes each call's
launch from Python, which bounds small batches. On CUDA it is timed with events; elsewhere the
kernel runs only in Triton's interpreter (`TRITON_INTERPRET=1` set before Triton is imported), timed
with the host clock: that checks the sweep runs and measures nothing worth keeping.

The earlier sweeps, as grids:

    tiles:     --tiles 16 32 64 --warps 2 4 8 --splits 1 2 4 8 16 0   (wider tiles: splits 0 and 1 only)
    stages:    --tiles 16 --warps 1 2 4 --splits 0 8 --stages 1 2 3 4
    prefetch:  --tiles 16 --warps 1 2 4 --splits 0 1 4 8 --prefetch 0 1
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import torch

from batched.vector.attention import paged_attention, split_count


@dataclass(slots=True, frozen=True)
class KernelGrid:
    """The shapes and the tuning grid of one sweep (splits 0: the kernel's own `split_count`;
    stages 0: Triton's default; prefetch -1: the kernel's default)."""

    rows: tuple[int, ...] = (8, 64, 256)
    heads: int = 16
    dim: int = 128
    block: int = 16
    length: int = 512
    calls: int = 200
    tiles: tuple[int, ...] = (16,)
    warps: tuple[int, ...] = (1, 2, 4)
    splits: tuple[int, ...] = (0,)
    stages: tuple[int, ...] = (0,)
    prefetch: tuple[int, ...] = (-1,)

    def points(self) -> list[tuple[int, int, int, int, int]]:
        """(tile, warps, splits, stages, prefetch) to time: tiles at least a block wide, and a tile
        wider than 16 only whole or automatically split (as the first sweep ran them)."""
        grid = itertools.product(self.tiles, self.warps, self.splits, self.stages, self.prefetch)
        return [g for g in grid if g[0] >= self.block and (g[0] == 16 or g[2] in (0, 1))]


def inputs(n: int, g: KernelGrid, dev: torch.device, dt: torch.dtype) -> tuple[torch.Tensor, ...]:
    """q, k, v, tables, lengths of n rows of `g.length` positions in scattered blocks."""
    span = -(-g.length // g.block)
    k = torch.randn(n * span + 1, g.block, g.heads, g.dim, device=dev, dtype=dt)
    v = torch.randn_like(k)
    q = torch.randn(n, g.heads, g.dim, device=dev, dtype=dt)
    tables = torch.randperm(n * span, device=dev).view(n, span)
    lengths = torch.full((n,), g.length, device=dev, dtype=torch.long)
    return q, k, v, tables, lengths


def seconds_per_call(args: tuple[Any, ...], calls: int, dev: torch.device) -> float:
    """The mean seconds of `calls` calls after five warm-up calls."""
    for _ in range(5):
        paged_attention(*args)
    if dev.type != "cuda":
        t0 = time.perf_counter()
        for _ in range(calls):
            paged_attention(*args)
        return (time.perf_counter() - t0) / calls
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        paged_attention(*args)
    end.record()
    torch.cuda.synchronize(dev)
    return 1e-3 * start.elapsed_time(end) / calls


def run_kernel(device: str, g: KernelGrid) -> dict[str, Any]:
    """One row per (rows, tile, warps, splits, stages, prefetch): µs per call and the bandwidth of
    reading every key and value once."""
    dev = torch.device(device)
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    out = []
    for n in g.rows:
        q, k, v, tables, lengths = inputs(n, g, dev, dt)
        nbytes = 2 * n * g.length * g.heads * g.dim * k.element_size()
        auto = split_count(n, g.heads, tables.shape[1] * g.block, max(g.block, 16))
        for tile, warps, splits, stages, prefetch in g.points():
            pf = None if prefetch < 0 else bool(prefetch)
            args = (q, k, v, tables, lengths, tile, warps, splits or None, stages or None, pf)
            us = 1e6 * seconds_per_call(args, g.calls, dev)
            label = f"auto ({auto})" if not splits else str(splits)
            out.append({"rows": n, "tile": tile, "warps": warps, "splits": label, "stages": stages or None,
                        "prefetch": pf, "us_per_call": us, "GBps": nbytes / us / 1e3})  # fmt: skip
            print(f"rows {n:4d} tile {tile:3d} warps {warps} splits {label:>8} stages {stages or '-'} "
                  f"prefetch {pf}: {us:9.1f} us per call, {nbytes / us / 1e3:7.0f} GB/s")  # fmt: skip
    return {"dtype": str(dt).removeprefix("torch."), "rows": out}
