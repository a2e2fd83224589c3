"""The main job's workers: one per core on the CPU unless told otherwise; 0 or 1 runs in-process;
on CUDA, workers that share a GPU share it through MPS unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from properties import verify
from properties.gpu import PIPE_ENV
from properties.verify import use_mps, workers


def test_auto_is_one_worker_per_core_on_the_cpu_and_a_count_is_taken_as_given() -> None:
    assert workers("auto", "cpu") == (os.cpu_count() or 1)
    assert workers("3", "cpu") == 3 and workers("0", "cuda") == 0


def test_mps_by_default_only_where_workers_share_a_gpu_and_the_daemon_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(verify.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert use_mps("auto", 1, 4) and use_mps("auto", 2, 8)
    assert not use_mps("auto", 1, 1) and not use_mps("auto", 2, 2) and not use_mps("auto", 0, 2)
    assert not use_mps("off", 1, 4) and use_mps("on", 1, 1)
    monkeypatch.setattr(verify.shutil, "which", lambda name: None)
    assert not use_mps("auto", 1, 4)


def test_mps_on_without_a_gpu_is_refused_before_pytest_starts(capsys: pytest.CaptureFixture[str]) -> None:
    assert verify.main(["--device", "cpu", "--mps", "on", "--workers", "2"]) == 2
    assert "--mps on: the run has no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize(("mode", "code"), [("auto", 0), ("on", 2)])
def test_a_daemon_that_does_not_start_fails_mps_on_and_leaves_auto_without_it(
    mode: str, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    control = tmp_path / "nvidia-cuda-mps-control"
    control.write_text("#!/bin/sh\necho no GPU here >&2\nexit 1\n")
    control.chmod(0o755)
    monkeypatch.delenv(PIPE_ENV, raising=False)
    monkeypatch.setattr(verify.shutil, "which", lambda name: str(control))
    monkeypatch.setattr(verify, "gpus_of", lambda device: 1)
    ran: list[list[str]] = []
    monkeypatch.setattr(verify.pytest, "main", lambda args: ran.append(args) or 0)
    assert verify.main(["--device", "cuda", "--workers", "2", "--mps", mode]) == code
    out = capsys.readouterr()
    assert "exited 1: no GPU here" in out.out + out.err
    assert len(ran) == (1 if mode == "auto" else 0)
