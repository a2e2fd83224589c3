"""`python -m benchmarks.vector_summary RESULTS.json [...] [--n 64] [--doc docs/vector-step.md]`: the
fully batched step against its targets at one batch size, as a markdown table.

Per mix found in the files: the medians of the per-sequence loop (`loop`), the literal batched step
(`literal`) and the fully batched step (`vector`), the memory floor, the fully batched step's time
over the floor and its speedup over the loop, each against its target (within 5x of the floor with
every row greedy, within 8x with every fourth row sampled, at least 100x faster than the loop), and
how many of its rounds ran on a slowed host (`benchmarks.host_probe`; the verdicts use every
round). Printed, and with `--doc` written between the `bench:vector-summary` markers of that page.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import replace_section
from benchmarks.tables import Row, bootstrap_entries, bootstrap_rows, fmt_time

SECTION = "vector-summary"
FLOOR_TARGET = {"greedy": 5.0, "mixed": 8.0}  # fully batched time over the floor, at most
SPEEDUP_TARGET = 100.0  # over the per-sequence loop, at least


def rows_by_mix(files: list[Path]) -> dict[str, tuple[list[Row], dict[str, Any]]]:
    """The table rows of every mix in `files` (a later file's mix replaces an earlier one's), with
    the first entry's `extra_info` for the run's description."""
    out: dict[str, tuple[list[Row], dict[str, Any]]] = {}
    for path in files:
        entries = bootstrap_entries(json.loads(path.read_text()))
        by_mix: dict[str, list[dict[str, Any]]] = {}
        for e in entries:
            by_mix.setdefault(e["extra_info"].get("mix", "mixed"), []).append(e)
        for mix, es in by_mix.items():
            out[mix] = (bootstrap_rows(es), es[0]["extra_info"])
    return out


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "missed")


def summary_table(found: dict[str, tuple[list[Row], dict[str, Any]]], n: int) -> str:
    """The markdown table at batch size n, one line per mix."""
    lines = [
        "| mix | device | loop | literal | vector | floor | vector / floor (target) "
        "| speedup over the loop (target) | device ops | host reads | rounds on a slowed host |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mix in sorted(found):
        rows, info = found[mix]
        r = next((x for x in rows if x.n == n), None)
        if r is None:
            continue
        over, speed = r.vector_over_floor, r.vector_speedup
        floor_target = FLOOR_TARGET.get(mix)
        floor_ok = None if over is None or floor_target is None else over <= floor_target
        speed_ok = None if speed is None else speed >= SPEEDUP_TARGET
        cells = [
            mix,
            str(info.get("device_name", info.get("device", "-"))),
            fmt_time(r.loop_s),
            fmt_time(r.literal_s),
            fmt_time(r.vector_s),
            fmt_time(r.floor_s),
            f"{'-' if over is None else f'{over:.1f}x'} (<= {floor_target:g}x: {_verdict(floor_ok)})"
            if floor_target
            else "-",
            f"{'-' if speed is None else f'{speed:.0f}x'} (>= {SPEEDUP_TARGET:g}x: {_verdict(speed_ok)})",
            "-" if r.vector_ops is None else str(r.vector_ops),
            "-" if r.vector_reads is None else str(r.vector_reads),
            "-" if r.vector_host is None else r.vector_host.describe(),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vector_summary", description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="pytest-benchmark JSON files of bench_bootstrap.py")
    parser.add_argument("--n", type=int, default=64, help="the batch size to summarize (default 64)")
    parser.add_argument("--doc", type=Path, default=None, help="a page to write the table into (its markers)")
    args = parser.parse_args(argv)
    try:
        found = rows_by_mix(args.results)
    except (OSError, ValueError, KeyError) as e:
        print(f"benchmarks.vector_summary: {e}", file=sys.stderr)
        return 2
    if not found:
        print("benchmarks.vector_summary: no bootstrap results in the files", file=sys.stderr)
        return 2
    table = summary_table(found, args.n)
    print(table)
    if args.doc is not None:
        text = args.doc.read_text() if args.doc.exists() else ""
        body = f"Batch size n = {args.n}, written by `python -m benchmarks.vector_summary`.\n\n{table}\n"
        args.doc.write_text(replace_section(text, SECTION, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
