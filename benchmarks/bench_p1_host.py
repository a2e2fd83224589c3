"""P1 throughput of a whole GPU host: examples a second from one worker process per CPU core, spread
over the GPUs, at n <= 64 in fast bf16 (`benchmarks.host_throughput`; the suite's `--numerics`,
`--dtype`, `--max-n`, `--reference-device` and the `--bench-host-*` options change it, as
`benchmarks.settings.host_config` reads them). Skips without a CUDA device. The host's rate and
each worker's go into the benchmark's extra_info."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from benchmarks.host_throughput import HostResult, measure
from benchmarks.settings import host_config_from_config


@pytest.mark.gpu
def test_p1_host_throughput(benchmark: Any, request: pytest.FixtureRequest) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    cfg = host_config_from_config(request.config, "cuda")
    benchmark.group = "p1 host throughput"
    result: HostResult = benchmark.pedantic(measure, args=(cfg,), rounds=1, iterations=1)
    benchmark.extra_info.update(
        {**result.config, "gpus": torch.cuda.device_count(), "examples": result.examples,
         "mismatched_examples": result.mismatched, "span_s": result.span_seconds,
         "examples_per_s": result.examples_per_s, "examples_per_s_per_worker": result.examples_per_s_per_worker,
         "per_worker": result.per_worker}
    )  # fmt: skip
    print(
        f"\nP1 on {cfg.workers} workers x {torch.cuda.device_count()} GPU(s), n <= {cfg.max_n}, {cfg.numerics} "
        f"{cfg.dtype}: {result.examples_per_s:.1f} examples/s for the host, "
        f"{result.examples_per_s_per_worker:.2f} per worker ({result.mismatched} mismatched)"
    )
