"""The output folder: `report.md`, the page a person reads in a minute (the verdict and the run's
settings, a line per property with its examples, side-by-side runs, near-ties, failures and examples
a second, each failure with the property's own report and the commands that replay and promote it,
and the behaviour paths the run reached and missed), `summary.json` (every figure) and `junit.xml`,
rewritten after every round from the rounds' JUnit files; the `replays/` cut down to the failures
the report names, and with `--pack` everything else moved into one archive."""

from __future__ import annotations

import json
import shutil
import tarfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nightly.results import Case, Totals, add_up, by_worker, read_round, running_when_killed
from nightly.rounds import RoundInfo
from nightly.runner import round_file
from properties.sides.stats import expected_paths

OUTPUT_FILES = ("report.md", "summary.json", "junit.xml")
PACKED = "details.tar.gz"
SECTIONS = ("## Properties", "## Failures", "## Behaviour coverage", "## Files")
FILES = {
    "summary.json": "every figure of this report and more, per test, worker and round",
    "junit.xml": "every round's JUnit XML (`junit/`: as pytest wrote each)",
    "observed": "Hypothesis's observability records, a file per process and round",
    "replays": "the replay specs of the failures above",
    "logs": "pytest's output per round, with Hypothesis's statistics and the slowest tests",
    "plans": "max_examples per test, a file per round",
}


def verdict(totals: dict[str, Totals], rounds: list[RoundInfo]) -> str:
    """FAIL when a test failed or crashed or a round died, PASS when one passed, else NOTHING RAN."""
    if any(t.result == "FAIL" for t in totals.values()) or any(r.died for r in rounds):
        return "FAIL"
    return "PASS" if any(t.result == "PASS" for t in totals.values()) else "NOTHING RAN"


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}" if m else f"{seconds:.1f} s"


def header(meta: dict[str, Any], rounds: list[RoundInfo], totals: dict[str, Totals]) -> list[str]:
    examples = sum(t.examples for t in totals.values())
    lines = [
        f"# Nightly equivalence run: {verdict(totals, rounds)}",
        "",
        f"- started {meta['started']}, ran {duration(meta['wall_seconds'])} of a budget of {meta['budget']}; "
        f"{len(rounds)} round(s), {examples} examples",
        f"- {meta['host']}, {meta['workers']} worker(s){' sharing each GPU through MPS' if meta['mps'] else ''}; "
        f"the suite's options: `{meta['options']}`",
        f"- example database: {meta['database']}; shard {meta['shard']}; run seed {meta['seed']}",
        f"- command: `{meta['command']}`",
    ]
    for r in rounds:
        if r.stopped:
            missing = sorted(t.name for t in totals.values() if r.round not in t.outcomes)
            lines.append(f"- round {r.round} stopped ({r.stopped}); no result in it: {', '.join(missing) or '-'}")
        elif r.died:
            lines.append(f"- round {r.round}: pytest died (exit {r.exit_code}); its log and observed records remain")
    return lines


def properties_table(totals: dict[str, Totals], workers: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "## Properties",
        "",
        "| property | result | examples | side-by-side runs | near-ties (largest margin) | failures | workers "
        "| examples/s per worker | examples/s, host |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for t in totals.values():
        result = f"**{t.result}**" if t.result == "FAIL" else t.result
        lines.append(
            f"| `{t.name}` | {result} | {t.examples} | {t.runs} | {t.near_ties} ({fmt(t.largest_near_tie)}) "
            f"| {len(t.failures)} | {t.workers} | {fmt(t.rate(t.seconds))} | {fmt(t.rate(t.span))} |"
        )
    rates = {w: v["examples"] / v["seconds"] for w, v in workers.items() if v["seconds"] > 0}
    if rates:
        low, high = min(rates, key=rates.__getitem__), max(rates, key=rates.__getitem__)
        lines += ["", f"Per worker, all tests: {fmt(rates[low])} ({low}) to {fmt(rates[high])} ({high}) examples/s."]
    return lines


def failures_section(totals: dict[str, Totals], packed: bool) -> list[str]:
    failing = [t for t in totals.values() if t.failures]
    if not failing:
        return ["## Failures", "", "None."]
    where = f" (packed in `{PACKED}`)" if packed else ""
    lines = [
        "## Failures",
        "",
        f"The replay specs are in `replays/`{where}; the commands name them where they were written.",
    ]
    for t in failing:
        last = t.failures[-1]
        rounds = ", ".join(str(f.round) for f in t.failures)
        lines += ["", f"### `{t.name}` ({last.outcome}; round(s) {rounds})", "", "```text", last.text, "```", ""]
        if last.replay:
            spec = last.replay.split()[0]
            lines.append(f"- replay: `python -m properties.replay {last.replay}`")
            lines.append(f"- make it a regression case: `python -m properties.failures.promote {spec} --name NAME`")
        if last.reproduce:
            lines.append(f"- or in Hypothesis: decorate the test with `{last.reproduce}`")
    return lines


def coverage_section(events: Counter[str], expected: list[str]) -> list[str]:
    reached = ", ".join(f"{name} ({n})" for name, n in sorted(events.items(), key=lambda kv: (-kv[1], kv[0])))
    missing = [p for p in expected if p not in events]
    return [
        "## Behaviour coverage",
        "",
        f"Examples per path: {reached or 'no example recorded a path event'}.",
        "",
        f"Not reached: {', '.join(missing)}." if missing else "Every expected path was reached.",
        "",
        "The static behaviour x property matrix: `python -m properties.behaviours`.",
    ]


def files_section(out: Path, packed: bool) -> list[str]:
    present = [(name, what) for name, what in FILES.items() if (out / name).exists()]
    lines = ["## Files", ""] + [f"- `{n}`: {w}" for n, w in present if not packed or (out / n).is_file()]
    if packed:
        lines.append(f"- `{PACKED}`: " + "; ".join(f"`{n}/`: {w}" for n, w in present if (out / n).is_dir()))
    return lines


def render(
    meta: dict[str, Any],
    rounds: list[RoundInfo],
    totals: dict[str, Totals],
    workers: dict[str, dict[str, float]],
    expected: list[str],
    out: Path,
    packed: bool = False,
) -> str:
    """The whole report: `workers` holds each worker's examples and seconds, `expected` the paths a
    long run should reach; `packed`: the per-round files go into `PACKED`."""
    events: Counter[str] = Counter()
    for t in totals.values():
        events.update(t.events)
    parts = [
        header(meta, rounds, totals),
        properties_table(totals, workers),
        failures_section(totals, packed),
        coverage_section(events, expected),
        files_section(out, packed),
    ]
    return "\n\n".join("\n".join(p) for p in parts) + "\n"


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
