"""`properties.run.gpu` against a stand-in control binary that keeps a log and a control file the way the
real daemon keeps its pipe; and the nightly's refusal of `--mps` without a GPU."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nightly.cli import main
from properties.run.gpu import LOG_ENV, PIPE_ENV, MpsError, cuda_mps

FAKE = """#!/bin/sh
echo "$@ $(cat -) pipe=$CUDA_MPS_PIPE_DIRECTORY" >> "{log}"
if [ "$1" = "-d" ]; then touch "$CUDA_MPS_PIPE_DIRECTORY/control"; exit {rc}; fi
rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"
"""


def fake_control(tmp_path: Path, rc: int = 0) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    binary = tmp_path / "nvidia-cuda-mps-control"
    binary.write_text(FAKE.format(log=log, rc=rc))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return binary, log


def test_starts_a_private_daemon_and_quits_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PIPE_ENV, raising=False)
    monkeypatch.delenv(LOG_ENV, raising=False)
    binary, log = fake_control(tmp_path)
    with cuda_mps(str(binary)) as env:
        pipe = env[PIPE_ENV]
        assert os.environ[PIPE_ENV] == pipe and os.environ[LOG_ENV] == env[LOG_ENV]
        assert (Path(pipe) / "control").exists()
    calls = log.read_text().splitlines()
    assert calls[0].startswith("-d") and calls[1].startswith(" quit")
    assert all(c.endswith(f"pipe={pipe}") for c in calls)
    assert PIPE_ENV not in os.environ and not Path(pipe).exists()


def test_quits_the_daemon_when_the_body_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PIPE_ENV, raising=False)
    binary, log = fake_control(tmp_path)
    with pytest.raises(KeyError), cuda_mps(str(binary)):
        raise KeyError("boom")
    assert "quit" in log.read_text()


def test_uses_a_running_daemon_and_leaves_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = tmp_path / "pipe"
    pipe.mkdir()
    (pipe / "control").touch()
    monkeypatch.setenv(PIPE_ENV, str(pipe))
    binary, log = fake_control(tmp_path)
    with cuda_mps(str(binary)) as env:
        assert env == {PIPE_ENV: str(pipe)}
    assert not log.exists() and (pipe / "control").exists()


def test_a_missing_binary_or_a_failed_start_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PIPE_ENV, raising=False)
    with pytest.raises(MpsError, match="not on this machine"), cuda_mps(str(tmp_path / "absent")):
        pass
    binary, _ = fake_control(tmp_path, rc=3)
    with pytest.raises(MpsError, match="exited 3"), cuda_mps(str(binary)):
        pass
    assert PIPE_ENV not in os.environ


def test_nightly_refuses_mps_without_a_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mps", "--device", "cpu", "--examples", "1", "--out", str(tmp_path / "o")]) == 2
    assert "--mps" in capsys.readouterr().err
