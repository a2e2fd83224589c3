"""The near-tie budget: a test whose side-by-side runs had more than the run's budget
(`RunConfig.forced_budget`, default 1 %) of the reference's decisions forced onto the
implementation's choice fails, even where every forced decision was explained by rounding; the
plugin (`properties.run.plugin`) applies it to each test.

Each forced decision is a place the comparison could not check the implementation's choice against
the reference's; a few are what kernels that round differently produce, many mean the comparison
checks little (a biased kernel, a model whose rows are all near-ties). One forced decision is always
allowed, so a short test is not failed by a single tie. A test marked `forces_decisions` (one that
forces decisions on purpose, to test the forcing) is exempt.
"""

from __future__ import annotations

import math


def over_budget(forced: int, decisions: int, fraction: float) -> str | None:
    """Why `forced` of `decisions` is over the budget, or None when it is within it."""
    allowed = max(1, math.floor(fraction * decisions))
    if forced <= allowed:
        return None
    return (
        f"near-tie budget exceeded: {forced} of {decisions} reference decisions were forced onto the "
        f"implementation's choice (allowed {allowed}, {fraction:.1%}; --forced-budget sets it). Each was "
        "explained by rounding, but this many leave the comparison checking little: look at the forced "
        "decisions in a failing example's report (largest margins) and at the kernels' drift."
    )
