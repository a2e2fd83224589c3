"""Rows and markdown tables from a pytest-benchmark JSON file (`--benchmark-json`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.host_probe import HostSpeed, host_speed


@dataclass(slots=True, frozen=True)
class Row:
    """One batch size: medians of the implementations, the floor, and the counted device work. The
    fully batched step (`vector_*`) is None in files that did not run it."""

    n: int
    per_seq_s: float | None
    batched_s: float | None
    floor_s: float | None
    per_seq_ops: int | None
    batched_ops: int | None
    per_seq_reads: int | None
    batched_reads: int | None
    vector_s: float | None = None
    vector_ops: int | None = None
    vector_reads: int | None = None
    vector_host: HostSpeed | None = None  # its rounds against the host's speed, where both were recorded

    @property
    def speedup(self) -> float | None:
        return _div(self.per_seq_s, self.batched_s)

    @property
    def over_floor(self) -> float | None:
        return _div(self.batched_s, self.floor_s)

    @property
    def vector_speedup(self) -> float | None:
        return _div(self.per_seq_s, self.vector_s)

    @property
    def vector_over_floor(self) -> float | None:
        return _div(self.vector_s, self.floor_s)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


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
        per, bat, vec = by_n[n].get("per_seq"), by_n[n].get("batched"), by_n[n].get("vector")
        rows.append(
            Row(
                n=n,
                per_seq_s=_median(per),
                batched_s=_median(bat),
                floor_s=(bat or vec or per or {}).get("extra_info", {}).get("floor_s"),
                per_seq_ops=_info(per, "device_ops"),
                batched_ops=_info(bat, "device_ops"),
                per_seq_reads=_info(per, "host_reads"),
                batched_reads=_info(bat, "host_reads"),
                vector_s=_median(vec),
                vector_ops=_info(vec, "device_ops"),
                vector_reads=_info(vec, "host_reads"),
                vector_host=_host(vec),
            )
        )
    return rows


def _median(b: dict[str, Any] | None) -> float | None:
    return None if b is None or not b.get("stats") else float(b["stats"]["median"])


def _host(b: dict[str, Any] | None) -> HostSpeed | None:
    """The rounds of `b` against its host probes (`benchmarks.host_probe`); None where a file lacks
    either (older files, a run with timing disabled) or they do not pair up."""
    times = (b or {}).get("stats", {}).get("data")
    probes = _info(b, "host_probe_s")
    if not times or not probes or len(times) != len(probes):
        return None
    return host_speed(times, probes)


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
    """The markdown table: n, both medians, speedup, floor, batched over floor, counted work; with the
    fully batched step's columns when the rows have them (`vector_table`)."""
    if any(r.vector_s is not None or r.vector_ops is not None for r in rows):
        return vector_table(rows)
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


def _triple(a: int | None, b: int | None, c: int | None) -> str:
    return " / ".join("-" if x is None else str(x) for x in (a, b, c))


def vector_table(rows: list[Row]) -> str:
    """The three implementations side by side: the loop, the literal batched step and the fully
    batched step: medians, speedups over the loop, the floor, times over the floor, counted work."""
    reads = any(x is not None for r in rows for x in (r.per_seq_reads, r.batched_reads, r.vector_reads))
    head = (
        "| n | per-sequence | batched | fully batched | speedup (batched / fully) | floor "
        "| over floor (batched / fully) | device ops (per-seq / batched / fully) |"
    )
    rule = "|---:|---:|---:|---:|---:|---:|---:|---:|"
    if reads:
        head += " host reads (per-seq / batched / fully) |"
        rule += "---:|"
    lines = [head, rule]
    for r in rows:
        cells = [
            str(r.n),
            fmt_time(r.per_seq_s),
            fmt_time(r.batched_s),
            fmt_time(r.vector_s),
            f"{_ratio(r.speedup)} / {_ratio(r.vector_speedup)}",
            fmt_time(r.floor_s),
            f"{_ratio(r.over_floor)} / {_ratio(r.vector_over_floor)}",
            _triple(r.per_seq_ops, r.batched_ops, r.vector_ops),
        ]
        if reads:
            cells.append(_triple(r.per_seq_reads, r.batched_reads, r.vector_reads))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_summary(data: dict[str, Any], entries: list[dict[str, Any]]) -> str:
    """One line on where and what was measured: device, dtype, model, mix, bandwidth, date, commit."""
    info = entries[0]["extra_info"]
    bw = info.get("bandwidth_Bps")
    commit = (data.get("commit_info") or {}).get("id") or "unknown commit"
    rounds = min((int(b["stats"]["rounds"]) for b in entries if b.get("stats")), default=0)
    mix = "every fourth row sampled" if info.get("mix", "mixed") == "mixed" else "every row greedy"
    name = str(info.get("device_name", info.get("device")))
    # Older runs did not record the threads; a CPU's name already gives them.
    threads = f" {info['threads']} intra-op thread(s);" if "threads" in info and "intra-op" not in name else ""
    return (
        f"{name}, {info['dtype']} {info['numerics']} numerics; "
        f"hidden {info['hidden']}, vocab {info['vocab_size']}, ladder {info['ladder_nd']}, "
        f"group cap {info['group_cap']}; {mix};{threads} copy bandwidth {bw / 1e9:.1f} GB/s; "
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
        cells = [
            f"{i['examples']} ({i.get('mismatched_examples', '-')})",
            f"{i['sequences']} ({i['bootstrapped']})",
            fmt_time(_median(b)),
            _rate(i.get("examples_per_s")),
            _rate(i.get("examples_per_cpu_s")),
            _rate(i.get("rows_per_cpu_s")),
            fmt_time(i.get("draw_s")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"
