"""The speedup and time-over-floor plot (matplotlib, the optional `bench` extra)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.tables import Row


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_rows(rows: list[Row], path: Path, title: str) -> bool:
    """Write the plot of `rows` to `path` (PNG): the literal and the fully batched (`vector`) step's
    speedup over the loop against n, and every implementation's time over the floor against n,
    log-x. False (nothing written) without matplotlib or plottable rows."""
    if not have_matplotlib():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    speedups = {
        "literal": [(r.n, r.literal_speedup) for r in rows if r.literal_speedup is not None],
        "vector": [(r.n, r.vector_speedup) for r in rows if r.vector_speedup is not None],
    }
    over_floor = {
        "loop": [(r.n, r.loop_s / r.floor_s) for r in rows if r.loop_s and r.floor_s],
        "literal": [(r.n, r.literal_s / r.floor_s) for r in rows if r.literal_s and r.floor_s],
        "vector": [(r.n, r.vector_s / r.floor_s) for r in rows if r.vector_s and r.floor_s],
    }
    if not any(speedups.values()) and not any(over_floor.values()):
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"loop": "C0", "literal": "C1", "vector": "C2"}  # the same in both panels
    for label, points in speedups.items():
        if points:
            ax1.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
    ax1.axhline(1.0, color="grey", linewidth=0.8)
    ax1.set(xscale="log", yscale="log" if speedups["vector"] else "linear", xlabel="n (sequences)")
    ax1.set(ylabel="speedup over the loop")
    if speedups["vector"]:
        ax1.legend()
    for label, points in over_floor.items():
        if points:
            ax2.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
    ax2.axhline(1.0, color="grey", linewidth=0.8)
    ax2.set(xscale="log", yscale="log", xlabel="n (sequences)", ylabel="median time / memory floor")
    ax2.legend()
    for ax in (ax1, ax2):
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks([r.n for r in rows], [str(r.n) for r in rows])
        ax.grid(True, which="both", linewidth=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
