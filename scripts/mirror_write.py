"""Host time of `TableMirror.write` for 64 rows of the benchmark's table length (32 blocks) when none,
4 (about what a decode step changes with blocks of 16) or all 64 tables changed since the last write.
The benchmark reuses one world, so its steps rewrite nothing: this is what the rows that change cost.

    python scripts/mirror_write.py --device cuda --out mirror-write.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from batched.vector.table_mirror import TableMirror


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--blocks", type=int, default=32)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--out", default="")
    a = p.parse_args()
    dev = torch.device(a.device)
    mirror = TableMirror.make(a.rows, 64, dev)
    slots = list(range(a.rows))
    tables = [[(r * a.blocks + b) % 4096 for b in range(a.blocks)] for r in slots]
    mirror.write(slots, tables)
    report: dict[str, float] = {}
    for changed in (0, 4, a.rows):
        times = []
        for rep in range(a.reps):
            for r in range(changed):  # a table grows by a block, or its last block changes
                tables[r][-1] = (tables[r][-1] + 1 + rep) % 4096
            t0 = time.perf_counter()
            mirror.write(slots, tables)
            times.append(time.perf_counter() - t0)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        report[f"changed_{changed}_us"] = 1e6 * statistics.median(times)
        print(f"{changed:3d} of {a.rows} tables changed: {report[f'changed_{changed}_us']:7.1f} us a write")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"config": vars(a), **report}, f, indent=1)


if __name__ == "__main__":
    main()
