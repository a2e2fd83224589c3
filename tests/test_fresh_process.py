"""Examples run as the first steps of a new process, forked from a server that imported the suite and
ran nothing else, on the CPU and on CUDA (the server never initialized CUDA, so its children can
use it however much the test process has); a spawned interpreter would run every check too."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from properties.config import RunConfig
from properties.run import fresh_process
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs

RUN = RunConfig("cpu", "exact", ("float32",), 4)


def test_every_device_forks_from_the_server() -> None:
    assert fresh_process._server().get_start_method() == "forkserver"


def test_the_servers_children_ask_nvml_about_cuda_and_this_process_is_as_it_was() -> None:
    before = dict(os.environ)
    with ProcessPoolExecutor(max_workers=1, mp_context=fresh_process._server()) as pool:
        seen = {k: pool.submit(os.getenv, k).result() for k in fresh_process.SERVER_ENV}
    assert seen == fresh_process.SERVER_ENV
    assert dict(os.environ) == before


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
@settings(max_examples=1, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(spec=world_specs(RUN))
def test_either_way_a_fresh_process_runs_every_check(
    monkeypatch: pytest.MonkeyPatch, method: str, spec: WorldSpec
) -> None:
    ctx = fresh_process._server() if method == "forkserver" else multiprocessing.get_context("spawn")
    monkeypatch.setattr(fresh_process, "_server", lambda: ctx)
    assert fresh_process.run_fresh([spec], RUN) == []


CUDA_RUN = RunConfig("cuda:0", "exact", ("float32",), 4)


@pytest.mark.gpu
@settings(max_examples=2, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(spec=world_specs(CUDA_RUN))
def test_a_child_of_the_server_runs_on_cuda_after_this_process_did(spec: WorldSpec) -> None:
    torch.ones(1, device="cuda").sum().item()  # this process has initialized CUDA
    assert spec.model.device.startswith("cuda")
    assert fresh_process.run_fresh([spec], CUDA_RUN) == []
