"""Where one bootstrap step's time goes: the benchmark world of n sequences (`benchmarks.worlds`),
one implementation, timed warm (each step on a fresh copy of the world in one persistent model, so
the fully batched step's captured graphs stay valid), then profiled twice: cProfile (the Python
functions, own and cumulative time) and the torch profiler (operators' host time, the device's
busy time from CUDA kernel records, and those kernels by device time). Prints the tables and writes them as JSON.

    python scripts/step_profile.py --device cuda --impl vector --mix greedy --n 64 --out prof.json
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import statistics
import time
from dataclasses import replace

import torch

import batched.vector.attention as paged_attention
from benchmarks.bench_bootstrap import IMPLS
from benchmarks.pyprofile import print_table, python_table
from benchmarks.settings import MIXES, resolve
from benchmarks.worlds import VectorBench, sync
from properties.world import World


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--impl", default="vector", choices=tuple(IMPLS))
    p.add_argument("--mix", default="greedy", choices=MIXES)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--steps", type=int, default=20, help="timed steps (each on a fresh copy of the world)")
    p.add_argument("--no-graphs", action="store_true", help="the fully batched step's passes run eagerly")
    p.add_argument("--gather", action="store_true", help="the fully batched step gathers spans (no paged kernel)")
    p.add_argument("--rows", type=int, default=25, help="rows of each table")
    p.add_argument("--prefetch", type=int, choices=(0, 1), default=None, help="the paged kernel's loading ahead")
    p.add_argument("--out", default="")
    a = p.parse_args()
    if a.prefetch is not None:
        paged_attention.PREFETCH = bool(a.prefetch)
    torch.set_num_threads(1)
    s = replace(resolve({"device": a.device}), mix=a.mix)
    bench = VectorBench.make(s, a.n, graph_after=None if a.no_graphs else 1, paged=not a.gather)
    base, work = bench.base, bench.work
    step = IMPLS[a.impl].step

    def run(w: World) -> None:
        step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
        sync(s.device)

    fresh = bench.fresh

    for _ in range(3):
        run(fresh())
    gc.collect()
    gc.freeze()  # as the benchmark: the collection before each step walks only the steps' own objects
    times = []
    for _ in range(a.steps):
        w = fresh()
        t0 = time.perf_counter()
        run(w)
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)

    prof = cProfile.Profile()
    for _ in range(a.steps):
        w = fresh()
        prof.enable()
        run(w)
        prof.disable()

    # The torch profiler's pass leaves the caches as the last step left them (a copy would add its
    # own kernels): the sequences start afresh, so every step does the same work on other numbers.
    acts = [torch.profiler.ProfilerActivity.CPU]
    if s.on_cuda:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    ws = [base.clone(into=work) for _ in range(a.steps)]
    sync(s.device)
    with torch.profiler.profile(activities=acts) as tp:
        for w in ws:
            run(w)
    avgs = tp.key_averages()
    per = 1e-3 / a.steps  # the profiler's microsecond totals -> ms per step
    ops = sorted(avgs, key=lambda e: e.self_cpu_time_total, reverse=True)[: a.rows]
    op_rows = [
        {
            "op": e.key,
            "calls_per_step": e.count / a.steps,
            "self_cpu_ms": e.self_cpu_time_total * per,
            "device_ms": getattr(e, "self_device_time_total", 0.0) * per,
        }
        for e in ops
    ]
    # Every kernel and copy the device ran, once each, whether an operator or a graph replay launched it.
    on_device = [e for e in tp.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    device_ms = sum(e.time_range.elapsed_us() for e in on_device) * per
    kernels: dict[str, list[float]] = {}
    for e in on_device:
        k = kernels.setdefault(e.name, [0.0, 0.0])
        k[0] += 1
        k[1] += e.time_range.elapsed_us()
    kernel_rows = [
        {"kernel": name, "per_step": c / a.steps, "device_ms": us * per}
        for name, (c, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[: a.rows]
    ]
    launches = sum(c for c, _ in kernels.values()) / a.steps
    report = {
        "config": vars(a),
        "settings": {k: getattr(s, k) for k in ("device", "dtype", "numerics", "hidden", "vocab_size", "group_cap")},
        "median_ms": 1e3 * median,
        "device_busy_ms": device_ms,
        "python_own": python_table(prof, "tottime", a.rows),
        "python_cumulative": python_table(prof, "cumulative", a.rows),
        "ops": op_rows,
        "kernels_per_step": launches,
        "kernels": kernel_rows,
    }
    print(f"{a.impl} {a.mix} n={a.n} on {s.device}: median {1e3 * median:.2f} ms/step, device busy {device_ms:.2f} ms")
    print_table("own time", report["python_own"], "own_s", a.steps)
    print_table("cumulative time", report["python_cumulative"], "cum_s", a.steps)
    print(f"-- device kernels by device time ({launches:.0f} kernels and copies per step; ms, count per step)")
    for r in kernel_rows:
        print(f"{r['device_ms']:9.3f} {r['per_step']:8.1f}  {r['kernel'][:100]}")
    print("-- operators by host time (ms per step, device ms per step, calls per step)")
    for r in op_rows:
        print(f"{r['self_cpu_ms']:9.3f} {r['device_ms']:9.3f} {r['calls_per_step']:8.1f}  {r['op']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
