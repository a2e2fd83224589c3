"""Rows and markdown tables from a pytest-benchmark JSON file (`--benchmark-json`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.host_probe import HostSpeed, host_speed

# Older results files named the implementations otherwise; they are read under today's names.
LEGACY_IMPLS = {"per_seq": "loop", "batched": "literal"}


@dataclass(slots=True, frozen=True)
class Row:
    """One batch size: medians of the implementations (`loop`, `literal`, `vector`: the names of
    `benchmarks.settings.IMPL_NAMES`), the floor, and the counted device work. An implementation
    missing from the file is None."""

    n: int
    loop_s: float | None
    literal_s: float | None
    floor_s: float | None
    loop_ops: int | None
    literal_ops: int | None
    loop_reads: int | None
    literal_reads: int | None
    vector_s: float | None = None
    vector_ops: int | None = None
    vector_reads: int | None = None
    vector_host: HostSpeed | None = None  # its rounds against the host's speed, where both were recorded

    @property
    def literal_speedup(self) -> float | None:
        return _div(self.loop_s, self.literal_s)

    @property
    def literal_over_floor(self) -> float | None:
        return _div(self.literal_s, self.floor_s)

    @property
    def vector_speedup(self) -> float | None:
        return _div(self.loop_s, self.vector_s)

    @property
    def vector_over_floor(self) -> float | None:
        return _div(self.vector_s, self.floor_s)


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def impl_name(entry: dict[str, Any]) -> str:
    """The implementation a benchmark entry ran, under today's name."""
    name = str(entry["extra_info"]["impl"])
    return LEGACY_IMPLS.get(name, name)


def bootstrap_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The bootstrap benchmarks of a results file (those that recorded an `impl`)."""
    return [b for b in data.get("benchmarks", []) if "impl" in b.get("extra_info", {})]


def p1_entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The P1 throughput benchmarks of a results file."""
    return [b for b in data.get("benchmarks", []) if "examples_per_s" in b.get("extra_info", {})]


def bootstrap_rows(entries: list[dict[str, Any]]) -> list[Row]:
    """One row per batch size, ascending; an implementation missing from the file is None."""
    by_n: dict[int, dict[str, dict[str, Any]]] = {}
    for b in entries:
        by_n.setdefault(int(b["extra_info"]["n"]), {})[impl_name(b)] = b
    rows = []
    for n in sorted(by_n):
        loop, literal, vector = by_n[n].get("loop"), by_n[n].get("literal"), by_n[n].get("vector")
        rows.append(
            Row(
                n=n,
                loop_s=_median(loop),
                literal_s=_median(literal),
                floor_s=(literal or vector or loop or {}).get("extra_info", {}).get("floor_s"),
                loop_ops=_info(loop, "device_ops"),
                literal_ops=_info(literal, "device_ops"),
                loop_reads=_info(loop, "host_reads"),
                literal_reads=_info(literal, "host_reads"),
                vector_s=_median(vector),
                vector_ops=_info(vector, "device_ops"),
                vector_reads=_info(vector, "host_reads"),
                vector_host=_host(vector),
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
    """The markdown table: n, the loop's and the literal step's medians, speedup, floor, time over the
    floor, counted work; with the fully batched step's columns when the rows have them (`vector_table`)."""
    if any(r.vector_s is not None or r.vector_ops is not None for r in rows):
        return vector_table(rows)
    reads = any(r.loop_reads is not None or r.literal_reads is not None for r in rows)
    head = "| n | loop | literal | speedup over the loop | floor | literal / floor | device ops (loop / literal) |"
    rule = "|---:|---:|---:|---:|---:|---:|---:|"
    if reads:
        head += " host reads (loop / literal) |"
        rule += "---:|"
    lines = [head, rule]
    for r in rows:
        cells = [
            str(r.n),
            fmt_time(r.loop_s),
            fmt_time(r.literal_s),
            _ratio(r.literal_speedup),
            fmt_time(r.floor_s),
            _ratio(r.literal_over_floor),
            _pair(r.loop_ops, r.literal_ops),
        ]
        if reads:
            cells.append(_pair(r.loop_reads, r.literal_reads))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _triple(a: int | None, b: int | None, c: int | None) -> str:
    return " / ".join("-" if x is None else str(x) for x in (a, b, c))


def vector_table(rows: list[Row]) -> str:
    """The three implementations side by side, the loop, the literal batched step and the fully
    batched step: medians, speedups over the loop, the floor, times over the floor, counted work."""
    reads = any(x is not None for r in rows for x in (r.loop_reads, r.literal_reads, r.vector_reads))
    head = (
        "| n | loop | literal | vector | speedup over the loop (literal / vector) | floor "
        "| over floor (literal / vector) | device ops (loop / literal / vector) |"
    )
    rule = "|---:|---:|---:|---:|---:|---:|---:|---:|"
    if reads:
        head += " host reads (loop / literal / vector) |"
        rule += "---:|"
    lines = [head, rule]
    for r in rows:
        cells = [
            str(r.n),
            fmt_time(r.loop_s),
            fmt_time(r.literal_s),
            fmt_time(r.vector_s),
            f"{_ratio(r.literal_speedup)} / {_ratio(r.vector_speedup)}",
            fmt_time(r.floor_s),
            f"{_ratio(r.literal_over_floor)} / {_ratio(r.vector_over_floor)}",
            _triple(r.loop_ops, r.literal_ops, r.vector_ops),
        ]
        if reads:
            cells.append(_triple(r.loop_reads, r.literal_reads, r.vector_reads))
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
