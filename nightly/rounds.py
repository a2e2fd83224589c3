"""Sizing the rounds of a run. A time budget is spent in rounds, each a fresh pytest run drawing
fresh random examples: a short calibration round first, then rounds planned from the seconds per
example each test showed so far, so that every test gets an equal share of every worker's time."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

CALIBRATION_EXAMPLES = 10
MIN_ROUND_SECONDS = 20.0  # a round planned for less test time than this is not worth starting
ROUNDS_PER_BUDGET = 4  # a long run rewrites its report at least this often
MAX_EXAMPLES = 1_000_000
# Hypothesis's first examples are its smallest, so a rate measured on the calibration round alone
# is low (by about half for the larger properties, measured on the CPU).
CALIBRATION_BIAS = 2.0


@dataclass(slots=True, frozen=True)
class Plan:
    """Hypothesis `max_examples` per test for one round: `tests[nodeid]`, else `default`
    (None: the profile's own)."""

    default: int | None = None
    tests: dict[str, int] = field(default_factory=dict)

    def for_test(self, nodeid: str) -> int | None:
        return self.tests.get(nodeid, self.default)

    def to_json(self) -> str:
        return json.dumps({"default": self.default, "tests": self.tests}, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        d = json.loads(text)
        return cls(d["default"], {k: int(v) for k, v in d["tests"].items()})


def seconds_per_example(seconds: float, examples: int, calibration_only: bool) -> float:
    """A test's expected seconds per example from what it ran so far (`examples` > 0)."""
    return seconds / examples * (CALIBRATION_BIAS if calibration_only else 1.0)


def round_overhead(wall_seconds: float, test_records: list[dict[str, Any]]) -> float:
    """What a round cost besides its tests: its wall time less the busiest worker's test time."""
    busy: dict[str, float] = {}
    for r in test_records:
        worker = str(r.get("worker", "main"))
        busy[worker] = busy.get(worker, 0.0) + float(r.get("seconds") or 0.0)
    return max(0.0, wall_seconds - max(busy.values(), default=0.0))


def next_round_seconds(remaining: float, budget: float, overhead: float) -> float:
    """Test seconds to plan the next round for, out of `remaining` seconds of a `budget` when a
    round costs `overhead` seconds besides its tests: a `ROUNDS_PER_BUDGET`-th of the budget, the
    whole rest when what would be left after it is too little for another round, and 0.0 when
    not even one round is worth starting."""
    usable = remaining - overhead
    if usable < MIN_ROUND_SECONDS:
        return 0.0
    target = max(MIN_ROUND_SECONDS, budget / ROUNDS_PER_BUDGET)
    if usable - target < MIN_ROUND_SECONDS + overhead:
        return usable
    return target


def seconds_per_test(round_seconds: float, workers: int, n_tests: int) -> float:
    """Each test's share of a round of `round_seconds` on `workers` workers (0: in process), every
    test getting the same time and no worker more than `round_seconds` whichever tests it draws."""
    return round_seconds / max(1, math.ceil(n_tests / max(workers, 1)))


def exhausted(plan: Plan, examples: dict[str, int]) -> set[str]:
    """The tests that ran fewer examples than `plan` gave them: Hypothesis found nothing more to
    try, so more time would not have been used."""
    return {n for n, ran in examples.items() if (planned := plan.for_test(n)) is not None and ran < planned}


def sized_plan(rates: dict[str, float], test_seconds: float, fallback: int) -> Plan:
    """Per test, the examples that fill `test_seconds` at its measured seconds per example
    (`rates`), at least 1 and at most `MAX_EXAMPLES`; `fallback` for tests with no rate yet."""
    tests = {
        nodeid: max(1, min(MAX_EXAMPLES, int(test_seconds / rate))) if rate > 0 else MAX_EXAMPLES
        for nodeid, rate in rates.items()
    }
    return Plan(default=fallback, tests=tests)
