"""Per-test counts the summary reads, keyed by the test that is running (`current_test`).

Two sources feed them: the harness counts side-by-side runs and the near-ties it forced (with
their largest margin) through `count_run`; Hypothesis's observability records count the examples
the test ran and the `event()`s and `target()`s they recorded (`count_observation`). Counts are per
process: under pytest-xdist each worker sends `snapshot(test)` to the controller with the report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

current_test = "outside pytest"
runs: Counter[str] = Counter()
decisions: Counter[str] = Counter()
near_ties: Counter[str] = Counter()
largest_near_tie: dict[str, float] = {}
examples: Counter[str] = Counter()
shrink_steps: Counter[str] = Counter()
gave_up: Counter[str] = Counter()
events: dict[str, Counter[str]] = {}
targets: dict[str, dict[str, float]] = {}

# Phases whose test cases are not new examples: shrinking a failure and explaining it.
NOT_EXAMPLE_PHASES = ("shrink", "explain")


def count_run(n_near_ties: int, margins: list[float], n_decisions: int = 0) -> None:
    """Count one side-by-side run of the current test, the decisions its reference made and those
    forced onto it (near-ties, with their reference margins)."""
    runs[current_test] += 1
    decisions[current_test] += n_decisions
    near_ties[current_test] += n_near_ties
    if margins:
        largest_near_tie[current_test] = max(largest_near_tie.get(current_test, 0.0), *margins)


def count_observation(observation: Any) -> None:
    """Count one Hypothesis observability record for the current test: a test case that passed or
    failed outside shrinking is an example, and its events and targets are counted with it; shrink
    and explain steps and invalid test cases are counted apart. Other records are ignored."""
    if getattr(observation, "type", None) != "test_case":
        return
    phase = getattr(observation.metadata, "phase", None)
    if observation.status == "gave_up":
        gave_up[current_test] += 1
    elif phase in NOT_EXAMPLE_PHASES:
        shrink_steps[current_test] += 1
    else:
        examples[current_test] += 1
        test_events = events.setdefault(current_test, Counter())
        test_targets = targets.setdefault(current_test, {})
        for key, value in observation.features.items():
            if key.startswith("target:"):
                label = key.removeprefix("target:")
                test_targets[label] = max(test_targets.get(label, float("-inf")), float(value))
            else:
                test_events[key] += 1


def snapshot(test: str) -> dict[str, Any]:
    """Every count of `test`, JSON-serialisable."""
    return {
        "examples": examples[test],
        "runs": runs[test],
        "decisions": decisions[test],
        "near_ties": near_ties[test],
        "largest_near_tie": largest_near_tie.get(test),
        "shrink_steps": shrink_steps[test],
        "gave_up": gave_up[test],
        "events": dict(events.get(test, {})),
        "targets": dict(targets.get(test, {})),
    }
