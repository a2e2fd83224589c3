"""The promoted failures are there: `properties/step/regressions/` holds at least one case (written by
`python -m properties.failures.promote`), which `properties/step/test_regressions.py` replays against the
implementation under test."""

from __future__ import annotations

import pytest

from properties.failures.promote import REGRESSIONS

pytestmark = pytest.mark.self_test


def test_there_are_regression_cases() -> None:
    assert sorted(REGRESSIONS.glob("*.json")), f"no regression case in {REGRESSIONS}"
