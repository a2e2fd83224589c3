"""`python -m benchmarks.vector_summary RESULTS.json [...] [--n 64] [--doc docs/vector-step.md]`: the
fully batched step against its targets at one batch size, as a markdown table.

Per mix found in the files: the medians of the per-sequence loop (`loop`), the literal batched step
(`literal`) and the fully batched step (`vector`), the memory floor, the fully batched step's time
over the floor and its speedup over the loop, each against its target (`benchmarks.tables`: within
5x of the floor with every row greedy, within 8x with every fourth row sampled, at least 100x faster
than the loop), and how many of its rounds ran on a slowed host (`benchmarks.host_probe`; the
verdicts use every round). Printed, and with `--doc` written into the `bench:vector-summary` block
of that page (`properties.run.doc_blocks`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.tables import rows_by_mix, section, summary_table
from properties.run.doc_blocks import replace_block

SECTION = section("vector-summary", "python -m benchmarks.vector_summary")


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
        args.doc.write_text(replace_block(text, SECTION, body.strip(), append=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
