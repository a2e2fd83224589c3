"""The host throughput measurement on the CPU, tiny: two workers, each its own examples, and the
rates they add up to, over a fixed count or a time window."""

from __future__ import annotations

import time

import pytest

from benchmarks.host_throughput import check_until, draw_specs, measure
from benchmarks.settings import HostConfig
from properties.config import RunConfig


def test_each_worker_draws_its_own_examples() -> None:
    run = RunConfig("cpu", "exact", ("float64",), 2)
    assert draw_specs(run, 3, stream=0) == draw_specs(run, 3, stream=0), "a stream is reproducible"
    assert draw_specs(run, 3, stream=0) != draw_specs(run, 3, stream=1)


def test_two_cpu_workers_measure_the_hosts_rate_and_each_ones() -> None:
    cfg = HostConfig(device="cpu", numerics="exact", dtype="float64", max_n=2, workers=2, examples=3)
    r = measure(cfg, timeout_s=240)
    assert (r.examples, r.mismatched) == (6, 0)
    assert [w["worker"] for w in r.per_worker] == [0, 1] and all(w["examples"] == 3 for w in r.per_worker)
    assert r.span_seconds >= max(w["seconds"] for w in r.per_worker) > 0
    assert r.examples_per_s == 6 / r.span_seconds and r.examples_per_s_per_worker > 0


def test_a_time_window_counts_the_examples_finished_inside_it() -> None:
    cfg = HostConfig(device="cpu", numerics="exact", dtype="float64", max_n=2, workers=2, examples=400, seconds=1.5)
    r = measure(cfg, timeout_s=240)
    assert r.mismatched == 0 and 0 < r.examples < 800
    assert all(w["seconds"] == 1.5 and w["examples"] > 0 for w in r.per_worker)
    assert 1.5 <= r.span_seconds < 2.5 and r.examples_per_s == r.examples / r.span_seconds


def test_a_window_longer_than_the_examples_fails_loudly() -> None:
    run = RunConfig("cpu", "exact", ("float64",), 2)
    specs = draw_specs(run, 2, stream=0)
    with pytest.raises(RuntimeError, match="2 examples ran out before the window closed"):
        check_until(specs, time.monotonic() + 3600)
    late = check_until(specs, time.monotonic() - 1)
    assert late == (0, 0), "an example finished after the window closed is not counted"
