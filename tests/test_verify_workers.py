"""The main job's workers: a count is taken as given (0 or 1 runs in-process); `auto` is one per
core, on a GPU under MPS where its daemon is installed, else 4 per GPU taking turns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from properties.run import verify
from properties.run.gpu import PIPE_ENV
from properties.run.verify import mps_wanted, workers


def test_auto_is_one_worker_per_core_on_the_cpu_and_a_count_is_taken_as_given() -> None:
    assert workers("auto", "cpu") == (os.cpu_count() or 1)
    assert workers("3", "cpu") == 3 and workers("0", "cuda") == 0


def test_mps_by_default_on_a_gpu_where_the_daemon_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert mps_wanted("auto", 1) and mps_wanted("auto", 2) and mps_wanted("on", 1)
    assert not mps_wanted("auto", 0) and not mps_wanted("off", 1)
    monkeypatch.setattr(verify.shutil, "which", lambda name: None)
    assert not mps_wanted("auto", 1)
    with pytest.raises(ValueError, match="--mps on: the run has no CUDA device"):
        mps_wanted("on", 0)


def test_gpu_workers_are_one_per_core_under_mps_and_a_few_per_gpu_taking_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(verify.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(verify, "gpus_of", lambda device: 0 if device == "cpu" else 1)
    assert workers("auto", "cuda", shared=True) == 16 and workers("auto", "cpu") == 16
    assert workers("auto", "cuda") == verify.GPU_WORKERS and workers("5", "cuda", shared=True) == 5


def test_mps_on_without_a_gpu_is_refused_before_pytest_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert verify.main(["--device", "cpu", "--mps", "on", "--workers", "2"]) == 2
    assert "--mps on: the run has no CUDA device" in capsys.readouterr().err


START_FAILS = "#!/bin/sh\necho no GPU here >&2\nexit 1\n"
STARTS = '#!/bin/sh\nif [ "$1" = "-d" ]; then touch "$CUDA_MPS_PIPE_DIRECTORY/control"; fi\n'


Runs = list[tuple[list[str], str | None]]


def gpu_host(control_script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runs:
    """A host of one GPU and 16 cores whose MPS control binary runs `control_script`; the list
    receives the arguments of each pytest run the job starts, with the MPS pipe it ran under."""
    control = tmp_path / "nvidia-cuda-mps-control"
    control.write_text(control_script)
    control.chmod(0o755)
    monkeypatch.delenv(PIPE_ENV, raising=False)
    monkeypatch.setattr(verify.shutil, "which", lambda name: str(control))
    monkeypatch.setattr(verify, "gpus_of", lambda device: 1)
    monkeypatch.setattr(verify.os, "cpu_count", lambda: 16)
    runs: Runs = []
    monkeypatch.setattr(verify.pytest, "main", lambda args: runs.append((args, os.environ.get(PIPE_ENV))) or 0)
    return runs


@pytest.mark.parametrize(("mode", "code"), [("auto", 0), ("on", 2)])
def test_a_daemon_that_does_not_start_fails_mps_on_and_leaves_auto_without_it(
    mode: str, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = gpu_host(START_FAILS, tmp_path, monkeypatch)
    assert verify.main(["--device", "cuda", "--mps", mode]) == code
    out = capsys.readouterr()
    assert "exited 1: no GPU here" in out.out + out.err
    if mode == "on":
        assert runs == []
    else:  # on without MPS, with the workers of taking turns rather than one per core
        ((args, pipe),) = runs
        assert args[-2:] == ["-n", str(verify.GPU_WORKERS)] and pipe is None


def test_auto_on_a_gpu_runs_one_worker_per_core_inside_a_private_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = gpu_host(STARTS, tmp_path, monkeypatch)
    assert verify.main(["--device", "cuda"]) == 0
    ((args, pipe),) = runs
    assert args[-2:] == ["-n", "16"] and pipe is not None and PIPE_ENV not in os.environ
