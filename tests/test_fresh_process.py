"""Examples run as the first steps of a new process: forked from a server on the CPU, spawned on
CUDA (a forked child cannot use CUDA once its parent has); both run every check."""

from __future__ import annotations

import multiprocessing

import pytest
from hypothesis import HealthCheck, given, settings

from properties import fresh_process
from properties.config import RunConfig
from properties.specs import WorldSpec
from properties.strategies import world_specs

RUN = RunConfig("cpu", "exact", ("float32",), 4)


def test_cuda_runs_spawn_and_the_cpu_forks_from_a_server() -> None:
    assert fresh_process._server("cuda:0").get_start_method() == "spawn"
    assert fresh_process._server("cpu").get_start_method() == "forkserver"


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
@settings(max_examples=1, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(spec=world_specs(RUN))
def test_either_way_a_fresh_process_runs_every_check(
    monkeypatch: pytest.MonkeyPatch, method: str, spec: WorldSpec
) -> None:
    ctx = fresh_process._server("cpu") if method == "forkserver" else multiprocessing.get_context("spawn")
    monkeypatch.setattr(fresh_process, "_server", lambda device: ctx)
    assert fresh_process.run_fresh([spec], RUN) == []
