"""`python -m properties.failures.replay`: a replay file keeps its numerics and dtype, `--device` moves it,
and the replay runs every check a regression must pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from properties.failures import replay
from properties.failures.promote import REGRESSIONS, load_regression, regression_text


def _fast_bf16_file(tmp_path: Path) -> Path:
    spec, note = load_regression(REGRESSIONS / "b6-argmax-tokens-only-for-greedy-rows.json")
    spec = replace(spec, model=replace(spec.model, numerics="fast", dtype="bfloat16", device="cuda"))
    path = tmp_path / "found-on-a-gpu.json"
    path.write_text(regression_text(spec, note).replace('"device": "cpu"', '"device": "cuda"'))
    return path


def test_a_gpu_bf16_failure_replays_in_bf16_on_the_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert replay.main([str(_fast_bf16_file(tmp_path)), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "fast numerics, bfloat16 on cpu" in out and "no difference" in out


def test_an_unreadable_replay_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert replay.main([str(bad)]) == 2
    assert "cannot read replay spec" in capsys.readouterr().err
