"""The near-tie budget (a pytest plugin the root conftest loads): a test whose side-by-side runs had
more than `MTP_VERIFY_FORCED_BUDGET` (default 1 %) of the reference's decisions forced onto the
implementation's choice fails, even where every forced decision was explained by rounding.

Each forced decision is a place the comparison could not check the implementation's choice against
the reference's; a few are what kernels that round differently produce, many mean the comparison
checks little (a biased kernel, a model whose rows are all near-ties). One forced decision is always
allowed, so a short test is not failed by a single tie. A test marked `forces_decisions` (one that
forces decisions on purpose, to test the forcing) is exempt.
"""

from __future__ import annotations

import math
import os
from collections.abc import Generator

import pytest

from properties import counters

ENV_FORCED_BUDGET = "MTP_VERIFY_FORCED_BUDGET"
DEFAULT_BUDGET = 0.01


def budget() -> float:
    """The allowed fraction of forced decisions; ValueError naming the variable when malformed."""
    raw = os.environ.get(ENV_FORCED_BUDGET, "").strip()
    if not raw:
        return DEFAULT_BUDGET
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{ENV_FORCED_BUDGET}={raw!r}: expected a fraction in [0, 1]") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{ENV_FORCED_BUDGET}={raw!r}: expected a fraction in [0, 1]")
    return value


def over_budget(forced: int, decisions: int, fraction: float) -> str | None:
    """Why `forced` of `decisions` is over the budget, or None when it is within it."""
    allowed = max(1, math.floor(fraction * decisions))
    if forced <= allowed:
        return None
    return (
        f"near-tie budget exceeded: {forced} of {decisions} reference decisions were forced onto the "
        f"implementation's choice (allowed {allowed}, {fraction:.1%}; {ENV_FORCED_BUDGET} sets it). Each was "
        "explained by rounding, but this many leave the comparison checking little: look at the forced "
        "decisions in a failing example's report (largest margins) and at the kernels' drift."
    )


@pytest.hookimpl
def pytest_runtest_setup(item: pytest.Item) -> None:
    counters.current_test = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.passed and item.get_closest_marker("forces_decisions") is None:
        why = over_budget(counters.near_ties[item.nodeid], counters.decisions[item.nodeid], budget())
        if why is not None:
            report.outcome = "failed"
            report.longrepr = why
    return report
