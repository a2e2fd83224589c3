"""The step modes of `python -m benchmarks.profile` (`timers`, `timeline`, `torch`): where the time of
one bootstrap step goes. Each runs the benchmark world of `n` sequences (`benchmarks.worlds.StepBench`),
each step on a fresh copy of it in one persistent model (so the fully batched step's captured graphs
stay valid), after three warm-up steps (eager, capture, replay), the garbage frozen as the benchmark
freezes it. The timers are plain timers: a profiler's per-call overhead inflates Python-heavy code
two to three times."""

from __future__ import annotations

import cProfile
import gc
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import torch

import batched.vector.attention as paged_attention
from benchmarks import pieces
from benchmarks.phases import print_table, python_table
from benchmarks.settings import resolve
from benchmarks.worlds import StepBench

PIECE_IMPLS = ("vector", "vector-gathered")  # the implementations whose pieces `timers` and `timeline` wrap


@dataclass(slots=True, frozen=True)
class StepOptions:
    """One step measurement: the implementation (a name of `benchmarks.settings.IMPL_NAMES`), the
    world, how many steps, table sizes, and the fully batched model's switches."""

    device: str = "cpu"
    impl: str = "vector"
    mix: str = "greedy"
    n: int = 64
    steps: int = 30
    rows: int = 25  # rows of the torch mode's tables
    python_rows: int = 0  # > 0: also cProfile's tables, this many rows (torch mode)
    graphs: bool = True  # the fully batched step's passes as CUDA graphs (else eager)
    prefetch: bool | None = None  # the paged kernel's loading ahead (None: its default)
    ahead: bool = True  # launch the propose ahead (`VectorMtpModel.ahead`)
    plan: bool = True  # the decode may launch it (`VectorMtpModel.launch_in_decode`), else the sampling


@contextmanager
def warm_bench(o: StepOptions) -> Iterator[StepBench]:
    """The bench `o` asks for after three warm-up steps (eager, capture, replay); inside the block the
    paged kernel's default loading ahead is `o.prefetch` (None: left as it is) and the garbage is
    frozen, as the benchmark freezes it (the collection before each step walks only the steps' own
    objects)."""
    saved = paged_attention.PREFETCH
    if o.prefetch is not None:
        paged_attention.PREFETCH = o.prefetch
    try:
        s = replace(resolve({"device": o.device}), mix=o.mix)
        bench = StepBench.make(s, o.n, o.impl, graph_after=1 if o.graphs else None)
        if hasattr(bench.work, "ahead"):
            bench.work.ahead, bench.work.launch_in_decode = o.ahead, o.plan
        for _ in range(3):
            bench.run(bench.fresh())
        gc.collect()
        gc.freeze()
        yield bench
    finally:
        paged_attention.PREFETCH = saved
        gc.unfreeze()


def timed_steps(bench: StepBench, steps: int) -> list[float]:
    """Seconds of `steps` steps, each on a fresh copy of the world."""
    times = []
    for _ in range(steps):
        w = bench.fresh()
        t0 = time.perf_counter()
        bench.run(w)
        times.append(time.perf_counter() - t0)
    return times


def run_timers(o: StepOptions) -> dict[str, Any]:
    """Host ms per step of each piece, the step's median and minimum ms, and how many steps took a
    propose launched ahead."""
    marks: pieces.Marks = {}
    with warm_bench(o) as bench, pieces.patched(pieces.TIMED, pieces.marker(marks, {"t0": 0.0}, cuda=False)):
        taken = bench.work.taken_ahead
        times = timed_steps(bench, o.steps)
        taken = bench.work.taken_ahead - taken
    totals = pieces.host_seconds(marks)
    per_step = {k: 1e3 * v / o.steps for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}
    report = {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times)}
    report |= {"pieces_ms": per_step, "proposes_taken_ahead": taken}
    print(f"{o.impl} {o.mix} n={o.n} on {o.device}: median {report['median_ms']:.3f} ms, min {report['min_ms']:.3f} "
          f"ms, proposes launched ahead and taken: {taken} of {o.steps} steps")  # fmt: skip
    for k, v in per_step.items():
        print(f"{v:9.3f}  {k}")
    return report


def timeline_rows(bench: StepBench, steps: int) -> list[dict[str, tuple[float, float, float | None]]]:
    """Per step: for each call of a piece, (host start, host end, device done) in ms after the step
    began (device done None off CUDA); the step itself under "step"."""
    cuda = bench.settings.on_cuda
    marks: pieces.Marks = {}
    clock = {"t0": 0.0}
    rows = []
    with pieces.patched(pieces.MARKED, pieces.marker(marks, clock, cuda)):
        for _ in range(steps):
            w = bench.fresh()
            marks.clear()
            start = torch.cuda.Event(enable_timing=True) if cuda else None
            clock["t0"] = time.perf_counter()
            if start is not None:
                start.record()
            bench.run(w)
            step_ms = 1e3 * (time.perf_counter() - clock["t0"])
            row: dict[str, tuple[float, float, float | None]] = {"step": (0.0, step_ms, None)}
            for name, calls in marks.items():
                for i, (h0, h1, ev) in enumerate(calls):
                    done = start.elapsed_time(ev) if start is not None and ev is not None else None
                    row[name if i == 0 else f"{name} #{i + 1}"] = (1e3 * h0, 1e3 * h1, done)
            rows.append(row)
    return rows


