"""The paged decode kernel's time per call for each tile width and warp count, at the benchmark's
shape by default (64 rows, 16 heads of 128, blocks of 16, 512 positions per row, bf16), from CUDA
events over repeated calls. Prints a table and writes it as JSON.

    python scripts/paged_tiles.py --out tiles.json
"""

from __future__ import annotations

import argparse
import json

import torch

from batched.paged_attention import paged_attention


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--block", type=int, default=16)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", default="")
    a = p.parse_args()
    dev, dt = torch.device("cuda"), torch.bfloat16
    span = -(-a.length // a.block)
    blocks = a.rows * span
    k = torch.randn(blocks + 1, a.block, a.heads, a.dim, device=dev, dtype=dt)
    v = torch.randn_like(k)
    q = torch.randn(a.rows, a.heads, a.dim, device=dev, dtype=dt)
    tables = torch.randperm(blocks, device=dev).view(a.rows, span)
    lengths = torch.full((a.rows,), a.length, device=dev, dtype=torch.long)
    nbytes = 2 * a.rows * a.length * a.heads * a.dim * k.element_size()  # keys and values read once
    rows = []
    for tile in (16, 32, 64, 128, 256):
        for warps in (4, 8):
            if tile < a.block:
                continue
            for _ in range(5):
                paged_attention(q, k, v, tables, lengths, tile, warps)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.calls):
                paged_attention(q, k, v, tables, lengths, tile, warps)
            end.record()
            torch.cuda.synchronize()
            us = 1e3 * start.elapsed_time(end) / a.calls
            rows.append({"tile": tile, "warps": warps, "us_per_call": us, "GBps": nbytes / us / 1e3})
            print(f"tile {tile:4d} warps {warps}: {us:8.1f} us per call, {nbytes / us / 1e3:7.0f} GB/s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"config": vars(a), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
