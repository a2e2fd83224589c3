"""Where one P1 example's time goes (`python -m benchmarks.profile --mode example`), by phase of the
side-by-side run: building the world, the implementation's step, the reference's step (every
round), the comparison, and the rest (drawing nothing: the examples are drawn beforehand). For each
phase: wall seconds (the device synchronised at every phase boundary), device operators (about one
kernel launch each on a GPU) and host reads (each one waits for the device).

A cProfile pass over the same examples (`python_rows`) runs after the timed one: its shapes are no
longer new, so a phase much faster there than in the timed pass pays for first calls (as cuDNN's
per-shape attention plans once did).
"""

from __future__ import annotations

import collections
import cProfile
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.opcount import NO_KERNEL, _is_view, _reads_to_host, _tensors
from benchmarks.pyprofile import python_table

PHASES = ("build_world", "impl", "reference", "compare", "other")


@dataclass(slots=True)
class Phases:
    """A stack of phase names, and per phase: seconds, device operators, host reads, operators by name."""

    device: torch.device
    stack: list[str] = field(default_factory=lambda: ["other"])
    seconds: collections.Counter[str] = field(default_factory=collections.Counter)
    ops: collections.Counter[str] = field(default_factory=collections.Counter)
    reads: collections.Counter[str] = field(default_factory=collections.Counter)
    by_op: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def timed(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, run as phase `label` (nested phases count in the innermost only)."""

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
    """Counts every operator and host read into the phase running when it is issued."""

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


@contextmanager
def instrumented(phases: Phases) -> Iterator[None]:
    """Inside the block, the side-by-side run's world building, reference runs and implementation
    run (`properties.harness`) count as their phases; the originals are put back after it."""
    import properties.harness as harness

    build, reference, step = harness.build_world, harness.run_reference, harness.run_step

    def impl_or_reference(world: Any, model: Any, fn: Any, decisions: Any = None) -> Any:
        if decisions is None:  # the implementation's run; the reference's records its decisions
            return phases.timed("impl", step)(world, model, fn, decisions)
        return step(world, model, fn, decisions)

    harness.build_world = phases.timed("build_world", build)
    harness.run_reference = phases.timed("reference", reference)
    harness.run_step = impl_or_reference
    try:
        yield
    finally:
        harness.build_world, harness.run_reference, harness.run_step = build, reference, step


def profile_examples(specs: list[Any], impl: Any, device: str, python_rows: int = 0) -> dict[str, Any]:
    """Run P1 on `specs` against `impl` three ways (timed by phase, counted by phase, and under
    cProfile when `python_rows`), after one warm-up example; the report: examples a second from this
    process, and per phase ms, operators and host reads per example, the phases' commonest operators
    and the Python tables."""
    from properties.checks.compare import check_equivalence
    from properties.harness import run_side_by_side

    phases = Phases(torch.device(device))
    compare = phases.timed("compare", check_equivalence)

    def check_all() -> int:
        return sum(bool(compare(run_side_by_side(spec, impl))) for spec in specs)

    check_equivalence(run_side_by_side(specs[0], impl))  # warm the weight caches a long run keeps warm
    with instrumented(phases):
        phases.sync()
        t0 = time.perf_counter()
        phases.seconds["other"] -= t0
        mismatched = check_all()
        phases.sync()
        wall = time.perf_counter() - t0
        phases.seconds["other"] += t0 + wall
        timed = {k: phases.seconds[k] for k in PHASES}
        with PhaseCounter(phases):
            check_all()
    python: dict[str, Any] = {}
    if python_rows:
        prof = cProfile.Profile()
        prof.enable()
        check_all()
        prof.disable()
        python = {k: python_table(prof, k, python_rows) for k in ("tottime", "cumulative")}
    n = len(specs)
    rows = [
        {
            "phase": k,
            "ms_per_example": 1e3 * timed[k] / n,
            "ops_per_example": phases.ops[k] / n,
            "reads_per_example": phases.reads[k] / n,
        }
        for k in PHASES
    ]
    return {
        "examples": n,
        "mismatched": mismatched,
        "rows_per_example": sum(len(s.seqs) for s in specs) / n,
        "examples_per_s": n / wall,
        "phases": rows,
        "top_ops": {k: {op: c / n for op, c in phases.by_op[k].most_common(12)} for k in PHASES},
        "python": python,
    }


def print_examples(report: dict[str, Any]) -> None:
    """The example report as a few lines of text."""
    print(f"{'phase':12s} {'ms/example':>11s} {'ops/example':>12s} {'reads/example':>14s}")
    for r in report["phases"]:
        ms, ops, reads = r["ms_per_example"], r["ops_per_example"], r["reads_per_example"]
        print(f"{r['phase']:12s} {ms:11.1f} {ops:12.0f} {reads:14.0f}")
    for k in ("reference", "impl"):
        print(f"{k}: " + ", ".join(f"{op} {c:.0f}" for op, c in report["top_ops"][k].items()))
