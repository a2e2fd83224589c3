"""Replay a whole-generation script and print its report:
`python -m properties.generations.replay FILE.json [--impl module:function]` (the implementation
`--impl`, else `MTP_VERIFY_IMPL`, else the literal step, as a run's)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from properties.config import RunConfig, option_or_env
from properties.generations.report import format_generation_report
from properties.generations.run import run_script
from properties.generations.spec import Script
from properties.impl import DEFAULT_IMPL, Impl, load


def read_script(path: Path) -> Script:
    """The script a replay or regression file holds; ValueError naming the file otherwise."""
    try:
        return Script.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a generation script: {e}") from None


def main(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> int:
    """Replay the script `argv` names; 0 without a difference, 1 with one, 2 for a file that is no
    script (a bad `--impl` exits 2 as argparse does, naming the option)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("script", type=Path, help="a generation script written by a failing P9 run")
    RunConfig.add_arguments(parser, ("impl",))
    args = parser.parse_args(argv)
    try:
        impl: Impl = load(option_or_env("impl", vars(args), env) or DEFAULT_IMPL)
    except ValueError as e:
        parser.error(str(e))
    try:
        script = read_script(args.script)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    run = run_script(script, impl)
    if run.failed_at is None:
        s = run.pair.stats
        print(f"replay: no difference ({s.steps} steps, {s.generations} requests finished)")
        return 0
    print(format_generation_report("replay", run.pair, run.mismatches))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
