"""Replay one example from its JSON spec and print its report:
`python -m properties.failures.replay FILE.json [--impl module:function] [--device cpu|cuda]`.

The spec records numerics and dtype, so a failure found in fast bf16 on a GPU replays in fast bf16
here; `--device` moves it (the default is the device it was found on). The implementation is
`--impl`, else `MTP_VERIFY_IMPL`, else the literal step, as a run's. Every check a regression
must pass runs: P1 equivalence, P3 call accounting, P7 logs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from properties.config import Default, RunConfig, option_or_env
from properties.failures.promote import full_check, on_device
from properties.failures.report import format_report
from properties.impl import DEFAULT_IMPL, Impl, load
from properties.worlds.specs import WorldSpec


def main(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> int:
    """Replay the file `argv` names; 0 without a difference, 1 with one, 2 for a file that cannot be
    read (options that cannot run exit 2 as argparse does, naming the option)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", type=Path, help="a replay file written by a failing property")
    recorded = Default(None, "the device it was found on")
    RunConfig.add_arguments(parser, ("impl", "device"), {"device": recorded})
    args = parser.parse_args(argv)
    try:
        device = RunConfig.build({"device": args.device}, {}).device if args.device else None
        impl: Impl = load(option_or_env("impl", vars(args), env) or DEFAULT_IMPL)
    except ValueError as e:
        parser.error(str(e))
    try:
        spec = WorldSpec.from_json(args.spec.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read replay spec {args.spec}: {e}", file=sys.stderr)
        return 2
    if device:
        spec = on_device(spec, device)
    m = spec.model
    print(f"replay: {m.numerics} numerics, {m.dtype} on {m.device}")
    sbs, mismatches = full_check(spec, impl)
    if not mismatches:
        print("replay: no difference")
        return 0
    print(format_report("replay", sbs, mismatches))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
