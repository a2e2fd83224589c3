"""Replay one example from its JSON spec and print its report:
`python -m properties.failures.replay FILE.json [--impl module:function] [--device cpu|cuda]`.

The spec records numerics and dtype, so a failure found in fast bf16 on a GPU replays in fast bf16
here; `--device` moves it (the default is the device it was found on). Every check a regression
must pass runs: P1 equivalence, P3 call accounting, P7 logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from properties.failures.promote import full_check, on_device
from properties.failures.report import format_report
from properties.impl import DEFAULT_IMPL, impl_help, load
from properties.worlds.specs import WorldSpec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec", type=Path, help="a replay file written by a failing property")
    parser.add_argument("--impl", default=DEFAULT_IMPL, help=impl_help())
    parser.add_argument("--device", default=None, help="run on this device instead of the recorded one")
    args = parser.parse_args(argv)
    try:
        spec = WorldSpec.from_json(args.spec.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read replay spec {args.spec}: {e}", file=sys.stderr)
        return 2
    if args.device:
        spec = on_device(spec, args.device)
    m = spec.model
    print(f"replay: {m.numerics} numerics, {m.dtype} on {m.device}")
    sbs, mismatches = full_check(spec, load(args.impl))
    if not mismatches:
        print("replay: no difference")
        return 0
    print(format_report("replay", sbs, mismatches))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
