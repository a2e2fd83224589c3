"""`python -m benchmarks.report RESULTS.json ... --out DIR`: write pytest-benchmark JSON files'
results into `DIR/benchmarks.md` and plot them (several files: their results together, as one run
split by batch size, so that a run cut short still reports the sizes it finished).

The bootstrap table goes into the block of its device kind and mix (`bench:gpu`, `bench:cpu`,
`bench:gpu-greedy`, `bench:cpu-greedy`; `properties.run.doc_blocks`), the P1 throughput table into
the `bench:p1` block; the rest of the page is left as it is, and a missing page or block is created. With matplotlib
installed (`pip install -e '.[bench]'`) the plot goes to `<out>/benchmarks.png` for the GPU's mixed
results and `<out>/benchmarks-<key>.png` for the others.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.tables import (
    IMPLS,
    Row,
    bootstrap_entries,
    bootstrap_rows,
    bootstrap_table,
    p1_entries,
    p1_table,
    run_summary,
    section,
)
from properties.run.doc_blocks import replace_block

DOC_NAME = "benchmarks.md"


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_rows(rows: list[Row], path: Path, title: str) -> bool:
    """Write the plot of `rows` to `path` (PNG): the batched steps' speedup over the loop against n,
    and every implementation's time over the floor against n, log-x. False (nothing written) without
    matplotlib or plottable rows."""
    if not have_matplotlib():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    speedups = {i: [(r.n, r.speedup(i)) for r in rows if r.speedup(i) is not None] for i in IMPLS[1:]}
    over_floor = {i: [(r.n, r.over_floor(i)) for r in rows if r.over_floor(i)] for i in IMPLS}
    if not any(speedups.values()) and not any(over_floor.values()):
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"loop": "C0", "literal": "C1", "vector": "C2"}  # the same in both panels
    ax1.set(xscale="log", yscale="log" if speedups["vector"] else "linear", ylabel="speedup over the loop")
    ax2.set(xscale="log", yscale="log", ylabel="median time / memory floor")
    for ax, lines in ((ax1, speedups), (ax2, over_floor)):
        for label, points in lines.items():
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set(xlabel="n (sequences)")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks([r.n for r in rows], [str(r.n) for r in rows])
        ax.grid(True, which="both", linewidth=0.3)
    if speedups["vector"]:
        ax1.legend()
    ax2.legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def section_key(entry: dict[str, Any]) -> str:
    """gpu or cpu, with `-greedy` for the all-greedy mix."""
    info = entry["extra_info"]
    kind = "gpu" if str(info.get("device", "")).startswith("cuda") else "cpu"
    return kind if info.get("mix", "mixed") == "mixed" else f"{kind}-{info['mix']}"


def bootstrap_sections(data: dict[str, Any], out: Path) -> list[tuple[str, str, Path | None]]:
    """(marker key, markdown body, plot written or None) per device kind and mix in the file."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for b in bootstrap_entries(data):
        by_key.setdefault(section_key(b), []).append(b)
    sections = []
    for key, entries in by_key.items():
        rows = bootstrap_rows(entries)
        plot_path = out / ("benchmarks.png" if key == "gpu" else f"benchmarks-{key}.png")
        plotted = plot_rows(rows, plot_path, f"MTP bootstrap, {key}: {entries[0]['extra_info']['dtype']}")
        body = f"Measured on {run_summary(data, entries)}\n\n{bootstrap_table(rows)}\n"
        if plotted:
            body += f"\n![speedup and time over the floor against n]({plot_path.name})\n"
        sections.append((key, body, plot_path if plotted else None))
    return sections


def p1_section(data: dict[str, Any]) -> str | None:
    entries = p1_entries(data)
    if not entries:
        return None
    i = entries[0]["extra_info"]
    head = (
        f"Measured on {i['device']}, {i['numerics']} numerics, n <= {i['max_n']}, {i['threads']} intra-op "
        f"thread(s); {data.get('datetime', 'undated')}."
    )
    return f"{head}\n\n{p1_table(entries)}\n"


def merged(results: Sequence[Path]) -> dict[str, Any]:
    """The first file's run with the benchmarks of every file. ValueError for none."""
    if not results:
        raise ValueError("no results files given")
    runs = [json.loads(path.read_text()) for path in results]
    return {**runs[0], "benchmarks": [b for run in runs for b in run.get("benchmarks", [])]}


def write_report(results: Path | Sequence[Path], out: Path) -> list[Path]:
    """Update `<out>/benchmarks.md` (and the plot) from `results` (one file or several, merged);
    returns the files written. ValueError when they hold neither bootstrap nor P1 results."""
    data = merged([results] if isinstance(results, Path) else results)
    doc = out / DOC_NAME
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    written: list[Path] = []
    boot = bootstrap_sections(data, out)
    for key, body, plot in boot:
        text = replace_block(text, section(key), body.strip(), append=True)
        written += [plot] if plot else []
    p1 = p1_section(data)
    if p1 is not None:
        text = replace_block(text, section("p1"), p1.strip(), append=True)
    if not boot and p1 is None:
        raise ValueError(f"{results}: no bootstrap or P1 benchmark results in it")
    out.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    return [doc, *written]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="pytest-benchmark JSON files (--benchmark-json)")
    parser.add_argument("--out", type=Path, required=True, help="the folder of the report's benchmarks.md and plots")
    args = parser.parse_args(argv)
    try:
        written = write_report(args.results, args.out)
    except (OSError, ValueError, KeyError) as e:
        print(f"benchmarks.report: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
