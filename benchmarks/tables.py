"""Rows and markdown tables of pytest-benchmark JSON files (`--benchmark-json`): the bootstrap table
(the implementations side by side per batch size), the P1 throughput table, the fully batched step
against its targets at one batch size, and the blocks of a page they are written into (`section`,
`properties.run.doc_blocks`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.host_probe import HostSpeed, host_speed
from properties.run.doc_blocks import Block

IMPLS = ("loop", "literal", "vector")  # the implementations the tables show, in their order
LEGACY_IMPLS = {"per_seq": "loop", "batched": "literal"}  # older results files' names, read as today's
FLOOR_TARGET = {"greedy": 5.0, "mixed": 8.0}  # the fully batched step's time over the floor, at most
SPEEDUP_TARGET = 100.0  # the fully batched step over the per-sequence loop, at least


@dataclass(slots=True, frozen=True)
class Cell:
    """One implementation at one batch size: its median, its counted device work, and its rounds
    against the host's speed (where both were recorded)."""

    median_s: float | None
    ops: int | None
    reads: int | None
    host: HostSpeed | None = None


@dataclass(slots=True, frozen=True)
class Row:
    """One batch size: the memory floor and a cell per implementation of `IMPLS` in the file."""

    n: int
    floor_s: float | None
    cells: dict[str, Cell] = field(default_factory=dict)

    def median(self, impl: str) -> float | None:
        return self.cells[impl].median_s if impl in self.cells else None

    def speedup(self, impl: str) -> float | None:
        """How many times faster than the loop `impl` is."""
        return _div(self.median("loop"), self.median(impl))

    def over_floor(self, impl: str) -> float | None:
        return _div(self.median(impl), self.floor_s)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def bootstrap_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The bootstrap benchmarks of a results file (those that recorded an `impl`)."""
    return [b for b in data.get("benchmarks", []) if "impl" in b.get("extra_info", {})]


def p1_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The P1 throughput benchmarks of a results file."""
    return [b for b in data.get("benchmarks", []) if "examples_per_s" in b.get("extra_info", {})]


def _median(b: dict[str, Any]) -> float | None:
    return float(b["stats"]["median"]) if b.get("stats") else None


def _cell(b: dict[str, Any]) -> Cell:
    """An entry's cell; its host speed where its rounds and its host probes pair up."""
    info, times = b["extra_info"], b.get("stats", {}).get("data")
    probes = info.get("host_probe_s")
    host = host_speed(times, probes) if times and probes and len(times) == len(probes) else None
    return Cell(_median(b), info.get("device_ops"), info.get("host_reads"), host)


def bootstrap_rows(entries: list[dict[str, Any]]) -> list[Row]:
    """One row per batch size, ascending, with a cell per implementation of `IMPLS` it has."""
    by_n: dict[int, dict[str, dict[str, Any]]] = {}
    for b in entries:
        name = str(b["extra_info"]["impl"])
        by_n.setdefault(int(b["extra_info"]["n"]), {})[LEGACY_IMPLS.get(name, name)] = b
    rows = []
    for n, found in sorted(by_n.items()):
        first = next(found[i] for i in (*IMPLS[1:], *IMPLS[:1], *found) if i in found)
        rows.append(Row(n, first["extra_info"].get("floor_s"), {i: _cell(found[i]) for i in IMPLS if i in found}))
    return rows


def rows_by_mix(files: list[Path]) -> dict[str, tuple[list[Row], dict[str, Any]]]:
    """The rows of every mix in `files` (a later file's mix replaces an earlier one's), with the
    first entry's `extra_info` for the run's description."""
    out: dict[str, tuple[list[Row], dict[str, Any]]] = {}
    for path in files:
        by_mix: dict[str, list[dict[str, Any]]] = {}
        for e in bootstrap_entries(json.loads(path.read_text())):
            by_mix.setdefault(e["extra_info"].get("mix", "mixed"), []).append(e)
        out |= {mix: (bootstrap_rows(es), es[0]["extra_info"]) for mix, es in by_mix.items()}
    return out


