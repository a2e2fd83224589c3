"""The two promote commands share one flow (`properties.failures.regression_files.promote_main`): a promoted
case is written, said where it is replayed and checked here now; a case of the same name with other
contents is refused with exit 2 and a reason, and the kept case is left as it was."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

import pytest

from properties.failures import promote as step_promote
from properties.failures.promote import REGRESSIONS
from properties.generations import promote as generation_promote
from properties.generations.promote import GENERATION_REGRESSIONS


@pytest.mark.parametrize(
    ("command", "case", "replayed_by"),
    [
        (step_promote, REGRESSIONS / "b6-argmax-tokens-only-for-greedy-rows.json", "test_regressions.py"),
        (generation_promote, GENERATION_REGRESSIONS / "group-proposes-across-steps.json", "test_p9_generations.py"),
    ],
    ids=["step", "generation"],
)
def test_a_promoted_case_is_checked_here_and_a_clash_is_refused(
    command: ModuleType, case: Path, replayed_by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(command, "promote", functools.partial(command.promote, dest_dir=tmp_path))
    assert command.main([str(case), "--name", "kept"]) == 0
    out = capsys.readouterr().out
    kept = tmp_path / "kept.json"
    assert f"promoted to {kept}; " in out and replayed_by in out and "it passes here now" in out
    before = kept.read_text()
    assert command.main([str(case), "--name", "kept", "--note", "another note"]) == 2
    assert "exists with another" in capsys.readouterr().err
    assert kept.read_text() == before
