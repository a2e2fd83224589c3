"""Replay one example from its JSON spec and print its report:
`python -m properties.replay FILE.json [--impl module:function]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from properties import impl as impl_module
from properties.compare import check_equivalence
from properties.harness import run_side_by_side
from properties.report import format_report
from properties.specs import WorldSpec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec", type=Path, help="a replay file written by a failing property")
    parser.add_argument("--impl", default=None, help="implementation under test as module:function")
    args = parser.parse_args(argv)
    if args.impl:
        impl_module.select(args.impl)
    try:
        spec = WorldSpec.from_json(args.spec.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read replay spec {args.spec}: {e}", file=sys.stderr)
        return 2
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs)
    if not mismatches:
        print("replay: no difference")
        return 0
    print(format_report("replay", sbs, mismatches))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
