"""Make a failing whole generation a permanent regression case in one step:

    python -m properties.generations.promote SCRIPT.json [--name NAME] [--note TEXT] [--force]

copies the script a failing P9 run wrote (the file its `replay:` line names) into
`properties/generations/regressions/NAME.json`, with the device set to `cpu` and a note saying what
it caught. `properties/generations/test_p9_generations.py` replays every file there, on the run's device, through
all of P9's checks. The command ends by replaying the case here and saying whether it fails now.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from properties.generations.replay import read_script
from properties.generations.run import run_script
from properties.generations.spec import Script
from properties.impl import DEFAULT_IMPL, load

GENERATION_REGRESSIONS = Path(__file__).resolve().parent / "regressions"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def on_device(script: Script, device: str) -> Script:
    """`script` with its engines on `device`; dtype and numerics as recorded."""
    spec = replace(script.spec, model=replace(script.spec.model, device=device))
    return Script(spec, list(script.actions), script.note)


def promote(src: Path, name: str | None = None, note: str = "", force: bool = False,
            dest_dir: Path = GENERATION_REGRESSIONS) -> Path:  # fmt: skip
    """Write `src`'s script to `dest_dir/NAME.json` and return that path. ValueError for a file that
    is not a script or a bad name; FileExistsError when another regression has that name (unless
    `force`)."""
    script = read_script(src)
    name = name or src.stem
    if not NAME.fullmatch(name):
        raise ValueError(f"--name {name!r}: use lower-case letters, digits, '_' and '-' (at most 64)")
    kept = on_device(script, "cpu")
    kept.note = note or script.note
    text = kept.to_json(indent=1) + "\n"
    dest = dest_dir / f"{name}.json"
    if dest.exists() and dest.read_text() != text and not force:
        raise FileExistsError(f"{dest} exists with another script: choose another --name or pass --force")
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m properties.generations.promote",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("script", type=Path, help="a generation script written by a failing P9 run")
    parser.add_argument("--name", default=None, help="the regression's name (default: the file's name)")
    parser.add_argument("--note", default="", help="what the case caught, kept in the file")
    parser.add_argument("--force", action="store_true", help="replace a regression of the same name")
    parser.add_argument("--impl", default=DEFAULT_IMPL, help="the implementation to check it against now")
    args = parser.parse_args(argv)
    try:
        dest = promote(args.script, args.name, args.note, args.force)
    except (ValueError, FileExistsError) as e:
        print(e, file=sys.stderr)
        return 2
    print(f"promoted to {dest}; properties/generations/test_p9_generations.py replays it on every run")
    run = run_script(read_script(dest), load(args.impl))
    print("it fails here now: commit it with the fix" if run.failed_at is not None else "it passes here now")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
