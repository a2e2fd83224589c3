"""Where one P1 example's time goes (`python -m benchmarks.profile --mode example`), by phase of the
side-by-side run: building the world, the implementation's step, the reference's step (every
round), the comparison, and the rest (drawing nothing: the examples are drawn beforehand). For each
phase: wall seconds (the device synchronised at every phase boundary), device operators (about one
kernel launch each on a GPU) and host reads (each one waits for the device), counted by
`benchmarks.opcount.OpCounter`. The Python tables of a cProfile run (`python_table`) serve the step
modes too.

A cProfile pass over the same examples (`python_rows`) runs after the timed one: its shapes are no
longer new, so a phase much faster there than in the timed pass pays for first calls (as cuDNN's
per-shape attention plans once did).
"""

from __future__ import annotations

import collections
import cProfile
import functools
import io
import os
import pstats
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from benchmarks.opcount import OpCounter

PHASES = ("build_world", "impl", "reference", "compare", "other")


@dataclass(slots=True)
class Phases:
    """A stack of phase names, and the seconds per phase."""

    device: torch.device
    stack: list[str] = field(default_factory=lambda: ["other"])
    seconds: collections.Counter[str] = field(default_factory=collections.Counter)

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


@contextmanager
def instrumented(phases: Phases) -> Iterator[None]:
    """Inside the block, the side-by-side run's world building, reference runs and implementation
    run (`properties.sides.harness`) count as their phases; the originals are put back after it."""
    import properties.sides.harness as harness

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
    from properties.sides.harness import run_side_by_side

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
        with OpCounter(phases.device, lambda: phases.stack[-1]) as counted:
            check_all()
    python: dict[str, Any] = {}
    if python_rows:
        prof = cProfile.Profile()
        prof.enable()
        check_all()
        prof.disable()
        python = {k: python_table(prof, k, python_rows) for k in ("tottime", "cumulative")}
    n = len(specs)
    rows = [{"phase": k, "ms_per_example": 1e3 * timed[k] / n, "ops_per_example": counted.ops[k] / n,
             "reads_per_example": counted.reads[k] / n} for k in PHASES]  # fmt: skip
    top_ops = {k: {op: c / n for op, c in counted.by_op[k].most_common(12)} for k in PHASES}
    return {"examples": n, "mismatched": mismatched, "rows_per_example": sum(len(s.seqs) for s in specs) / n,
            "examples_per_s": n / wall, "phases": rows, "top_ops": top_ops, "python": python}  # fmt: skip


def print_examples(report: dict[str, Any]) -> None:
    """The example report as a few lines of text."""
    print(f"{'phase':12s} {'ms/example':>11s} {'ops/example':>12s} {'reads/example':>14s}")
    for r in report["phases"]:
        ms, ops, reads = r["ms_per_example"], r["ops_per_example"], r["reads_per_example"]
        print(f"{r['phase']:12s} {ms:11.1f} {ops:12.0f} {reads:14.0f}")
    for k in ("reference", "impl"):
        print(f"{k}: " + ", ".join(f"{op} {c:.0f}" for op, c in report["top_ops"][k].items()))


def python_table(prof: cProfile.Profile, sort: str, rows: int) -> list[dict[str, Any]]:
    """The `rows` heaviest functions of a cProfile run by `sort` ("tottime" or "cumulative"): where
    each is, its calls, its own seconds and its cumulative seconds."""
    st = pstats.Stats(prof, stream=io.StringIO())
    st.sort_stats(sort)
    out = []
    for fn in st.fcn_list[:rows]:  # type: ignore[attr-defined]
        _, calls, own, cum, _ = st.stats[fn]  # type: ignore[attr-defined]
        where = os.path.relpath(fn[0]) if fn[0].startswith("/") else fn[0]
        out.append({"function": f"{where}:{fn[1]}({fn[2]})", "calls": calls, "own_s": own, "cum_s": cum})
    return out


def print_table(title: str, table: list[dict[str, Any]], key: str, per: int) -> None:
    """Print `table` (`python_table`) as ms and calls per unit (`per` units were profiled)."""
    print(f"-- Python functions by {title} (ms and calls per unit)")
    for r in table:
        print(f"{1e3 * r[key] / per:9.3f} {r['calls'] / per:8.1f}  {r['function']}")
