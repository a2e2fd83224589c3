"""Rows and markdown tables from a pytest-benchmark JSON file (`--benchmark-json`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True, frozen=True)
class Row:
    """One batch size: medians of both implementations, the floor, and the counted device work."""

    n: int
    per_seq_s: float | None
    batched_s: float | None
    floor_s: float | None
    per_seq_ops: int | None
    batched_ops: int | None
    per_seq_reads: int | None
    batched_reads: int | None

    @property
    def speedup(self) -> float | None:
        if self.per_seq_s is None or not self.batched_s:
            return None
        return self.per_seq_s / self.batched_s

    @property
    def over_floor(self) -> float | None:
        if self.batched_s is None or not self.floor_s:
            return None
        return self.batched_s / self.floor_s


def bootstrap_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The bootstrap benchmarks of a results file (those that recorded an `impl`)."""
    return [b for b in data.get("benchmarks", []) if "impl" in b.get("extra_info", {})]


def p1_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The P1 throughput benchmarks of a results file."""
    return [b for b in data.get("benchmarks", []) if "examples_per_s" in b.get("extra_info", {})]


def bootstrap_rows(entries: list[dict[str, Any]]) -> list[Row]:
    """One row per batch size, ascending; a side missing from the file is None."""
    by_n: dict[int, dict[str, dict[str, Any]]] = {}
    for b in entries:
        info = b["extra_info"]
        by_n.setdefault(int(info["n"]), {})[info["impl"]] = b
    rows = []
    for n in sorted(by_n):
        per, bat = by_n[n].get("per_seq"), by_n[n].get("batched")
        rows.append(
            Row(
                n=n,
                per_seq_s=_median(per),
                batched_s=_median(bat),
                floor_s=(bat or per or {}).get("extra_info", {}).get("floor_s"),
                per_seq_ops=_info(per, "device_ops"),
                batched_ops=_info(bat, "device_ops"),
                per_seq_reads=_info(per, "host_reads"),
                batched_reads=_info(bat, "host_reads"),
            )
        )
    return rows


def _median(b: dict[str, Any] | None) -> float | None:
    return None if b is None or not b.get("stats") else float(b["stats"]["median"])


def _info(b: dict[str, Any] | None, key: str) -> Any:
    return None if b is None else b["extra_info"].get(key)


def fmt_time(s: float | None) -> str:
    """Seconds as µs, ms or s with three significant digits; '-' for None."""
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def _pair(a: int | None, b: int | None) -> str:
    return f"{'-' if a is None else a} / {'-' if b is None else b}"


def bootstrap_table(rows: list[Row]) -> str:
    """The markdown table: n, both medians, speedup, floor, batched over floor, counted work."""
    reads = any(r.per_seq_reads is not None or r.batched_reads is not None for r in rows)
    head = (
        "| n | per-sequence median | batched median | speedup | floor | batched / floor "
        "| device ops (per-seq / batched) |"
    )
    rule = "|---:|---:|---:|---:|---:|---:|---:|"
    if reads:
        head += " host reads (per-seq / batched) |"
        rule += "---:|"
    lines = [head, rule]
    for r in rows:
        cells = [
            str(r.n),
            fmt_time(r.per_seq_s),
            fmt_time(r.batched_s),
            _ratio(r.speedup),
            fmt_time(r.floor_s),
            _ratio(r.over_floor),
            _pair(r.per_seq_ops, r.batched_ops),
        ]
        if reads:
            cells.append(_pair(r.per_seq_reads, r.batched_reads))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_summary(data: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """One line on where and what was measured: device, dtype, model, mix, bandwidth, date, commit."""
    info = entries[0]["extra_info"]
    bw = info.get("bandwidth_Bps")
    commit = (data.get("commit_info") or {}).get("id") or "unknown commit"
    rounds = min((int(b["stats"]["rounds"]) for b in entries if b.get("stats")), default=0)
    mix = "every fourth row sampled" if info.get("mix", "mixed") == "mixed" else "every row greedy"
    return (
        f"{info.get('device_name', info.get('device'))}, {info['dtype']} {info['numerics']} numerics; "
        f"hidden {info['hidden']}, vocab {info['vocab_size']}, ladder {info['ladder_nd']}, "
        f"group cap {info['group_cap']}; {mix}; copy bandwidth {bw / 1e9:.1f} GB/s; "
        f"at least {rounds} rounds per cell; {data.get('datetime', 'undated')}, commit {commit[:12]}."
    )


def p1_table(entries: list[dict[str, Any]]) -> str:
    """Examples per second of the P1 check, with what one round covered."""
    lines = [
        "| examples (mismatched) | sequences (bootstrapped) | median per round | examples / s | examples / CPU s "
        "| spec draw |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for b in entries:
        i = b["extra_info"]
        cells = [
            f"{i['examples']} ({i.get('mismatched_examples', '-')})",
            f"{i['sequences']} ({i['bootstrapped']})",
            fmt_time(_median(b)),
            _rate(i.get("examples_per_s")),
            _rate(i.get("examples_per_cpu_s")),
            fmt_time(i.get("draw_s")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"
