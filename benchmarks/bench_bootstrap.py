"""The bootstrap implementations side by side, one benchmark group per batch size n: by default the
per-sequence loop (`loop`), the literal batched step (`literal`) and the fully batched step
(`vector`), named as the suite's registry names them (`--bench-impls` picks others).

Every round runs one step on a fresh copy of the same world (the step mutates it), copied into one
model per (n, implementation) so that the fully batched step's CUDA graphs are captured once, in the
warm-up runs. Copying (and collecting the copy's garbage) is outside the timed region, and the
device is synchronised at the end of the setup and of the timed call, so a CUDA round times the
whole step's device work. Before timing, one counted run (not timed) records the device operators
and host reads the step issues (a graph replay is not an operator: it counts as none) and which rows
drafted; the memory floor of the batched step's work follows from those rows (`benchmarks.floor`).
Case ids are `n<size>-<impl>` (`-k vector`, `-k "loop and n064"`), and `extra_info["impl"]` is the name.
"""

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
from benchmarks.worlds import bench_impl, build_bench_world, cache_lens, sync
from properties.world import World


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
def working_model(s: BenchSettings, n: int, impl: str) -> Any:
    """The model every round of `impl` runs on, made once per (n, impl): a copy of the pristine
    world's model as the implementation prepares it (`properties.impl.Impl.prepare_model`: the fully
    batched step's `VectorMtpModel`, the others' `BatchedMtpModel`). Each round copies the world
    into it, so the graphs the fully batched step captures stay valid from round to round."""
    return bench_impl(impl).prepare_model(pristine_world(s, n).model.clone())


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
    step = bench_impl(impl).step
    base = pristine_world(s, n)

    work = working_model(s, n, impl)
    probes: list[float] = []  # the host's speed just before each round (`benchmarks.host_probe`)

    def setup() -> tuple[tuple[World], dict[str, Any]]:
        world = base.clone(into=work)
        gc.collect()  # the copy's garbage is the setup's: a collection of it is not the step's time
        sync(s.device)
        probes.append(host_probe_s())
        return (world,), {}

    def run(w: World) -> None:
        step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
        sync(s.device)

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
    benchmark.extra_info.update(
        {
            "n": n,
            "impl": impl,
            "device": s.device,
            "device_name": device_name(s.device),
            "threads": torch.get_num_threads(),  # the root conftest's MTP_VERIFY_THREADS (default 1)
            "dtype": s.dtype,
            "numerics": s.numerics,
            "mix": s.mix,
            "hidden": s.hidden,
            "vocab_size": s.vocab_size,
            "ladder_nd": s.ladder_nd,
            "group_cap": s.group_cap,
            "cache_tokens": sum(cache_lens(base)),
            "rows_drafting": sum(drafting),
            "bytes": nbytes,
            "bandwidth_Bps": bandwidth,
            "floor_s": nbytes / bandwidth,
            "device_ops": counts.device_ops,
            "host_reads": counts.host_reads if s.on_cuda else None,
        }
    )

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
