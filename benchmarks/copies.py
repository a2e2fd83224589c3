"""The `copies` mode of `python -m benchmarks.profile`: the host time of the fully batched step's
host-to-device copies, outside the step.

- A staged copy (`batched.vector.static_passes.Staging`) of `ints` integers, the step's input size,
  part by part: the conversion of a list into a tensor, the wait for the last copy, the copy into the
  pinned buffer, the queued copy to the device, the event record; and a whole `StaticPass.load`.
  Each with the device idle and then busy (a matrix product queued first). Off CUDA there is no
  pinned buffer and no event: the wait and the record are then nothing.
- `TableMirror.write` for `rows` rows of `blocks` blocks when none, 4 (about what a decode step
  changes with blocks of 16) or all tables changed since the last write. The bootstrap benchmark
  reuses one world, so its steps rewrite no table: this is what the rows that change cost an engine.
"""

from __future__ import annotations

import statistics
import time
from array import array
from typing import Any

import torch

from batched.vector.static_passes import PassCache
from batched.vector.table_mirror import TableMirror

STAGED_PARTS = ("convert", "wait", "pinned copy", "to device", "record")


def staged_copy_us(dev: torch.device, ints: int, calls: int, busy: bool) -> dict[str, float]:
    """Median µs of each part of one staged copy of `ints` integers, and of a whole `StaticPass.load`."""
    cuda = dev.type == "cuda"
    dst = torch.zeros(ints, dtype=torch.long, device=dev)
    pinned = torch.empty(ints, dtype=torch.long, pin_memory=cuda)
    landed = torch.cuda.Event() if cuda else None
    values = list(range(ints))
    side = 4096 if cuda else 64
    work = torch.randn(side, side, device=dev)

    def settle() -> None:
        if cuda:
            torch.cuda.synchronize(dev)
        if busy:
            work @ work  # queued device work the copy must not wait for

    parts: dict[str, list[float]] = {k: [] for k in STAGED_PARTS}
    for _ in range(calls):
        settle()
        t0 = time.perf_counter()
        host = torch.frombuffer(array("q", values), dtype=torch.long)
        t1 = time.perf_counter()
        if landed is not None:
            landed.synchronize()
        t2 = time.perf_counter()
        pinned.copy_(host)
        t3 = time.perf_counter()
        dst.copy_(pinned, non_blocking=cuda)
        t4 = time.perf_counter()
        if landed is not None:
            landed.record()
        t5 = time.perf_counter()
        for k, (x, y) in zip(STAGED_PARTS, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)], strict=True):
            parts[k].append(1e6 * (y - x))
    out = {k: statistics.median(v) for k, v in parts.items()}
    sp = PassCache(dev).get(("probe",), [ints])
    loads = []
    for _ in range(calls):
        settle()
        t0 = time.perf_counter()
        sp.load([values])
        loads.append(1e6 * (time.perf_counter() - t0))
    out["StaticPass.load"] = statistics.median(loads)
    return out


def mirror_write_us(dev: torch.device, rows: int, blocks: int, calls: int) -> dict[str, float]:
    """Median µs of `TableMirror.write` of `rows` tables of `blocks` blocks when 0, 4 or all changed."""
    mirror = TableMirror.make(rows, 64, dev)
    slots = list(range(rows))
    tables = [[(r * blocks + b) % 4096 for b in range(blocks)] for r in slots]
    mirror.write(slots, tables)
    out: dict[str, float] = {}
    for changed in sorted({0, min(4, rows), rows}):
        times = []
        for rep in range(calls):
            for r in range(changed):  # a table's last block changes
                tables[r][-1] = (tables[r][-1] + 1 + rep) % 4096
            t0 = time.perf_counter()
            mirror.write(slots, tables)
            times.append(time.perf_counter() - t0)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        out[f"{changed} of {rows} changed"] = 1e6 * statistics.median(times)
    return out


def run_copies(device: str, ints: int = 2900, rows: int = 64, blocks: int = 32, calls: int = 200) -> dict[str, Any]:
    """The report: staged copy parts (µs, idle and busy device) and table mirror writes (µs)."""
    dev = torch.device(device)
    report: dict[str, Any] = {"staged_us": {}, "mirror_write_us": mirror_write_us(dev, rows, blocks, calls)}
    for state in ("idle", "busy"):
        report["staged_us"][state] = staged_copy_us(dev, ints, calls, busy=state == "busy")
        print(f"staged copy of {ints} integers, device {state}: "
              + ", ".join(f"{k} {v:.1f} us" for k, v in report["staged_us"][state].items()))  # fmt: skip
    for k, v in report["mirror_write_us"].items():
        print(f"table mirror write, {k}: {v:.1f} us")
    return report