def fmt_time(s: float | None) -> str:
    """Seconds as µs, ms or s with three significant digits; '-' for None."""
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def _text(x: object) -> str:
    return "-" if x is None else str(x)


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def bootstrap_table(rows: list[Row]) -> str:
    """The markdown table: n, each implementation's median, the others' speedups over the loop,
    the floor, times over the floor, counted device operators (and host reads where recorded)."""
    impls = [i for i in IMPLS if any(i in r.cells for r in rows)]
    fast = [i for i in impls if i != "loop"]
    reads = any(c.reads is not None for r in rows for c in r.cells.values())
    head = ["n", *impls, f"speedup over the loop ({' / '.join(fast)})", "floor", f"over floor ({' / '.join(fast)})"]
    head += [f"device ops ({' / '.join(impls)})"] + ([f"host reads ({' / '.join(impls)})"] if reads else [])
    lines = [_line(head), "|" + "---:|" * len(head)]
    for r in rows:
        cells = [str(r.n), *(fmt_time(r.median(i)) for i in impls), " / ".join(_ratio(r.speedup(i)) for i in fast)]
        cells += [fmt_time(r.floor_s), " / ".join(_ratio(r.over_floor(i)) for i in fast)]
        counts = [r.cells.get(i, Cell(None, None, None)) for i in impls]
        cells.append(" / ".join(_text(c.ops) for c in counts))
        cells += [" / ".join(_text(c.reads) for c in counts)] if reads else []
        lines.append(_line(cells))
    return "\n".join(lines)


def run_summary(data: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """One line on where and what was measured: device, dtype, model, mix, bandwidth, date, commit."""
    info = entries[0]["extra_info"]
    commit = (data.get("commit_info") or {}).get("id") or "unknown commit"
    rounds = min((int(b["stats"]["rounds"]) for b in entries if b.get("stats")), default=0)
    mix = "every fourth row sampled" if info.get("mix", "mixed") == "mixed" else "every row greedy"
    name = str(info.get("device_name", info.get("device")))
    # Older runs did not record the threads; a CPU's name already gives them.
    threads = f" {info['threads']} intra-op thread(s);" if "threads" in info and "intra-op" not in name else ""
    return (
        f"{name}, {info['dtype']} {info['numerics']} numerics; "
        f"hidden {info['hidden']}, vocab {info['vocab_size']}, ladder {info['ladder_nd']}, "
        f"group cap {info['group_cap']}; {mix};{threads} copy bandwidth {info['bandwidth_Bps'] / 1e9:.1f} GB/s; "
        f"at least {rounds} rounds per cell; {data.get('datetime', 'undated')}, commit {commit[:12]}."
    )


def p1_table(entries: list[dict[str, Any]]) -> str:
    """Examples per second of the P1 check, with what one round covered; bootstrapped rows per CPU
    second stay comparable when the strategies change how many rows an example holds."""
    lines = [
        "| examples (mismatched) | sequences (bootstrapped) | median per round | examples / s | examples / CPU s "
        "| bootstrapped rows / CPU s | spec draw |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in entries:
        i = b["extra_info"]
        keys = ("examples_per_s", "examples_per_cpu_s", "rows_per_cpu_s")
        rates = ["-" if i.get(k) is None else f"{i[k]:.1f}" for k in keys]
        cells = [f"{i['examples']} ({i.get('mismatched_examples', '-')})", f"{i['sequences']} ({i['bootstrapped']})"]
        lines.append(_line([*cells, fmt_time(_median(b)), *rates, fmt_time(i.get("draw_s"))]))
    return "\n".join(lines)


def _target(value: float | None, target: float | None, at_most: bool, unit: str) -> str:
    """`value` against its target: `5.0x (<= 8x: met)`; '-' without a target."""
    if target is None:
        return "-"
    ok = None if value is None else (value <= target if at_most else value >= target)
    verdict = "-" if ok is None else ("met" if ok else "missed")
    return f"{'-' if value is None else f'{value:{unit}}x'} ({'<=' if at_most else '>='} {target:g}x: {verdict})"


def summary_table(found: dict[str, tuple[list[Row], dict[str, Any]]], n: int) -> str:
    """The fully batched step against its targets at batch size n, one line per mix: the medians, the
    floor, its time over the floor and its speedup over the loop (each against its target), its
    counted work and how many of its rounds ran on a slowed host (the verdicts use every round)."""
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
        v = r.cells.get("vector", Cell(None, None, None))
        cells = [mix, str(info.get("device_name", info.get("device", "-"))), *(fmt_time(r.median(i)) for i in IMPLS)]
        cells += [fmt_time(r.floor_s), _target(r.over_floor("vector"), FLOOR_TARGET.get(mix), True, ".1f")]
        cells += [_target(r.speedup("vector"), SPEEDUP_TARGET, False, ".0f"), _text(v.ops), _text(v.reads)]
        lines.append(_line([*cells, "-" if v.host is None else v.host.describe()]))
    return "\n".join(lines)


def section(key: str, command: str = "python -m benchmarks.report") -> Block:
    """The generated block `bench:KEY` of a benchmarks page, written by `command`."""
    return Block(f"bench:{key}", command)
