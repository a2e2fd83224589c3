"""Spending a budget in rounds. Hypothesis has no time limit, only `max_examples`, so a run goes in
rounds, each a fresh pytest run: a short calibration round, then rounds sized from what each test
showed so far (`next_plan`). A round of `s` seconds on `w` workers has `s x w` worker seconds to
give out. Cheap tests (`is_capped`) get at most `CAPPED_EXAMPLES` a round; the side-by-side
properties share the rest in equal worker time, each at its own cost an example. A property split
over cases (`properties.run.shards`) is planned as one test, its cases' times and examples added
up (`property_id`), and its plan dealt over its cases as the profile's count is."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from nightly.results import Case
from properties.run.shards import property_id

CALIBRATION_EXAMPLES = 10
CALIBRATION_PER_WORKER = 2  # the calibration round gives every worker this many examples of each test
# Hypothesis's first examples are its smallest, so a cost measured on the calibration round alone is
# low (by about half for the larger properties, measured on the CPU).
CALIBRATION_BIAS = 2.0
MIN_ROUND_SECONDS = 20.0  # a round planned for less test time than this is not worth starting
ROUNDS_PER_BUDGET = 4  # a long run rewrites its report at least this often
MAX_EXAMPLES = 1_000_000
# Capped: examples under `CHEAP_SECONDS` each on one worker (a truth table), or fewer than
# `SIDE_BY_SIDE_SHARE` of them running the two worlds side by side (a gate table, an input check).
CHEAP_SECONDS = 0.005
SIDE_BY_SIDE_SHARE = 0.5
CAPPED_EXAMPLES = 500  # per capped test and round, over every worker of the host


@dataclass(slots=True, frozen=True)
class Plan:
    """`max_examples` per test for one round over all workers: `tests[property_id(nodeid)]` (a
    split property's over all its cases), else `default` (None: the profile's own)."""

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


@dataclass(slots=True)
class RoundInfo:
    """One round: its plan and what it was sized for, its time, pytest's exit status, and why it was
    stopped early ("" when it ran to its end)."""

    round: int
    planned: str
    plan: Plan
    seconds: float = 0.0
    exit_code: int | None = None
    stopped: str = ""

    @property
    def died(self) -> bool:
        """Whether its pytest ended by itself without an exit status of its own (killed by a signal):
        it wrote no JUnit file, and the test it was running crashed."""
        return not self.stopped and self.exit_code is not None and not 0 <= self.exit_code <= 5


@dataclass(slots=True, frozen=True)
class Rate:
    """What a test showed so far: worker seconds per example and side-by-side runs per example."""

    seconds: float
    runs: float = 1.0


def calibration_examples(workers: int) -> int:
    """Examples per test of the calibration round: at least `CALIBRATION_PER_WORKER` a worker."""
    return max(CALIBRATION_EXAMPLES, CALIBRATION_PER_WORKER * max(workers, 1))


def is_capped(rate: Rate) -> bool:
    """True for a cheap test: under `CHEAP_SECONDS` an example, or fewer than `SIDE_BY_SIDE_SHARE`
    of its examples run side by side."""
    return rate.seconds < CHEAP_SECONDS or rate.runs < SIDE_BY_SIDE_SHARE


def rates(cases: list[Case], calibration_only: bool) -> dict[str, Rate]:
    """Per test (a split property's cases together, `property_id`) that ran examples: the worker
    seconds an example of its costliest round (a bigger round costs more an example, as
    Hypothesis's examples grow; times `CALIBRATION_BIAS` after the calibration round alone), and its
    side-by-side runs per example."""
    per: dict[str, dict[int, list[float]]] = {}
    for c in cases:
        acc = per.setdefault(property_id(c.nodeid), {}).setdefault(c.round, [0.0, 0, 0])
        acc[0] += c.seconds
        acc[1] += c.examples
        acc[2] += int(c.counts.get("runs", 0))
    bias = CALIBRATION_BIAS if calibration_only else 1.0
    out = {}
    for nodeid, rounds in per.items():
        examples = sum(r[1] for r in rounds.values())
        if examples:
            cost = max(r[0] / r[1] for r in rounds.values() if r[1])
            out[nodeid] = Rate(cost * bias, sum(r[2] for r in rounds.values()) / examples)
    return out


def overhead(wall_seconds: float, cases: list[Case]) -> float:
    """What a round cost besides its tests: its wall time less the busiest worker's test time."""
    busy: dict[str, float] = {}
    for c in cases:
        busy[c.worker] = busy.get(c.worker, 0.0) + c.seconds
    return max(0.0, wall_seconds - max(busy.values(), default=0.0))


def exhausted(plan: Plan, cases: list[Case]) -> set[str]:
    """The tests (a split property's cases together, `property_id`) that ran fewer examples than
    `plan` gave them: Hypothesis found nothing more to try (or the test failed), so more time would
    not have been used."""
    ran: dict[str, int] = {}
    for c in cases:
        key = property_id(c.nodeid)
        ran[key] = ran.get(key, 0) + c.examples
    return {n for n, k in ran.items() if (planned := plan.for_test(n)) is not None and k < planned}


def next_round_seconds(remaining: float, budget: float, overhead: float) -> float:
    """Test seconds for the next round out of `remaining` of a `budget`, a round costing `overhead`
    besides its tests: a `ROUNDS_PER_BUDGET`-th of the budget, the whole rest when less than a
    round would be left after it, 0.0 when not even one round is worth starting."""
    usable = remaining - overhead
    if usable < MIN_ROUND_SECONDS:
        return 0.0
    target = max(MIN_ROUND_SECONDS, budget / ROUNDS_PER_BUDGET)
    return usable if usable - target < MIN_ROUND_SECONDS + overhead else target


def weighted_plan(rates: dict[str, Rate], budget: float, fallback: int, exhausted_tests: set[str]) -> Plan:
    """Per test, its examples for a round of `budget` worker seconds. Capped tests and those that
    ran out of examples get `CAPPED_EXAMPLES`, or fewer when an equal share of the budget would not
    pay for that many; the others share what is left in equal time. When every test is capped,
    none is. `fallback` is for a test with no rate yet."""
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
        cost = rates[n].seconds
        plan[n] = max(1, min(MAX_EXAMPLES, int(left / len(heavy) / cost))) if cost > 0 else MAX_EXAMPLES
    return Plan(default=fallback, tests=dict(sorted(plan.items())))


def next_plan(
    rounds: list[RoundInfo], cases: list[Case], minutes: float | None, examples: int | None, workers: int, left: float
) -> tuple[Plan, str] | None:
    """The next round's plan and what it was sized for, from the rounds so far and their cases,
    with `left` seconds of a budget of `minutes` (None: no time budget) and `examples` per test
    asked for (None: size the rounds by time); None when the run is over."""
    if not rounds:
        n = examples if examples is not None else calibration_examples(workers)
        return Plan(default=n), f"{n} examples per test" + ("" if examples else " (calibration)")
    last = rounds[-1]
    if minutes is None or last.stopped:
        return None
    if examples is not None:
        return (Plan(default=examples), f"{examples} examples per test") if left > last.seconds else None
    last_cases = [c for c in cases if c.round == last.round]
    seconds = next_round_seconds(left, minutes * 60, overhead(last.seconds, last_cases))
    known = rates(cases, calibration_only=len(rounds) == 1)
    if seconds <= 0 or not known:
        return None
    done = exhausted(last.plan, last_cases)
    plan = weighted_plan(known, seconds * max(workers, 1), CALIBRATION_EXAMPLES, done)
    capped = sum(is_capped(r) or n in done for n, r in known.items())
    sizes = sorted(plan.tests.values())
    return plan, (
        f"sized for {seconds:.0f} s on {max(workers, 1)} worker(s): {sizes[0]}-{sizes[-1]} examples per test, "
        f"{capped} cheap test(s) capped"
    )
