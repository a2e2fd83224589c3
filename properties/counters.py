"""Per-test counts the summary reads: examples run and near-ties forced (with their largest
margin), keyed by the test that is running."""

from __future__ import annotations

from collections import Counter

current_test = "outside pytest"
examples: Counter[str] = Counter()
near_ties: Counter[str] = Counter()
largest_near_tie: dict[str, float] = {}


def count_run(n_near_ties: int, margins: list[float]) -> None:
    examples[current_test] += 1
    near_ties[current_test] += n_near_ties
    if margins:
        largest_near_tie[current_test] = max(largest_near_tie.get(current_test, 0.0), *margins)