def run_timeline(o: StepOptions) -> dict[str, Any]:
    """Per piece, in order of entry: calls, and the medians over the steps of its host start, host end
    and device completion, in ms after the step began; the step's median ms."""
    with warm_bench(o) as bench:
        rows = timeline_rows(bench, o.steps)
    names = sorted({k for r in rows for k in r}, key=lambda k: statistics.median(r[k][0] for r in rows if k in r))
    table = []
    for k in names:
        got = [r[k] for r in rows if k in r]
        done = [d for _, _, d in got if d is not None]
        table.append({
            "piece": k, "calls": len(got),
            "host_start_ms": statistics.median(h0 for h0, _, _ in got),
            "host_end_ms": statistics.median(h1 for _, h1, _ in got),
            "device_done_ms": statistics.median(done) if done else None,
        })  # fmt: skip
    report = {"median_ms": statistics.median(r["step"][1] for r in rows), "pieces": table}
    print(f"{o.impl} {o.mix} n={o.n} on {o.device}: median step {report['median_ms']:.3f} ms")
    print(f"{'host start':>10} {'host end':>9} {'device done':>11}  piece")
    for t in table:
        dev = "" if t["device_done_ms"] is None else f"{t['device_done_ms']:.3f}"
        print(f"{t['host_start_ms']:10.3f} {t['host_end_ms']:9.3f} {dev:>11}  {t['piece']}")
    return report


def python_tables(bench: StepBench, steps: int, rows: int) -> dict[str, Any]:
    """cProfile's heaviest functions over `steps` steps, by own and by cumulative time."""
    prof = cProfile.Profile()
    for _ in range(steps):
        w = bench.fresh()
        prof.enable()
        bench.run(w)
        prof.disable()
    return {k: python_table(prof, k, rows) for k in ("tottime", "cumulative")}


def device_tables(bench: StepBench, steps: int, rows: int) -> dict[str, Any]:
    """Under the torch profiler: the operators by host time, every device kernel and copy by device
    time (ms and count per step; a graph replay's kernels too), the device's busy ms per step."""
    acts = [torch.profiler.ProfilerActivity.CPU]
    if bench.settings.on_cuda:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    worlds = [bench.base.clone(into=bench.work) for _ in range(steps)]  # a copy would add its own kernels
    with torch.profiler.profile(activities=acts) as tp:
        for w in worlds:
            bench.run(w)
    per = 1e-3 / steps  # the profiler's microsecond totals -> ms per step
    ops = sorted(tp.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:rows]
    op_rows = [{"op": e.key, "calls_per_step": e.count / steps, "self_cpu_ms": e.self_cpu_time_total * per,
                "device_ms": getattr(e, "self_device_time_total", 0.0) * per} for e in ops]  # fmt: skip
    kernels: dict[str, list[float]] = {}
    for e in tp.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels.setdefault(e.name, [0.0, 0.0])
            k[0], k[1] = k[0] + 1, k[1] + e.time_range.elapsed_us()
    by_time = sorted(kernels.items(), key=lambda kv: -kv[1][1])
    kernel_rows = [{"kernel": name, "per_step": c / steps, "device_ms": us * per} for name, (c, us) in by_time]
    busy, count = sum(r["device_ms"] for r in kernel_rows), sum(r["per_step"] for r in kernel_rows)
    return {"device_busy_ms": busy, "kernels_per_step": count, "kernels": kernel_rows[:rows], "ops": op_rows}


def run_torch(o: StepOptions) -> dict[str, Any]:
    """The step's median ms, then `device_tables` and (with `python_rows`) `python_tables`."""
    with warm_bench(o) as bench:
        report: dict[str, Any] = {"median_ms": 1e3 * statistics.median(timed_steps(bench, o.steps))}
        report["python"] = python_tables(bench, o.steps, o.python_rows) if o.python_rows else {}
        report |= device_tables(bench, o.steps, o.rows)
    print(f"{o.impl} {o.mix} n={o.n} on {o.device}: median {report['median_ms']:.2f} ms/step, "
          f"device busy {report['device_busy_ms']:.2f} ms")  # fmt: skip
    if report["python"]:
        print_table("own time", report["python"]["tottime"], "own_s", o.steps)
        print_table("cumulative time", report["python"]["cumulative"], "cum_s", o.steps)
    print(f"-- device kernels by device time ({report['kernels_per_step']:.0f} per step; ms, count per step)")
    for r in report["kernels"]:
        print(f"{r['device_ms']:9.3f} {r['per_step']:8.1f}  {r['kernel'][:100]}")
    print("-- operators by host time (ms per step, device ms per step, calls per step)")
    for r in report["ops"]:
        print(f"{r['self_cpu_ms']:9.3f} {r['device_ms']:9.3f} {r['calls_per_step']:8.1f}  {r['op']}")
    return report
