"""Replay a whole-generation script and print its report:
`python -m properties.generations.replay FILE.json [--impl module:function]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from properties.generations.report import format_generation_report
from properties.generations.run import run_script
from properties.generations.spec import Script
from properties.impl import DEFAULT_IMPL, impl_help, load


def read_script(path: Path) -> Script:
    """The script a replay or regression file holds; ValueError naming the file otherwise."""
    try:
        return Script.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a generation script: {e}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("script", type=Path, help="a generation script written by a failing P9 run")
    parser.add_argument("--impl", default=DEFAULT_IMPL, help=impl_help())
    args = parser.parse_args(argv)
    try:
        script = read_script(args.script)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    run = run_script(script, load(args.impl))
    if run.failed_at is None:
        s = run.pair.stats
        print(f"replay: no difference ({s.steps} steps, {s.generations} requests finished)")
        return 0
    print(format_generation_report("replay", run.pair, run.mismatches))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
