"""The report a person reads in a minute: the verdict, a line per property, the examples per second
per property (one worker's and the host's) and per worker, each failure with its shrunk mix and the
commands that replay and promote it, the paths the run reached, and the static behaviour x property
matrix."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from nightly.totals import RoundInfo, Totals, all_events, overall, worker_totals

SECTIONS = (
    "## Properties",
    "## Throughput",
    "## Failures",
    "## Behaviour coverage reached",
    "## Behaviour x property matrix",
    "## Files",
)
PACKED = "details.tar.gz"
FILES = {
    "summary.json": "the JSON summary",
    "junit.xml": "JUnit XML of every round (`junit/`: as pytest wrote each)",
    "observed": "Hypothesis observability records, a file per process and round",
    "replays": "the replay specs of the failures above",
    "logs": "pytest's output, a file per round",
    "results": "the per-test records each round wrote as it went",
    "plans": "max_examples per test, a file per round",
}


def fmt_margin(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def fmt_seconds(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}:{s:02d}" if m else f"{seconds:.1f} s"


def header(meta: dict[str, Any], rounds: list[RoundInfo], totals: dict[str, Totals]) -> list[str]:
    examples = sum(t.examples for t in totals.values())
    stopped = [f"round {r.round} stopped: {r.stopped}" for r in rounds if r.stopped]
    return [
        f"# Nightly equivalence run: {overall(totals)}",
        "",
        f"- started {meta['started']}, ran {fmt_seconds(meta['wall_seconds'])} of a budget of {meta['budget']}",
        f"- device {meta['device']}, numerics {meta['numerics']}, reference on "
        f"{'the CPU' if meta.get('reference_device') == 'cpu' else 'the same device'}, "
        f"{meta.get('model', 'small')} model, {meta['workers']} worker(s)"
        f"{' sharing the GPU through MPS' if meta.get('mps') else ''}, "
        f"implementation `{meta['impl']}`",
        f"- {len(rounds)} round(s), each with fresh random examples; {examples} examples in all",
        f"- example database: {meta['database']}; shard {meta['shard']}; run seed {meta.get('seed', '-')}",
        f"- command: `{meta['command']}`",
        *[f"- {s}" for s in stopped],
    ]


def properties_table(totals: dict[str, Totals]) -> list[str]:
    lines = [
        "## Properties",
        "",
        "| property | result | examples | side-by-side runs | near-ties | largest near-tie margin | failures "
        "| time, all workers |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for t in sorted(totals.values(), key=lambda t: t.nodeid):
        fails = t.failed + t.crashed
        result = f"**{t.result}**" if t.result == "FAIL" else t.result
        lines.append(
            f"| `{t.name}` | {result} | {t.examples} | {t.runs} | {t.near_ties} | {fmt_margin(t.largest_near_tie)}"
            f" | {fails} | {fmt_seconds(t.seconds)} |"
        )
    unfinished = [t.name for t in totals.values() if t.unfinished]
    if unfinished:
        lines += ["", f"Not finished in some round (stopped at the time limit): {', '.join(unfinished)}."]
    return lines


def fmt_rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def throughput_section(totals: dict[str, Totals]) -> list[str]:
    """Examples a second per property, of one worker and of the host's workers together (over the
    span from the first worker's start of the test to the last one's end), then per worker."""
    lines = [
        "## Throughput",
        "",
        "| property | workers | examples | worker seconds | span | examples/s per worker | examples/s, host |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for t in sorted(totals.values(), key=lambda t: t.nodeid):
        if not t.examples:
            continue
        lines.append(
            f"| `{t.name}` | {t.workers} | {t.examples} | {t.seconds:.1f} | {t.span_seconds:.1f} | "
            f"{fmt_rate(t.per_worker_rate)} | {fmt_rate(t.host_rate)} |"
        )
    workers = worker_totals(totals)
    if not workers:
        return [*lines, "", "No test ran examples."]
    lines += ["", "| worker | examples | seconds | examples/s |", "|---|--:|--:|--:|"]
    for w, v in workers.items():
        rate = v["examples"] / v["seconds"] if v["seconds"] > 0 else None
        lines.append(f"| {w} | {int(v['examples'])} | {v['seconds']:.1f} | {fmt_rate(rate)} |")
    examples = sum(int(v["examples"]) for v in workers.values())
    seconds = sum(v["seconds"] for v in workers.values())
    rate = fmt_rate(examples / seconds if seconds > 0 else None)
    lines.append(f"| all, per worker | {examples} | {seconds:.1f} | {rate} |")
    return lines


def replay_lines(replay: str | None) -> list[str]:
    """The commands that replay a failure's spec and promote it to a regression case."""
    if replay is None:
        return []
    path = replay.split()[0]
    return [
        f"- replay: `python -m properties.replay {replay}`",
        f"- make it a regression case: `python -m properties.promote {path} --name NAME`",
    ]


def files_section(out: Path, packed: bool) -> list[str]:
    """What the folder holds; with `packed`, the per-round files are inside `PACKED`."""
    lines = ["## Files", ""]
    present = [(name, what) for name, what in FILES.items() if (out / name).exists()]
    if not packed:
        return lines + [f"- `{name}`: {what}" for name, what in present]
    top = [(n, w) for n, w in present if (out / n).is_file()]
    inside = "; ".join(f"`{n}/`: {w}" for n, w in present if (out / n).is_dir())
    return lines + [f"- `{n}`: {w}" for n, w in top] + [f"- `{PACKED}`: {inside}"]


def failures_section(totals: dict[str, Totals], out: Path, packed: bool) -> list[str]:
    lines = ["## Failures", ""]
    failing = [t for t in sorted(totals.values(), key=lambda t: t.nodeid) if t.failures]
    if not failing:
        return [*lines, "None."]
    lines += [
        f"The replay specs are in this folder's `replays/`{f' (packed in `{PACKED}`)' if packed else ''}; the"
        f" commands name them where the run wrote them (`{out / 'replays'}`): elsewhere, use your copy's path.",
        "",
    ]
    for t in failing:
        rounds = ", ".join(str(f.round) for f in t.failures)
        last = t.failures[-1]
        lines += [f"### `{t.name}` ({last.outcome}; round(s) {rounds})", "", "```text", last.text, "```", ""]
        lines += replay_lines(last.replay)
        if last.reproduce:
            lines.append(f"- or in Hypothesis: decorate the test with `{last.reproduce}`")
        lines.append("")
    return lines


def coverage_section(totals: dict[str, Totals], expected: list[str]) -> list[str]:
    events: Counter[str] = all_events(totals)
    lines = ["## Behaviour coverage reached", ""]
    if events:
        lines += ["| path | examples |", "|---|--:|"]
        lines += [f"| {name} | {count} |" for name, count in sorted(events.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:
        lines.append("No example recorded a path event.")
    missing = [p for p in expected if p not in events]
    lines += ["", f"Not reached this run: {', '.join(missing)}." if missing else "Every listed path was reached."]
    return lines


def render(
    meta: dict[str, Any],
    rounds: list[RoundInfo],
    totals: dict[str, Totals],
    out: Path,
    expected: list[str],
    matrix: str,
    packed: bool = False,
) -> str:
    """The whole report as markdown; `packed`: the per-round files are about to go into `PACKED`."""
    parts = [
        header(meta, rounds, totals),
        properties_table(totals),
        throughput_section(totals),
        failures_section(totals, out, packed),
        coverage_section(totals, expected),
        ["## Behaviour x property matrix", "", "```text", matrix, "```"],
        files_section(out, packed),
    ]
    return "\n\n".join("\n".join(p) for p in parts) + "\n"
