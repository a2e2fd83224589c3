"""The paged decode kernel's time per call for each tile width, warp count and number of chunks per
row (`splits`; "auto": `split_count`), for 8, 64 and 256 rows of the benchmark's shape (16 heads of
128, blocks of 16, 512 positions per row, bf16), from CUDA events over repeated calls; with
`--stages`, for each pipelining depth instead (tile 16; 1, 2 and 4 warps); with `--prefetch`, with
and without loading the next tile ahead (tile 16; 1, 2 and 4 warps). Prints a table and writes it as
JSON. The time includes each call's launch from Python, which bounds small batches.

    python scripts/paged_tiles.py --out tiles.json
    python scripts/paged_tiles.py --rows 64 256 --stages 1 2 3 4 --out stages.json
    python scripts/paged_tiles.py --rows 64 256 --prefetch 0 1 --out prefetch.json
"""

from __future__ import annotations

import argparse
import json

import torch

from batched.vector.attention import paged_attention, split_count


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[8, 64, 256])
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--stages", type=int, nargs="*", default=[], help="instead: pipelining depths at tile 16")
    p.add_argument("--prefetch", type=int, nargs="*", default=[], help="instead: loading ahead off (0), on (1)")
    p.add_argument("--out", default="")
    a = p.parse_args()
    dev, dt = torch.device("cuda"), torch.bfloat16
    rows = []
    for n in a.rows:
        span = -(-a.length // a.block)
        blocks = n * span
        k = torch.randn(blocks + 1, a.block, a.heads, a.dim, device=dev, dtype=dt)
        v = torch.randn_like(k)
        q = torch.randn(n, a.heads, a.dim, device=dev, dtype=dt)
        tables = torch.randperm(blocks, device=dev).view(n, span)
        lengths = torch.full((n,), a.length, device=dev, dtype=torch.long)
        nbytes = 2 * n * a.length * a.heads * a.dim * k.element_size()  # keys and values read once
        auto = split_count(n, a.heads, span * a.block, max(a.block, 16))
        grid = [(t, w, sp, None, None) for t in (16, 32, 64) for w in (2, 4, 8) for sp in (1, 2, 4, 8, 16, 0)]
        grid = [g for g in grid if g[0] >= a.block and (g[0] == 16 or g[2] in (0, 1))]
        if a.stages:
            grid = [(16, w, sp, st, None) for w in (1, 2, 4) for sp in (0, 8) for st in a.stages]
        if a.prefetch:
            grid = [(16, w, sp, None, bool(pf)) for w in (1, 2, 4) for sp in (0, 1, 4, 8) for pf in a.prefetch]
        for tile, warps, splits, stages, prefetch in grid:
            args = (q, k, v, tables, lengths, tile, warps, splits or None, stages, prefetch)
            for _ in range(5):
                paged_attention(*args)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.calls):
                paged_attention(*args)
            end.record()
            torch.cuda.synchronize()
            us = 1e3 * start.elapsed_time(end) / a.calls
            label = f"auto ({auto})" if not splits else str(splits)
            rows.append({"rows": n, "tile": tile, "warps": warps, "splits": label, "stages": stages,
                         "prefetch": prefetch, "us_per_call": us, "GBps": nbytes / us / 1e3})  # fmt: skip
            print(f"rows {n:4d} tile {tile:3d} warps {warps} splits {label:>8} stages {stages} prefetch {prefetch}: "
                  f"{us:8.1f} us per call, {nbytes / us / 1e3:7.0f} GB/s")  # fmt: skip
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"config": vars(a), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
