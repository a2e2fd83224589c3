"""Adding up the rounds of a run: per test, the examples, side-by-side runs, near-ties (and the
largest margin), outcomes, time, the events and targets its examples recorded, and its failures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from nightly.failures import parse_failure

# How a round ended early: the runner stopped it at the time limit, or a person interrupted it.
STOPPED_BY_RUNNER = ("time limit", "interrupted")
OUTCOME_ORDER = ("passed", "skipped", "failed", "crashed")


@dataclass(slots=True)
class RoundInfo:
    """One round: what it planned, how long it took, how pytest exited, and why the runner stopped
    it early ("" when it ran to its end)."""

    round: int
    planned: str
    seconds: float = 0.0
    exit_code: int | None = None
    stopped: str = ""


@dataclass(slots=True)
class Failure:
    round: int
    outcome: str  # failed | crashed
    text: str
    replay: str | None = None
    reproduce: str | None = None


@dataclass(slots=True)
class Totals:
    nodeid: str
    passed: int = 0
    failed: int = 0
    crashed: int = 0
    skipped: int = 0
    unfinished: int = 0
    examples: int = 0
    runs: int = 0
    shrink_steps: int = 0
    gave_up: int = 0
    near_ties: int = 0
    largest_near_tie: float | None = None
    seconds: float = 0.0
    events: dict[str, int] = field(default_factory=dict)
    targets: dict[str, float] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]

    @property
    def result(self) -> str:
        """FAIL when any round failed or crashed; PASS when some round passed; else SKIP or
        UNFINISHED."""
        if self.failed or self.crashed:
            return "FAIL"
        if self.passed:
            return "PASS"
        return "SKIP" if self.skipped else "UNFINISHED"


def worst(outcomes: list[str]) -> str:
    return max(outcomes, key=OUTCOME_ORDER.index)


def add_counts(t: Totals, counts: dict[str, Any]) -> None:
    for name in ("examples", "runs", "shrink_steps", "gave_up", "near_ties"):
        setattr(t, name, getattr(t, name) + int(counts.get(name, 0)))
    margin = counts.get("largest_near_tie")
    if margin is not None:
        t.largest_near_tie = max(t.largest_near_tie or 0.0, float(margin))
    for name, n in counts.get("events", {}).items():
        t.events[name] = t.events.get(name, 0) + int(n)
    for label, value in counts.get("targets", {}).items():
        t.targets[label] = max(t.targets.get(label, float("-inf")), float(value))


def add_round(totals: dict[str, Totals], info: RoundInfo, recs: list[dict[str, Any]]) -> None:
    """Add one round's records to `totals`. A test collected but never reported is unfinished when
    the runner stopped the round; when the round's process died by itself, the first such test (the
    one running, as a process without workers runs them in order) crashed."""
    collected: list[str] = []
    by_test: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        if r.get("event") == "collected":
            collected = list(r["nodeids"])
        elif r.get("event") == "test":
            by_test.setdefault(r["nodeid"], []).append(r)
    for nodeid, rs in by_test.items():
        t = totals.setdefault(nodeid, Totals(nodeid))
        outcome = worst([r["outcome"] for r in rs])
        setattr(t, outcome, getattr(t, outcome) + 1)
        t.seconds += sum(float(r.get("seconds") or 0.0) for r in rs)
        for r in rs:
            add_counts(t, r.get("counts", {}))
        failed = next((r for r in rs if r["outcome"] in ("failed", "crashed")), None)
        if failed is not None:
            f = parse_failure(failed.get("failure", ""))
            t.failures.append(Failure(info.round, failed["outcome"], f.text, f.replay, f.reproduce))
    missing = [n for n in collected if n not in by_test]
    died = bool(missing) and not info.stopped and info.exit_code not in (0, 1)
    for k, nodeid in enumerate(missing):
        t = totals.setdefault(nodeid, Totals(nodeid))
        if died and k == 0:
            t.crashed += 1
            text = f"the round's pytest process died (exit code {info.exit_code}) while running this test"
            t.failures.append(Failure(info.round, "crashed", text))
        else:
            t.unfinished += 1


def overall(totals: dict[str, Totals]) -> str:
    """FAIL when any test failed or crashed, PASS when at least one passed, else NOTHING RAN."""
    if any(t.result == "FAIL" for t in totals.values()):
        return "FAIL"
    return "PASS" if any(t.passed for t in totals.values()) else "NOTHING RAN"


def all_events(totals: dict[str, Totals]) -> Counter[str]:
    """The events of every test's examples, added up."""
    out: Counter[str] = Counter()
    for t in totals.values():
        out.update(t.events)
    return out
