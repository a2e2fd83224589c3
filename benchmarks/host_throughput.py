"""P1 examples per second from every worker of one host: `workers` processes (spawned, one torch
thread each, worker k on GPU k modulo the GPU count, or on the CPU), each checking its own P1
examples (`run_side_by_side` then `check_equivalence`) drawn from the run's strategies with a seed of
its own. The workers draw and warm up first, then start together. Two ways to count:
- a fixed count (`seconds` = 0): each worker checks its `examples`; the host's rate is every
  worker's examples over the span from the first start to the last end, so the slowest worker's
  draw of mixes sets it (with few examples a worker, that straggler dominates);
- a time window (`seconds` > 0): each worker keeps checking its examples (`examples` of them drawn
  beforehand, a bound) until the window closes; the host's rate is the examples finished inside the
  window over its length: the sustained rate of a run that goes on, as a nightly does. A worker
  that runs out of examples before the window closes fails the measurement.
The measurement takes its configuration as a `HostConfig` argument; `benchmarks.settings.host_config`
builds one from options and the environment."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from dataclasses import asdict, dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from benchmarks.settings import HostConfig
from properties.run.gpu import cuda_mps


def draw_specs(run: Any, count: int, stream: int) -> list[Any]:
    """`count` P1 examples from `world_specs(run)`, drawn from seed `stream` (the same list for the
    same seed and strategies)."""
    from properties.worlds.strategies import world_specs

    drawn: list[Any] = []

    @seed(stream)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(spec=world_specs(run))
    def collect(spec: Any) -> None:
        if len(drawn) < count:
            drawn.append(spec)

    collect()
    return drawn


def worker_device(kind: str, index: int) -> str:
    """cuda:i for worker `index` (spread over the visible GPUs), or cpu."""
    import torch

    if kind != "cuda":
        return "cpu"
    return f"cuda:{index % torch.cuda.device_count()}"


def check_until(specs: list[Any], deadline: float) -> tuple[int, int]:
    """Check `specs` in order until `deadline` (time.monotonic) passes: (examples finished by the
    deadline, mismatched among them). RuntimeError when the specs run out first."""
    from benchmarks.bench_p1_throughput import check_all

    done = mismatched = 0
    for spec in specs:
        bad = check_all((spec,))
        if time.monotonic() > deadline:
            return done, mismatched
        done, mismatched = done + 1, mismatched + bad
    raise RuntimeError(f"{len(specs)} examples ran out before the window closed: draw more")


def worker(index: int, cfg: HostConfig, start: Any, results: Any) -> None:
    """One worker process: draw and warm up, wait for every other worker, check its examples (all
    of them, or until the window closes), and put (index, examples, mismatched, start, end, cpu
    seconds) on `results`."""
    import torch

    torch.set_num_threads(1)
    from benchmarks.bench_p1_throughput import check_all
    from properties.config import RunConfig

    device = worker_device(cfg.device, index)
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    run = RunConfig(device, cfg.numerics, (cfg.dtype,), cfg.max_n, cfg.reference_device if device != "cpu" else "")
    specs = draw_specs(run, cfg.examples, stream=index)
    check_all(specs[:1])  # fills the weight caches a long run keeps warm
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start.wait()
    t0, c0 = time.monotonic(), time.process_time()
    if cfg.seconds > 0:
        done, mismatched = check_until(specs, t0 + cfg.seconds)
        results.put((index, done, mismatched, t0, t0 + cfg.seconds, time.process_time() - c0))
        return
    mismatched = check_all(specs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    results.put((index, len(specs), mismatched, t0, time.monotonic(), time.process_time() - c0))


@dataclass(slots=True)
class HostResult:
    """What a measurement found: examples and mismatches over all workers, the span, the host's
    examples a second, and per worker (examples, seconds, examples a second, CPU seconds)."""

    config: dict[str, Any]
    examples: int
    mismatched: int
    span_seconds: float
    examples_per_s: float
    per_worker: list[dict[str, float]]

    @property
    def examples_per_s_per_worker(self) -> float:
        """The mean of the workers' own rates."""
        return sum(w["examples_per_s"] for w in self.per_worker) / max(len(self.per_worker), 1)


def measure(cfg: HostConfig, timeout_s: float = 3600.0) -> HostResult:
    """Run `cfg.workers` worker processes and return what they measured. RuntimeError when a worker
    dies or does not report within `timeout_s`."""
    with cuda_mps() if cfg.mps else contextlib.nullcontext():
        return _measure(cfg, timeout_s)


def _measure(cfg: HostConfig, timeout_s: float) -> HostResult:
    ctx = mp.get_context("spawn")
    start, results = ctx.Barrier(cfg.workers), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(k, cfg, start, results), daemon=True) for k in range(cfg.workers)]
    for p in procs:
        p.start()
    got = []
    try:
        deadline = time.monotonic() + timeout_s
        while len(got) < cfg.workers:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError(f"a worker died: exit codes {[p.exitcode for p in procs]}")
            try:
                got.append(results.get(timeout=1.0))
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {len(got)} of {cfg.workers} workers reported") from None
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    got.sort()
    span = max(r[4] for r in got) - min(r[3] for r in got)
    examples = sum(r[1] for r in got)
    per_worker = [
        {"worker": k, "examples": n, "seconds": end - t0, "examples_per_s": n / (end - t0), "cpu_seconds": cpu}
        for k, n, _, t0, end, cpu in got
    ]
    return HostResult(asdict(cfg), examples, sum(r[2] for r in got), span, examples / span, per_worker)
