"""Every promoted failure, replayed through the full checks on every run: each file in
`properties/step/regressions/` (written by `python -m properties.failures.promote`) must pass P1 equivalence,
P3 call accounting and P7 logs on the run's device, with the implementation under test
(`properties/self_tests/test_regression_cases.py` checks that there are cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from properties.config import RunConfig
from properties.failures.promote import REGRESSIONS, full_check, load_regression, on_device
from properties.failures.report import format_report

CASES = sorted(REGRESSIONS.glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_regression(run: RunConfig, path: Path) -> None:
    spec, note = load_regression(path)
    sbs, mismatches = full_check(on_device(spec, run.device), run.impl, run.replays)
    assert not mismatches, f"regression {path.stem} ({note or 'no note'}):\n" + format_report(
        f"regression {path.stem}", sbs, mismatches
    )
