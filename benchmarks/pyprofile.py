"""The heaviest Python functions of a cProfile run, as rows a report can print or store."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
from typing import Any


def python_table(prof: cProfile.Profile, sort: str, rows: int) -> list[dict[str, Any]]:
    """The `rows` heaviest functions by `sort` ("tottime" or "cumulative"): where each is, its calls,
    its own seconds and its cumulative seconds."""
    st = pstats.Stats(prof, stream=io.StringIO())
    st.sort_stats(sort)
    out = []
    for fn in st.fcn_list[:rows]:  # type: ignore[attr-defined]
        _, calls, own, cum, _ = st.stats[fn]  # type: ignore[attr-defined]
        where = os.path.relpath(fn[0]) if fn[0].startswith("/") else fn[0]
        out.append({"function": f"{where}:{fn[1]}({fn[2]})", "calls": calls, "own_s": own, "cum_s": cum})
    return out


def print_table(title: str, table: list[dict[str, Any]], key: str, per: int) -> None:
    """Print `table` as ms and calls per unit (`per` units were profiled)."""
    print(f"-- Python functions by {title} (ms and calls per unit)")
    for r in table:
        print(f"{1e3 * r[key] / per:9.3f} {r['calls'] / per:8.1f}  {r['function']}")
