"""The output folder: `report.md`, `summary.json` and `junit.xml` rewritten after every round from
the rounds' JUnit files, the `replays/` cut down to the failures the report names, and with
`--pack` everything else moved into one archive."""

from __future__ import annotations

import json
import shutil
import tarfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nightly.report import PACKED, render, verdict
from nightly.results import Case, Totals, add_up, by_worker, read_round, running_when_killed
from nightly.rounds import RoundInfo
from nightly.runner import round_file
from properties.stats import expected_paths

OUTPUT_FILES = ("report.md", "summary.json", "junit.xml")


def read_cases(out: Path, rounds: list[RoundInfo]) -> list[Case]:
    """Every round's cases; for a round whose pytest died before writing its JUnit file, the test
    each of its processes was running, as crashed."""
    cases = []
    for r in rounds:
        got = read_round(round_file(out, "junit", r.round, ".xml"), r.round)
        if not got and r.died:
            why = f"the round's pytest process died (exit {r.exit_code}) while running this test"
            observed = sorted((out / "observed").glob(f"round-{r.round:03d}-*.jsonl"))
            got = [Case(r.round, n, "main", "crashed", 0.0, failure=why) for n in running_when_killed(observed)]
        cases += got
    return cases


def summary(meta: dict[str, Any], rounds: list[RoundInfo], totals: dict[str, Totals], cases: list[Case]) -> dict:
    """The JSON summary: the verdict, settings and rounds; per test its outcome per round, counts,
    time, examples a second (one worker's and the host's), events and failures; per worker its
    examples and seconds; the run's events and the expected paths it missed."""
    events: Counter[str] = Counter()
    tests = {}
    for nodeid, t in totals.items():
        events.update(t.events)
        tests[nodeid] = {
            **asdict(t),
            "name": t.name,
            "result": t.result,
            "examples_per_second_per_worker": t.rate(t.seconds),
            "examples_per_second_host": t.rate(t.span),
        }
    return {
        "result": verdict(totals, rounds),
        "meta": meta,
        "rounds": [asdict(r) for r in rounds],
        "tests": tests,
        "workers": by_worker(cases),
        "events": dict(events.most_common()),
        "not_reached": [p for p in expected_paths() if p not in events],
    }


def merge_junit(out: Path, rounds: list[RoundInfo]) -> None:
    """`junit.xml`: every round's `<testsuite>` as pytest wrote it, named after its round."""
    root = ET.Element("testsuites", name="nightly")
    for r in rounds:
        try:
            suites = list(ET.parse(round_file(out, "junit", r.round, ".xml")).getroot().iter("testsuite"))
        except (OSError, ET.ParseError):
            continue
        for suite in suites:
            suite.set("name", f"nightly round {r.round}")
            root.append(suite)
    ET.ElementTree(root).write(out / "junit.xml", encoding="utf-8", xml_declaration=True)


def write_all(out: Path, meta: dict[str, Any], rounds: list[RoundInfo], packed: bool = False) -> str:
    """Write summary.json, junit.xml and report.md for the rounds so far; returns the verdict."""
    cases = read_cases(out, rounds)
    totals = add_up(cases)
    (out / "summary.json").write_text(json.dumps(summary(meta, rounds, totals, cases), indent=1, default=str) + "\n")
    merge_junit(out, rounds)
    report = render(meta, rounds, totals, by_worker(cases), expected_paths(), out, packed)
    (out / "report.md").write_text(report)
    return verdict(totals, rounds)


def prune_replays(out: Path, rounds: list[RoundInfo]) -> None:
    """Remove the replay specs of the intermediate examples a shrink went through, keeping those
    of the failures the report names."""
    totals = add_up(read_cases(out, rounds))
    keep = {Path(f.replay.split()[0]).name for t in totals.values() for f in t.failures if f.replay}
    for path in (out / "replays").glob("*.json"):
        if path.name not in keep:
            path.unlink()


def pack(out: Path) -> Path:
    """Move everything in `out` but `OUTPUT_FILES` into `PACKED` (for artifact stores that take
    few files); returns the archive's path."""
    dest = out / PACKED
    others = [p for p in sorted(out.iterdir()) if p.name not in (*OUTPUT_FILES, PACKED)]
    with tarfile.open(dest, "w:gz") as tar:
        for path in others:
            tar.add(path, arcname=path.name)
    for path in others:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return dest
