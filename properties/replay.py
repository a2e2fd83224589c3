"""One command replays any failure's file, whatever wrote it:

    python -m properties.replay FILE [--impl NAME] [--device cpu|cuda]

A file is one of three kinds, told apart by what it holds: a step's world (a replay written by any
single-step property, or a promoted regression case: `properties.failures.replay`, which also takes
`--device`), a whole generation's script (P9: `properties.generations.replay`), or a case of the
oracles on a step's own or a declared sampler's draws (P10: `properties.sampling.test_step_draws`).
Every report prints this command; the options after FILE go to the kind's own replay.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

# What a file's top level holds, and the replay that reads it; anything else is a step's world.
KINDS: tuple[tuple[str, str, str], ...] = (
    ("actions", "a generation's script (P9)", "properties.generations.replay"),
    ("sources", "a case of the draw oracles (P10)", "properties.sampling.test_step_draws"),
)
STEP = ("a step's world", "properties.failures.replay")


def kind_of(path: Path) -> tuple[str, str]:
    """(what the file holds, the module that replays it). ValueError names a file that is no JSON
    object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a replay file: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a replay file: a JSON object was expected")
    return next(((what, module) for key, what, module in KINDS if key in data), STEP)


def forward(
    argv: list[str] | None, prog: str, doc: str | None, module_for: Callable[[Path], str], rest_help: str
) -> int:
    """A command that reads FILE and hands it, with the options after it, to the `main` of the module
    `module_for(FILE)` names; exit 2 with its message where `module_for` raises ValueError."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="a replay or regression file a report named")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=rest_help)
    args = parser.parse_args(argv)
    try:
        module = module_for(args.file)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    return int(importlib.import_module(module).main([str(args.file), *args.rest]))


def main(argv: list[str] | None = None) -> int:
    return forward(
        argv,
        "python -m properties.replay",
        __doc__,
        lambda f: kind_of(f)[1],
        "options of the kind's replay (--impl, --device)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
