"""The verification job: run the properties with a profile on the best available device and end
with a summary table.

    python -m properties.verify [--profile dev|ci|nightly|gpu] [--device best|cpu|cuda]
                                [--numerics exact|fast] [--dtype float64|float32|bfloat16]
                                [--max-n N] [--impl module:function]
                                [--matrix] [-- extra pytest arguments]
"""

from __future__ import annotations

import argparse
import sys

import pytest

from properties.behaviours import matrix_text, uncovered
from properties.config import DTYPES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m properties.verify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", default=None, help="Hypothesis profile (default: dev, ci under CI)")
    parser.add_argument("--device", default="best", help="cpu, cuda, cuda:N or best (default best)")
    parser.add_argument("--numerics", default=None, choices=("exact", "fast"))
    parser.add_argument("--dtype", default=None, choices=DTYPES, help="model dtype (default: by numerics and device)")
    parser.add_argument("--max-n", type=int, default=None, help="largest sequence mix")
    parser.add_argument("--impl", default=None, help="the implementation under test: a name or module:function")
    parser.add_argument("--matrix", action="store_true", help="print the behaviour x property matrix and exit")
    args, extra = parser.parse_known_args(argv)
    if args.matrix:
        print(matrix_text())
        missing = uncovered()
        print(f"\nuncovered: {', '.join(missing)}" if missing else "\nevery G/B/D id is covered")
        return 1 if missing else 0
    pytest_args = ["--pyargs", "properties", "-p", "properties.summary_plugin", "-q", "--device", args.device]
    for flag, value in (
        ("--hypothesis-profile", args.profile),
        ("--numerics", args.numerics),
        ("--dtype", args.dtype),
        ("--max-n", args.max_n),
        ("--impl", args.impl),
    ):
        if value is not None:
            pytest_args += [flag, str(value)]
    pytest_args += [a for a in extra if a != "--"]
    return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main())
