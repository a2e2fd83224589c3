"""Sizing the rounds of a run. A time budget is spent in rounds, each a fresh pytest run drawing
fresh random examples: a short calibration round first, then rounds planned from what each test
showed so far. Every worker runs every test on its share of the examples (`nightly.spread`), so a
round has `workers x seconds` of worker time to give out. Cheap tests (`is_capped`: no side-by-side
run, or faster than `CHEAP_SECONDS` an example) get at most `CAPPED_EXAMPLES` a round; the
side-by-side properties share the rest equally."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

CALIBRATION_EXAMPLES = 10
MIN_ROUND_SECONDS = 20.0  # a round planned for less test time than this is not worth starting
ROUNDS_PER_BUDGET = 4  # a long run rewrites its report at least this often
MAX_EXAMPLES = 1_000_000
# Hypothesis's first examples are its smallest, so a rate measured on the calibration round alone
# is low (by about half for the larger properties, measured on the CPU).
CALIBRATION_BIAS = 2.0
CALIBRATION_PER_WORKER = 2  # the calibration round gives every worker this many examples of each test
# A test is capped when its examples take less than this on one worker (a truth table: hundreds a
# second), or when fewer than `SIDE_BY_SIDE_SHARE` of its examples run the two worlds side by side.
CHEAP_SECONDS = 0.005
SIDE_BY_SIDE_SHARE = 0.5
CAPPED_EXAMPLES = 500  # per capped test and round, over every worker of the host


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


@dataclass(slots=True, frozen=True)
class Rate:
    """What a test showed so far: worker seconds per example and side-by-side runs per example."""

    seconds: float
    runs: float = 1.0


def calibration_examples(workers: int) -> int:
    """Examples per test of the calibration round: `CALIBRATION_EXAMPLES`, or more so that every
    worker gets `CALIBRATION_PER_WORKER`."""
    return max(CALIBRATION_EXAMPLES, CALIBRATION_PER_WORKER * max(workers, 1))


def is_capped(rate: Rate) -> bool:
    """True for a cheap test (a truth table, an input check): its examples take under
    `CHEAP_SECONDS` each, or fewer than `SIDE_BY_SIDE_SHARE` of them run the worlds side by side."""
    return rate.seconds < CHEAP_SECONDS or rate.runs < SIDE_BY_SIDE_SHARE


def costliest_rate(per_round: list[tuple[float, int]], calibration_only: bool) -> float:
    """A test's expected worker seconds per example from its (seconds, examples) of each round so
    far: the costliest round's. A bigger round costs more an example than a small one (Hypothesis
    grows its examples, and its target phase climbs toward the largest mixes), so the average of
    the rounds so far would plan the next, bigger round short. Rounds without examples are left out;
    0.0 when none had any."""
    rates = [seconds / examples for seconds, examples in per_round if examples > 0]
    return max(rates, default=0.0) * (CALIBRATION_BIAS if calibration_only else 1.0)


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


def worker_seconds(round_seconds: float, workers: int) -> float:
    """The worker time a round of `round_seconds` has to give out: every worker (at least the one
    in-process) busy the whole round."""
    return round_seconds * max(workers, 1)


def exhausted(plan: Plan, examples: dict[str, int]) -> set[str]:
    """The tests that ran fewer examples than `plan` gave them: Hypothesis found nothing more to
    try, so more time would not have been used."""
    return {n for n, ran in examples.items() if (planned := plan.for_test(n)) is not None and ran < planned}


def weighted_plan(rates: dict[str, Rate], budget: float, fallback: int, exhausted_tests: set[str]) -> Plan:
    """Per test, its examples for a round with `budget` worker seconds. Capped tests (`is_capped`)
    and tests that ran out of examples get `CAPPED_EXAMPLES`, or less when an equal share of the
    budget would not pay for that many; the other tests share what is left equally, each at its own
    seconds per example. When every test is capped, none is: they share the budget equally.
    `fallback` is for tests with no rate yet."""
    capped = {n for n, r in rates.items() if is_capped(r) or n in exhausted_tests}
    if capped == set(rates):
        capped = set()
    equal = budget / max(len(rates), 1)
    plan: dict[str, int] = {}
    for n in capped:
        plan[n] = max(1, min(CAPPED_EXAMPLES, int(equal / rates[n].seconds) if rates[n].seconds > 0 else MAX_EXAMPLES))
    left = max(0.0, budget - sum(plan[n] * rates[n].seconds for n in capped))
    heavy = [n for n in rates if n not in capped]
    for n in heavy:
        spe = rates[n].seconds
        plan[n] = max(1, min(MAX_EXAMPLES, int(left / len(heavy) / spe))) if spe > 0 else MAX_EXAMPLES
    return Plan(default=fallback, tests=dict(sorted(plan.items())))
