"""A fixed sample of a strategy: the same values in every run and every session, for measurements
(generator statistics, benchmarks) rather than tests."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from properties.hypothesis_internals import without_local_constants


def fixed_sample(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """`count` values of `strategy`, derandomized and generated only (no database, no shrinking).

    Hypothesis mixes into its draws constants it harvests from every local module imported so far,
    so which modules a session happened to import would change a derandomized sample: none of those
    constants is drawn here."""
    drawn: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=strategy)
    def collect(value: Any) -> None:
        if len(drawn) < count:
            drawn.append(value)

    with without_local_constants():
        collect()
    return drawn
