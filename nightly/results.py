"""A run's results, read from the JUnit XML pytest wrote for each round, and added up per test.

Every worker's run of a test is one `<testcase>` (`Case`), carrying the `PROPERTY` that
`nightly.plugin` adds: node id, worker and the counts of `properties.counters`. A worker that
crashed has no property; its node id and worker come from pytest-xdist's message. A round's outcome
of a test is the worst of its workers'.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROPERTY = "nightly"  # the JUnit property carrying a test's node id, worker and counts
SHARE_SKIP = "nightly: not this worker's share"  # the skip of a test left no share here, which the results leave out
OUTCOMES = ("passed", "skipped", "failed", "crashed")  # from best to worst
COUNTS = ("examples", "runs", "near_ties", "shrink_steps", "gave_up")
CRASH = re.compile(r"worker '(\w+)' crashed while running '([^']+)'")
REPLAY_COMMAND = re.compile(r"^python3? -m [\w.]+ ")  # any replay command a report printed
REPRODUCE = re.compile(r"@reproduce_failure\([^)]*\)")
HYPOTHESIS_TRAILERS = ("Failing test case:", "Falsifying example:", "Falsifying explicit example:")
MAX_LINES = 40


@dataclass(slots=True)
class Case:
    """One worker's run of one test in one round."""

    round: int
    nodeid: str
    worker: str
    outcome: str  # one of OUTCOMES
    seconds: float
    counts: dict[str, Any] = field(default_factory=dict)
    failure: str = ""

    @property
    def examples(self) -> int:
        return int(self.counts.get("examples", 0))


def read_round(path: Path, round_no: int) -> list[Case]:
    """The cases of one round's JUnit file, without the tests a worker skipped as not its share;
    none when the file is missing or torn (pytest was killed before it wrote it)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    cases = []
    for tc in root.iter("testcase"):
        info = json.loads(next((p.get("value") for p in tc.iter("property") if p.get("name") == PROPERTY), "{}"))
        bad = next((e for e in tc if e.tag in ("failure", "error")), None)
        skipped = tc.find("skipped")
        if skipped is not None and SHARE_SKIP in (skipped.get("message") or ""):
            continue
        text = "" if bad is None else (bad.text or bad.get("message") or "")
        crash = CRASH.search(text)
        outcome = "crashed" if crash else "failed" if bad is not None else "passed" if skipped is None else "skipped"
        nodeid = info.get("nodeid") or (crash.group(2) if crash else f"{tc.get('classname')}::{tc.get('name')}")
        worker = info.get("worker") or (crash.group(1) if crash else "main")
        cases.append(Case(round_no, nodeid, worker, outcome, float(tc.get("time") or 0), info.get("counts", {}), text))
    return cases


def running_when_killed(observed: list[Path]) -> list[str]:
    """The test each process was running when it was killed, from its observability file: the
    `property` of its last test case (a torn last line is skipped)."""
    running = []
    for path in observed:
        for line in reversed(path.read_text(encoding="utf-8", errors="replace").splitlines()):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("type") == "test_case" and record.get("property"):
                running.append(record["property"])
                break
    return sorted(set(running))


@dataclass(slots=True, frozen=True)
class Failure:
    """What a person needs of a failure: the property's own report (or the error), the arguments
    of the replay command (the spec file, then any `--impl`) and Hypothesis's reproduce line."""

    round: int
    outcome: str
    text: str
    replay: str | None = None
    reproduce: str | None = None


def parse_failure(longrepr: str, round_no: int, outcome: str) -> Failure:
    """The readable part of a pytest failure report: a property's report runs from its exception
    line to its `replay:` line; another failure keeps its `E` lines up to Hypothesis's restatement
    of the example (at most `MAX_LINES`); a crash report (no `E` lines) its last lines."""
    lines = [s[8:] for s in longrepr.splitlines() if s.startswith("E") and not s[1:8].strip()]
    reproduce = next((m.group(0) for s in lines if (m := REPRODUCE.search(s))), None)
    if not lines:
        return Failure(round_no, outcome, "\n".join(longrepr.strip().splitlines()[-MAX_LINES:]), None, reproduce)
    at = next((i for i, s in enumerate(lines) if s.strip().startswith("replay: ")), None)
    if at is not None:
        replay = REPLAY_COMMAND.sub("", lines[at].strip().removeprefix("replay: "))  # the file and its options
        body = [lines[0].split(": ", 1)[-1]] + [s.removeprefix("  ") for s in lines[1:at]]
        return Failure(round_no, outcome, "\n".join(body).rstrip(), replay, reproduce)
    end = next((i for i, s in enumerate(lines) if s.startswith(HYPOTHESIS_TRAILERS)), len(lines))
    return Failure(round_no, outcome, "\n".join(lines[: min(end, MAX_LINES)]).rstrip(), None, reproduce)


@dataclass(slots=True)
class Totals:
    """One test over the run: its outcome in each round it has results in, every worker's counts
    added up, its time (`seconds`: every worker's, added up; `span`: per round the slowest
    worker's, added up), the most workers that ran it in a round, and its failures."""

    nodeid: str
    outcomes: dict[int, str] = field(default_factory=dict)  # round -> outcome
    examples: int = 0
    runs: int = 0
    near_ties: int = 0
    shrink_steps: int = 0
    gave_up: int = 0
    largest_near_tie: float | None = None
    seconds: float = 0.0
    span: float = 0.0
    workers: int = 0
    events: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]

    @property
    def result(self) -> str:
        """FAIL when a round failed or crashed, else PASS when one passed, else SKIP."""
        if {"failed", "crashed"} & set(self.outcomes.values()):
            return "FAIL"
        return "PASS" if "passed" in self.outcomes.values() else "SKIP"

    def rate(self, seconds: float) -> float | None:
        """Examples a second over `seconds` (None without examples or time)."""
        return self.examples / seconds if seconds > 0 and self.examples else None


def add_up(cases: list[Case]) -> dict[str, Totals]:
    """Per test, in node-id order, the totals of `cases`."""
    groups: dict[tuple[str, int], list[Case]] = {}
    for c in cases:
        groups.setdefault((c.nodeid, c.round), []).append(c)
    totals: dict[str, Totals] = {}
    for (nodeid, round_no), group in sorted(groups.items()):
        t = totals.setdefault(nodeid, Totals(nodeid))
        t.outcomes[round_no] = max((c.outcome for c in group), key=OUTCOMES.index)
        t.seconds += sum(c.seconds for c in group)
        t.span += max(c.seconds for c in group)
        t.workers = max(t.workers, len({c.worker for c in group}))
        for c in group:
            for name in COUNTS:
                setattr(t, name, getattr(t, name) + int(c.counts.get(name, 0)))
            if c.counts.get("largest_near_tie") is not None:
                t.largest_near_tie = max(t.largest_near_tie or 0.0, float(c.counts["largest_near_tie"]))
            for event, n in c.counts.get("events", {}).items():
                t.events[event] = t.events.get(event, 0) + int(n)
        failed = next((c for c in group if c.outcome in ("failed", "crashed")), None)
        if failed is not None:
            t.failures.append(parse_failure(failed.failure, round_no, failed.outcome))
    return totals


def by_worker(cases: list[Case]) -> dict[str, dict[str, float]]:
    """Per worker, in worker order, its examples and seconds over every test and round."""
    out: dict[str, dict[str, float]] = {}
    for c in cases:
        w = out.setdefault(c.worker, {"examples": 0, "seconds": 0.0})
        w["examples"] += c.examples
        w["seconds"] += c.seconds
    return dict(sorted(out.items(), key=lambda kv: (len(kv[0]), kv[0])))
