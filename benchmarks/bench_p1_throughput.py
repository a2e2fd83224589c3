"""Throughput of the P1 equivalence check: examples per second of `run_side_by_side` followed by
`check_equivalence`, over a fixed spec list (`p1_specs`: CPU, exact numerics,
n <= 8). One round checks every spec once; the warm-up round fills the weight caches the property
run also keeps warm. Besides the wall-clock figure it records examples per second of process CPU
time, the better estimate on a shared, loaded machine, bootstrapped rows per CPU second (comparable
across versions of the strategies, which decide how many rows an example holds), and how many
examples showed a mismatch (the P1 property reports those; the throughput benchmark only counts
them). Rounds: `--bench-p1-rounds` or `MTP_BENCH_P1_ROUNDS` (`benchmarks.settings.p1_rounds`: default
1, so a plain test run stays quick; 5 for a figure worth quoting).

The spec list is drawn deterministically (`properties.worlds.fixed_sample`: derandomized, generate phase only,
no database): what the P1 property itself meets under a derandomized profile, following the
strategies whenever they change."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Sequence
from typing import Any

import pytest
import torch

from benchmarks.settings import p1_rounds
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.impl import Impl, load
from properties.sides.harness import run_side_by_side
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs

P1_EXAMPLES = 50


def p1_run_config() -> RunConfig:
    """The run configuration of the throughput measurement: CPU and exact numerics (float64, float32)
    at mixes of up to 8, whatever device the session runs on."""
    return RunConfig("cpu", "exact", ("float64", "float32"), 8)


@functools.lru_cache(maxsize=4)
def p1_specs(count: int = P1_EXAMPLES) -> tuple[WorldSpec, ...]:
    """`count` specs drawn from `world_specs(p1_run_config())`, the same on every call and run."""
    return tuple(fixed_sample(world_specs(p1_run_config()), count))


def check_all(specs: Sequence[WorldSpec], impl: Impl | None = None) -> int:
    """Run P1 on every spec against `impl` (default: the suite's default implementation); returns the
    number of examples that showed a mismatch."""
    impl = load("literal") if impl is None else impl
    failures = 0
    for spec in specs:
        sbs = run_side_by_side(spec, impl)
        failures += bool(check_equivalence(sbs))
    return failures


def test_p1_throughput(benchmark: Any, request: pytest.FixtureRequest) -> None:
    t0 = time.perf_counter()
    specs = p1_specs()
    draw_s = time.perf_counter() - t0
    rounds = p1_rounds(request.config)
    run = p1_run_config()

    cpu_s: list[float] = []

    def timed_round() -> int:
        t_cpu = time.process_time()
        failures = check_all(specs)
        cpu_s.append(time.process_time() - t_cpu)
        return failures

    benchmark.group = "p1 throughput"
    failures = benchmark.pedantic(timed_round, rounds=rounds, warmup_rounds=1, iterations=1)

    median = benchmark.stats.stats.median if not benchmark.disabled else None
    cpu_median = statistics.median(cpu_s[1:]) if median else None
    rows = sum(len(s.bootstrap) for s in specs)
    benchmark.extra_info.update(
        {"examples": len(specs), "mismatched_examples": failures, "sequences": sum(len(s.seqs) for s in specs),
         "bootstrapped": rows, "device": run.device, "numerics": run.numerics, "max_n": run.max_n,
         "threads": torch.get_num_threads(), "draw_s": draw_s,
         "examples_per_s": len(specs) / median if median else None,
         "examples_per_cpu_s": len(specs) / cpu_median if cpu_median else None,
         "rows_per_cpu_s": rows / cpu_median if cpu_median else None}
    )  # fmt: skip
