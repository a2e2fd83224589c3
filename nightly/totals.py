"""Adding up the rounds of a run: per test, the examples, side-by-side runs, near-ties (and the
largest margin), outcomes, time (every worker's, and the span from the first worker's start to the
last one's end), examples and time per worker, the events and targets its examples recorded, and
its failures. Every worker of a round reports every test it ran (`nightly.spread`); a round's
outcome of a test is the worst of its workers'."""

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
    seconds: float = 0.0  # every worker's time in this test, added up
    span_seconds: float = 0.0  # per round, first start to last end over the workers, added up
    workers: int = 0  # the most workers that ran it in one round
    by_worker: dict[str, dict[str, float]] = field(default_factory=dict)  # worker -> examples, seconds
    events: dict[str, int] = field(default_factory=dict)
    targets: dict[str, float] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]

    @property
    def per_worker_rate(self) -> float | None:
        """Examples a second of one worker running this test (None without time)."""
        return self.examples / self.seconds if self.seconds > 0 and self.examples else None

    @property
    def host_rate(self) -> float | None:
        """Examples a second of all the workers of the host together, over the span of the test."""
        return self.examples / self.span_seconds if self.span_seconds > 0 and self.examples else None

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


def span(rs: list[dict[str, Any]]) -> float:
    """From the first start to the last end of a test's records in one round; the longest single
    duration when the records carry no start and end."""
    starts = [float(r["start"]) for r in rs if r.get("start")]
    stops = [float(r["stop"]) for r in rs if r.get("stop")]
    if starts and stops:
        return max(0.0, max(stops) - min(starts))
    return max((float(r.get("seconds") or 0.0) for r in rs), default=0.0)


def add_by_worker(t: Totals, rs: list[dict[str, Any]]) -> None:
    for r in rs:
        w = t.by_worker.setdefault(str(r.get("worker", "main")), {"examples": 0, "seconds": 0.0})
        w["examples"] += int(r.get("counts", {}).get("examples", 0))
        w["seconds"] += float(r.get("seconds") or 0.0)


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
        t.span_seconds += span(rs)
        t.workers = max(t.workers, len({r.get("worker") for r in rs}))
        add_by_worker(t, rs)
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


def worker_totals(totals: dict[str, Totals]) -> dict[str, dict[str, float]]:
    """Per worker, its examples and seconds over every test, in worker order."""
    out: dict[str, dict[str, float]] = {}
    for t in totals.values():
        for w, v in t.by_worker.items():
            acc = out.setdefault(w, {"examples": 0, "seconds": 0.0})
            acc["examples"] += v["examples"]
            acc["seconds"] += v["seconds"]
    return dict(sorted(out.items(), key=lambda kv: (len(kv[0]), kv[0])))
