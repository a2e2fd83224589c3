"""The `bench` job: the pytest-benchmark benchmarks of `benchmarks/`, then their tables and plots.

Suites: `bootstrap` (`bench_bootstrap.py`: the implementations side by side per batch size, once per
mix and `--repeat` times, each run's JSON `bench-<mix>[-<i>].json`), `host` (`bench_p1_host.py`: P1
examples a second of the whole GPU host, `--host-*`), `p1` (`bench_p1_throughput.py`: P1 examples a
CPU second). The bootstrap runs share what the budget leaves after the others, and a run stopped at
its share still writes the cells it finished. The report: `report/benchmarks.md` and its plots
(`python -m benchmarks.report`), `report/vector-summary.md` (`python -m benchmarks.vector_summary` at
`--summary-n`), and in the summary each run's medians at that batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jobs.session import Session, pairs, read_json, suite_field

SUITES = ("bootstrap", "host", "p1")
OTHER_S = {"host": 120.0, "p1": 90.0}  # time limits of the other suites
REPORT_S = 40.0  # kept for the report


@dataclass(slots=True, frozen=True)
class BenchParams:
    device: str = suite_field("cuda")
    suites: tuple[str, ...] = field(default=("bootstrap",), metadata={"help": f"among {', '.join(SUITES)}"})
    mixes: tuple[str, ...] = field(default=("mixed", "greedy"), metadata={"help": "bootstrap: mixed, greedy"})
    sizes: str = field(default="", metadata={"help": "bootstrap: batch sizes, e.g. 1,2,4 (default: the device's)"})
    impls: str = field(default="", metadata={"help": "bootstrap: e.g. loop,literal,vector (the default)"})
    cell_budget_s: float = field(default=0.4, metadata={"help": "bootstrap: timed seconds aimed at per cell"})
    select: str = field(default="", metadata={"help": "bootstrap: pytest -k expression, e.g. 'vector and n064'"})
    repeat: int = field(default=1, metadata={"help": "bootstrap: runs of each mix, each its own process"})
    cpus: str = field(default="", metadata={"help": "bootstrap: pin the runs to these CPUs, e.g. 2,3"})
    summary_n: int = field(default=64, metadata={"help": "the batch size the summary shows"})
    max_n: int = suite_field(0, "64; the host suite's")
    numerics: str = suite_field("", "fast; the host suite's")
    reference_device: str = suite_field("", "same; the host suite's")
    host_workers: int = field(default=0, metadata={"help": "host: worker processes (0: one per core)"})
    host_examples: int = field(default=0, metadata={"help": "host: examples a worker (0: 20)"})
    host_mps: bool = field(default=False, metadata={"help": "host: the workers share the GPU through CUDA MPS"})
    host_seconds: float = field(default=0.0, metadata={"help": "host: count examples finished in a window this long"})
    p1_rounds: int = field(default=0, metadata={"help": "p1: timed rounds (0: 1)"})


def bootstrap_command(s: Session, p: BenchParams, mix: str, out: Path) -> list[str]:
    cmd = s.py("-m", "pytest", "-q", "-p", "no:cacheprovider", "benchmarks/bench_bootstrap.py", "--device", p.device)
    cmd += ["--bench-mix", mix, "--bench-budget", str(p.cell_budget_s), "--benchmark-json", str(out)]
    return cmd + pairs(("--bench-sizes", p.sizes), ("--bench-impls", p.impls), ("-k", p.select))


def host_command(s: Session, p: BenchParams, out: Path) -> list[str]:
    cmd = s.py("-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "benchmarks/bench_p1_host.py", "--device")
    cmd += [p.device, "--benchmark-json", str(out), *(["--bench-host-mps"] if p.host_mps else [])]
    cmd += pairs(("--max-n", p.max_n or 64), ("--numerics", p.numerics or "fast"))
    cmd += pairs(("--reference-device", p.reference_device), ("--bench-host-workers", p.host_workers))
    return cmd + pairs(("--bench-host-examples", p.host_examples), ("--bench-host-seconds", p.host_seconds))


def p1_command(s: Session, p: BenchParams, out: Path) -> list[str]:
    cmd = s.py("-m", "pytest", "-q", "-p", "no:cacheprovider", "benchmarks/bench_p1_throughput.py")
    return [*cmd, "--benchmark-json", str(out), *pairs(("--bench-p1-rounds", p.p1_rounds))]


def medians_table(files: list[Path], n: int) -> str:
    """Markdown: for each results file, every implementation's median at batch size n (ms)."""
    lines = [f"Medians at n = {n} (ms):", "", "| run | implementation | median | rounds |", "|---|---|---:|---:|"]
    for path in files:
        for b in (read_json(path) or {}).get("benchmarks", []):
            info = b.get("extra_info", {})
            if info.get("n") == n and "impl" in info:
                stats = b["stats"]
                lines.append(f"| {path.stem} | {info['impl']} | {1e3 * stats['median']:.3f} | {stats['rounds']} |")
    return "\n".join(lines) if len(lines) > 4 else ""


def report(s: Session, p: BenchParams, files: list[Path]) -> None:
    """The tables and plots of the results files, and the summary's sections."""
    written = [f for f in files if f.exists() and f.stat().st_size > 0]
    if not written and not s.dry_run:
        s.sections.append("No results file was written: nothing to report.")
        return
    folder = s.path("report")
    s.run("report", s.py("-m", "benchmarks.report", *(files if s.dry_run else written), "--out", folder), 30)
    boot = [f for f in (files if s.dry_run else written) if f.name.startswith("bench-")]
    if boot and "vector" in (p.impls or "vector"):
        doc = folder / "vector-summary.md"
        step = s.run("vector-summary", s.py("-m", "benchmarks.vector_summary", *boot, "--n", p.summary_n, "--doc", doc))
        if doc.exists():
            step.outcome = "wrote report/vector-summary.md"
            s.sections.append("\n".join(line for line in doc.read_text().splitlines() if not line.startswith("<!--")))
    table = medians_table(boot, p.summary_n) if p.repeat > 1 or not s.sections else ""
    if table:
        s.sections.append(table)


def bench(s: Session, p: BenchParams) -> None:
    """Run the suites asked for, then `report`."""
    unknown = set(p.suites) - set(SUITES)
    if unknown:
        raise ValueError(f"--suites {', '.join(sorted(unknown))}: expected among {', '.join(SUITES)}")
    cpus = tuple(int(c) for c in p.cpus.split(",") if c.strip())
    files: list[Path] = []
    if "host" in p.suites:
        files.append(s.path("p1-host.json"))
        s.run("host", host_command(s, p, files[-1]), limit_s=OTHER_S["host"])
    if "p1" in p.suites:
        files.append(s.path("p1.json"))
        s.run("p1", p1_command(s, p, files[-1]), limit_s=OTHER_S["p1"])
    runs = [(mix, i) for i in range(p.repeat) for mix in p.mixes] if "bootstrap" in p.suites else []
    for k, (mix, i) in enumerate(runs):
        name = f"bench-{mix}" + (f"-{i + 1}" if p.repeat > 1 else "")
        files.append(s.path(f"{name}.json"))
        share = s.share_s(len(runs) - k, keep_s=REPORT_S)
        s.run(name, bootstrap_command(s, p, mix, files[-1]), limit_s=share, cpus=cpus)
    report(s, p, files)
