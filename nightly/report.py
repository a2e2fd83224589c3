"""`report.md`, the page a person reads in a minute: the verdict and the run's settings, a line per
property (examples, side-by-side runs, near-ties, failures, examples a second), each failure with
the property's own report and the commands that replay and promote it, and the behaviour paths the
run reached and missed. Everything else is in `summary.json` and the per-round files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from nightly.results import Totals
from nightly.rounds import RoundInfo

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
            lines.append(f"- make it a regression case: `python -m properties.promote {spec} --name NAME`")
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
