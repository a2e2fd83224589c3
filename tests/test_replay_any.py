"""`python -m properties.replay` and `python -m properties.promote`: one command for every kind of
failure file, each file sent to the replay (or promote) of its kind, the kind's options passed on."""

from __future__ import annotations

from pathlib import Path

import pytest

import properties.promote as promote_any
import properties.replay as replay_any
from properties.failures.promote import REGRESSIONS

STEP_CASE = REGRESSIONS / "b6-argmax-tokens-only-for-greedy-rows.json"
GENERATION_CASE = next((Path(replay_any.__file__).parent / "generations" / "regressions").glob("*.json"))


def _draw_case(tmp_path: Path) -> Path:
    path = tmp_path / "draws-0.json"
    path.write_text('{"spec": {}, "sources": [0], "seed": 1, "alpha": 0.0, "triples": [], "calls": 1, "sampler": ""}')
    return path


def test_each_kind_of_file_goes_to_its_own_replay(tmp_path: Path) -> None:
    assert replay_any.kind_of(STEP_CASE)[1] == "properties.failures.replay"
    assert replay_any.kind_of(GENERATION_CASE)[1] == "properties.generations.replay"
    assert replay_any.kind_of(_draw_case(tmp_path))[1] == "properties.sampling.test_step_draws"


def test_a_step_case_replays_and_fails_against_a_step_that_does_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert replay_any.main([str(STEP_CASE), "--device", "cpu"]) == 0
    assert "no difference" in capsys.readouterr().out
    assert replay_any.main([str(STEP_CASE), "--impl", "mutants.wrong_steps.null:do_nothing"]) == 1
    assert "python -m properties.replay" in capsys.readouterr().out  # the report names the one command


def test_the_kinds_options_reach_its_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import properties.generations.replay as generations_replay

    seen: list[list[str]] = []
    monkeypatch.setattr(generations_replay, "main", lambda argv: seen.append(argv) or 7)
    assert replay_any.main([str(GENERATION_CASE), "--impl", "vector"]) == 7
    assert seen == [[str(GENERATION_CASE), "--impl", "vector"]]


def test_a_file_that_is_no_replay_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert replay_any.main([str(bad)]) == 2
    assert "not a replay file" in capsys.readouterr().err
    assert replay_any.main([str(tmp_path / "missing.json")]) == 2


def test_promote_sends_each_kind_to_its_promote_and_refuses_a_draw_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import properties.failures.promote as step_promote
    import properties.generations.promote as generation_promote

    seen: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(step_promote, "main", lambda argv: seen.append(("step", argv)) or 0)
    monkeypatch.setattr(generation_promote, "main", lambda argv: seen.append(("generation", argv)) or 0)
    assert promote_any.main([str(STEP_CASE), "--name", "x"]) == 0
    assert promote_any.main([str(GENERATION_CASE), "--name", "y"]) == 0
    assert seen == [("step", [str(STEP_CASE), "--name", "x"]), ("generation", [str(GENERATION_CASE), "--name", "y"])]
    assert promote_any.main([str(_draw_case(tmp_path)), "--name", "z"]) == 2
    assert "is not promoted" in capsys.readouterr().err
