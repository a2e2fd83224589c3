"""The mutation run's results as JSON and as the markdown table in `docs/mutants.md`.

Each mode's generated part of the page is a block of its own (`mutants.modes`, written by
`properties.run.doc_blocks`); the default mode keeps the page's original block. Everything outside a
run's own block (other modes' tables, notes kept by hand) is preserved when the page is regenerated."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

from mutants.execute import Result
from mutants.modes import Mode
from properties.run.doc_blocks import replace_block

TITLE = "# Mutation self-check\n"


@dataclass(slots=True)
class Summary:
    """Totals of a run: counts per status, kill rate, examples-to-kill, wall time."""

    total: int
    killed: int
    survived: int
    failed: int  # not applied or errored
    kill_rate: float
    median_examples: float | None  # examples of the killing test, up to the failing one
    worst_examples: int | None
    worst_mutant: str | None
    median_examples_total: float | None  # examples of every test run before the kill, plus those
    worst_examples_total: int | None
    wall_seconds: float
    profile: str
    jobs: int
    baseline_seconds: float
    baseline_examples: int
    numerics: str = "exact"
    dtype: str | None = None  # None: the suite's dtypes for the numerics and device
    device: str = "cpu"
    mode: str = Mode().key
    subset: bool = False
    keep_going: bool = False  # every test ran against every mutant (not only up to the first failure)


def summarize(
    results: list[Result],
    baseline: Result,
    wall_seconds: float,
    profile: str,
    jobs: int,
    mode: Mode | None = None,
    keep_going: bool = False,
) -> Summary:
    """Counts, kill rate, the median and worst examples-to-kill over killed mutants, and the mode."""
    mode = mode or Mode()
    killed = [r for r in results if r.status == "killed"]
    survived = sum(r.status == "survived" for r in results)
    examples = [r.examples for r in killed if r.examples is not None]
    totals = [r.examples_total for r in killed]
    worst = max(killed, key=lambda r: r.examples or 0, default=None)
    return Summary(
        total=len(results), killed=len(killed), survived=survived, failed=len(results) - len(killed) - survived,
        kill_rate=round(len(killed) / len(results), 4) if results else 0.0,
        median_examples=statistics.median(examples) if examples else None,
        worst_examples=worst.examples if worst else None, worst_mutant=worst.id if worst else None,
        median_examples_total=statistics.median(totals) if totals else None,
        worst_examples_total=max(totals, default=None), wall_seconds=round(wall_seconds, 1), profile=profile,
        jobs=jobs, baseline_seconds=baseline.seconds, baseline_examples=baseline.examples_total,
        numerics=mode.numerics, dtype=mode.dtype, device=mode.device, mode=mode.key, subset=mode.subset,
        keep_going=keep_going,
    )  # fmt: skip


def write_json(path: Path, summary: Summary, baseline: Result, results: list[Result]) -> None:
    """The summary, the baseline run and every mutant's result (with its per-test rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"summary": asdict(summary), "baseline": asdict(baseline), "mutants": [asdict(r) for r in results]}
    path.write_text(json.dumps(payload, indent=1) + "\n")


def _killer(r: Result) -> str:
    """The table's "killed by" cell: the killing test, or why the mutant did not run."""
    if r.status == "killed" and r.killer:
        return "`" + r.killer.split("::")[-1] + "`"
    return r.reason.replace("|", "/").replace("\n", " ")[:120] if r.status != "survived" else ""


def table_body(summary: Summary, results: list[Result], mode: Mode) -> str:
    """What `mode`'s block holds: the summary line and one row per mutant, a blank line around them."""
    s = summary
    lines = [
        "",
        f"**{s.killed}/{s.total} killed** ({100 * s.kill_rate:.1f} %), {s.survived} survived, {s.failed} not applied "
        f"or errored. Examples to kill, in the killing test: median {s.median_examples}, worst {s.worst_examples} "
        f"(`{s.worst_mutant}`); across every test run before the kill: median {s.median_examples_total}, worst "
        f"{s.worst_examples_total}. "
        f"Wall time {s.wall_seconds:.0f} s with {s.jobs} jobs, profile `{s.profile}`, mode `{s.mode}` "
        f"({mode.describe()}); the unchanged suite passes in {s.baseline_seconds:.0f} s ({s.baseline_examples} "
        "examples).",
        "",
        "| mutant | file | ids | bug | result | killed by | examples | examples, all tests | time |",
        "|---|---|---|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        ex = "" if r.examples is None else str(r.examples)
        lines.append(
            f"| `{r.id}` | `{r.file.removeprefix('batched/')}` | {' '.join(r.ids)} | {r.description} | {r.status} | "
            f"{_killer(r)} | {ex} | {r.examples_total} | {r.seconds:.1f} s |"
        )
    lines.append("")
    return "\n".join(lines)


def write_markdown(path: Path, summary: Summary, results: list[Result], mode: Mode | None = None) -> None:
    """Replace `mode`'s generated section of `path` (create the page when missing; append the
    section when the page has none for this mode), keeping the rest."""
    mode = mode or Mode()
    text = path.read_text() if path.is_file() else TITLE
    text = replace_block(text, mode.block, table_body(summary, results, mode), append=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
