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
    """Write the plot of `rows` to `path` (PNG): speedup against n, and both implementations' time
    over the floor against n, log-x. False (nothing written) without matplotlib or plottable rows."""
    if not have_matplotlib():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    speed = [(r.n, r.speedup) for r in rows if r.speedup is not None]
    batched = [(r.n, r.batched_s / r.floor_s) for r in rows if r.batched_s and r.floor_s]
    per_seq = [(r.n, r.per_seq_s / r.floor_s) for r in rows if r.per_seq_s and r.floor_s]
    if not (speed or batched or per_seq):
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    if speed:
        ax1.plot(*zip(*speed, strict=True), marker="o")
    ax1.axhline(1.0, color="grey", linewidth=0.8)
    ax1.set(xscale="log", xlabel="n (sequences)", ylabel="speedup (per-sequence / batched)")
    for points, label in ((per_seq, "per-sequence"), (batched, "batched")):
        if points:
            ax2.plot(*zip(*points, strict=True), marker="o", label=label)
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
