"""One command makes any failure a permanent regression case:

    python -m properties.promote FILE --name NAME [--note TEXT] [--force] [--impl NAME]

A step's world becomes a case of `properties/step/regressions/` (`properties.failures.promote`), a
generation's script one of `properties/generations/regressions/` (`properties.generations.promote`);
the kind is read from the file as `python -m properties.replay` reads it. A case of the draw oracles
(P10) is not promoted: its replay is its check. The options after FILE go to the kind's own promote.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from properties.replay import kind_of

PROMOTES = {
    "properties.failures.replay": "properties.failures.promote",
    "properties.generations.replay": "properties.generations.promote",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m properties.promote", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, help="a replay file a report named")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="options of the kind's promote (--name, --note, ...)")
    args = parser.parse_args(argv)
    try:
        what, replay = kind_of(args.file)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    if replay not in PROMOTES:
        print(f"{args.file}: {what} is not promoted; `python -m properties.replay {args.file}` checks it", file=sys.stderr)
        return 2
    return int(importlib.import_module(PROMOTES[replay]).main([str(args.file), *args.rest]))


if __name__ == "__main__":
    raise SystemExit(main())
