"""Where one P1 example's time goes, by phase of the side-by-side run: building the world, the
implementation's step, the reference's step (every round), and the comparison. For each phase:
wall seconds (the device synchronised at every phase boundary), device operators (about one kernel
launch each on a GPU) and host reads (each one waits for the device). Prints a table and writes JSON.
`--python-rows N` adds a cProfile pass over the same examples, run after the timed one: its shapes
are no longer new, so a phase much faster there than in the timed pass pays for first calls (as
cuDNN's per-shape attention plans did).

    python scripts/p1_profile.py --device cuda --dtype bfloat16 --max-n 64 --examples 12 --out p.json
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.opcount import NO_KERNEL, _is_view, _reads_to_host, _tensors
from benchmarks.pyprofile import print_table, python_table

PHASES = ("build_world", "impl", "reference", "compare", "other")


class Phases:
    """A stack of phase names, and per phase: seconds, device operators and host reads."""

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)
        self.stack = ["other"]
        self.seconds: collections.Counter[str] = collections.Counter()
        self.ops: collections.Counter[str] = collections.Counter()
        self.reads: collections.Counter[str] = collections.Counter()
        self.by_op: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, run as phase `label` (nested phases count in the innermost)."""

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            self.sync()
            outer = self.stack[-1]
            self.seconds[outer] += time.perf_counter()
            self.stack.append(label)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.sync()
                t1 = time.perf_counter()
                self.seconds[label] += t1 - t0
                self.stack.pop()
                self.seconds[outer] -= t1

        return run


class PhaseCounter(TorchDispatchMode):
    def __init__(self, phases: Phases) -> None:
        super().__init__()
        self.phases = phases

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        inputs, outputs = _tensors([args, kwargs]), _tensors([out])
        dev = self.phases.device.type
        label = self.phases.stack[-1]
        if name not in NO_KERNEL and not _is_view(func) and any(t.device.type == dev for t in inputs + outputs):
            self.phases.ops[label] += 1
            self.phases.by_op[label][name] += 1
        read = name == "_local_scalar_dense" if dev == "cpu" else _reads_to_host(name, func, args, inputs, outputs, dev)
        if read:
            self.phases.reads[label] += 1
        return out


def instrument(phases: Phases) -> None:
    """Route the side-by-side run's phases through `phases`."""
    import benchmarks.bench_p1_throughput as bench
    import properties.harness as harness

    harness.build_world = phases.timed("build_world", harness.build_world)
    harness.run_reference = phases.timed("reference", harness.run_reference)
    bench.check_equivalence = phases.timed("compare", bench.check_equivalence)
    run_step = harness.run_step

    def impl_or_reference(world: Any, model: Any, step: Any, decisions: Any = None) -> Any:
        if decisions is None:
            return phases.timed("impl", run_step)(world, model, step, decisions)
        return run_step(world, model, step, decisions)

    harness.run_step = impl_or_reference


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--numerics", default="fast", choices=("exact", "fast"))
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--max-n", type=int, default=64)
    p.add_argument("--examples", type=int, default=12)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--python-rows", type=int, default=0, help="also profile the Python: this many rows per table")
    p.add_argument("--out", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    from benchmarks.bench_p1_throughput import check_all
    from benchmarks.host_throughput import draw_specs
    from properties.config import RunConfig

    if a.device.startswith("cuda:"):
        torch.cuda.set_device(a.device)
    run = RunConfig(a.device, a.numerics, (a.dtype,), a.max_n, "")
    specs = draw_specs(run, a.examples, stream=a.seed)
    check_all(specs[:1])  # warm caches
    phases = Phases(a.device)
    instrument(phases)
    phases.sync()
    t0 = time.perf_counter()
    phases.seconds["other"] -= t0
    check_all(specs)
    phases.sync()
    wall = time.perf_counter() - t0
    phases.seconds["other"] += t0 + wall
    timed = {k: phases.seconds[k] for k in PHASES}
    with PhaseCounter(phases):
        check_all(specs)
    n = len(specs)
    python: dict[str, Any] = {}
    if a.python_rows:
        prof = cProfile.Profile()
        prof.enable()
        check_all(specs)
        prof.disable()
        python = {k: python_table(prof, k, a.python_rows) for k in ("tottime", "cumulative")}
        print_table("own time", python["tottime"], "own_s", n)
        print_table("cumulative time", python["cumulative"], "cum_s", n)
    rows = [
        {
            "phase": k,
            "ms_per_example": 1e3 * timed[k] / n,
            "ops_per_example": phases.ops[k] / n,
            "reads_per_example": phases.reads[k] / n,
        }
        for k in PHASES
    ]
    print(
        f"{a.device} {a.numerics} {a.dtype} n <= {a.max_n}: {n} examples, {sum(len(s.seqs) for s in specs) / n:.1f} "
        f"rows each, {n / wall:.2f} examples/s from one process"
    )
    print(f"{'phase':12s} {'ms/example':>11s} {'ops/example':>12s} {'reads/example':>14s}")
    for r in rows:
        ms, ops, reads = r["ms_per_example"], r["ops_per_example"], r["reads_per_example"]
        print(f"{r['phase']:12s} {ms:11.1f} {ops:12.0f} {reads:14.0f}")
    top = {k: {op: c / n for op, c in phases.by_op[k].most_common(12)} for k in PHASES}
    for k in ("reference", "impl"):
        print(f"{k}: " + ", ".join(f"{op} {c:.0f}" for op, c in top[k].items()))
    if a.out:
        with open(a.out, "w") as f:
            report = {"config": vars(a), "examples_per_s": n / wall, "phases": rows, "top_ops": top, "python": python}
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
