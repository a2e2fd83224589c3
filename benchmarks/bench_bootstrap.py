"""The bootstrap implementations side by side, one benchmark group per batch size n (by default
`loop`, `literal` and `vector`, as the suite's registry names them; `--bench-impls` picks others),
each round one step on a fresh copy of one world, with the device work a counted run issues and the
memory floor of the work (`benchmarks.floor`). Case ids are `n<size>-<impl>`; docs/benchmarks.md
says what a round times and what each cell records."""

from __future__ import annotations

import functools
import gc
import math
import platform
import time
from typing import Any

import pytest
import torch

from benchmarks.floor import step_bytes
from benchmarks.host_probe import host_probe_s
from benchmarks.opcount import count_ops
from benchmarks.settings import BenchSettings, NoCudaDevice, settings_from_config
from benchmarks.worlds import StepBench, bench_impl, build_bench_world, cache_lens
from properties.worlds.world import World

RECORDED = ("dtype", "numerics", "mix", "hidden", "vocab_size", "ladder_nd", "group_cap")  # settings a cell records


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One case per (n, impl), grouped by n; CUDA asked for on a machine without it skips cleanly,
    any other bad setting is an error."""
    if "case" not in metafunc.fixturenames:
        return
    try:
        s = settings_from_config(metafunc.config)
    except NoCudaDevice as e:
        metafunc.parametrize("case", [pytest.param(None, marks=pytest.mark.skip(reason=str(e)))])
        return
    cases = [(n, impl) for n in s.sizes for impl in s.impls]
    metafunc.parametrize("case", cases, ids=[f"n{n:03d}-{impl}" for n, impl in cases])


@functools.lru_cache(maxsize=1)
def pristine_world(s: BenchSettings, n: int) -> World:
    """The world of n sequences, built once per n (one at a time is kept)."""
    return build_bench_world(s, n)


@functools.lru_cache(maxsize=1)
def step_bench(s: BenchSettings, n: int, impl: str) -> StepBench:
    """The pristine world of n sequences and the model every round of `impl` runs on, made once per
    (n, impl): a copy of the world's model as the implementation prepares it
    (`properties.impl.Impl.prepare_model`: the fully batched step's `VectorMtpModel`, the others'
    `BatchedMtpModel`). Each round copies the world into it, so the graphs the fully batched step
    captures stay valid from round to round."""
    runs, base = bench_impl(impl), pristine_world(s, n)
    return StepBench(s, runs, base, runs.prepare_model(base.model.clone()))


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} intra-op thread(s))"


def plan_rounds(seconds_per_call: float, s: BenchSettings) -> int:
    """Rounds that fill the time budget, within the settings' bounds."""
    wanted = math.ceil(s.budget_s / max(seconds_per_call, 1e-6))
    return max(s.min_rounds, min(s.max_rounds, wanted))


def test_bootstrap(benchmark: Any, case: tuple[int, str], bench_settings: BenchSettings, bandwidth: float) -> None:
    n, impl = case
    s = bench_settings
    bench = step_bench(s, n, impl)
    base, run = bench.base, bench.run
    probes: list[float] = []  # the host's speed just before each round (`benchmarks.host_probe`)

    def setup() -> tuple[tuple[World], dict[str, Any]]:
        world = bench.fresh()  # the copy and its garbage collection are the setup's, not the step's time
        probes.append(host_probe_s())
        return (world,), {}

    # The fully batched step runs a shape's passes eagerly first, captures their graphs the second
    # time and replays them from then on: the third warm-up, a replay, is timed to plan the rounds.
    for _ in range(3):
        (warm,), _ = setup()
        t0 = time.perf_counter()
        run(warm)
        warm_s = time.perf_counter() - t0
    probe = setup()[0][0]
    counts = count_ops(lambda: run(probe), s.device)
    drafting = [len(probe.active[i].pending_drafts) == s.ladder_nd for i in probe.idxs]
    assert 2 * sum(drafting) >= n, f"only {sum(drafting)} of {n} rows drafted: the mix is not what is measured"

    nbytes = step_bytes(base.model.cfg, base.model.weights, cache_lens(base), drafting, s.ladder_nd)
    benchmark.group = f"bootstrap {s.mix} n={n:03d}"
    # threads: the root conftest's MTP_VERIFY_THREADS (default 1)
    info = {"n": n, "impl": impl, "device": s.device, "device_name": device_name(s.device),
            "threads": torch.get_num_threads(), **{k: getattr(s, k) for k in RECORDED},
            "cache_tokens": sum(cache_lens(base)), "rows_drafting": sum(drafting), "bytes": nbytes,
            "bandwidth_Bps": bandwidth, "floor_s": nbytes / bandwidth, "device_ops": counts.device_ops,
            "host_reads": counts.host_reads if s.on_cuda else None}  # fmt: skip
    benchmark.extra_info.update(info)

    rounds = s.min_rounds if benchmark.disabled else plan_rounds(warm_s, s)
    # Each round's setup collects the last round's garbage. A full collection walks every object of the
    # process (about 0.1 s here, hundreds of rounds a cell): everything alive now outlives the cell, so it
    # goes into the permanent generation first (as serving engines do after start-up), and a round's
    # collection walks only what the rounds made.
    gc.collect()
    gc.freeze()
    probes.clear()
    try:
        benchmark.pedantic(run, setup=setup, rounds=rounds, warmup_rounds=s.warmup_rounds, iterations=1)
    finally:
        gc.unfreeze()
    benchmark.extra_info["host_probe_s"] = probes[len(probes) - rounds :]  # the timed rounds', in order
