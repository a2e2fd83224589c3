"""Make a failing whole generation a permanent regression case in one step:

    python -m properties.generations.promote SCRIPT.json [--name NAME] [--note TEXT] [--force]

copies the script a failing P9 run wrote (the file its `replay:` line names) into
`properties/generations/regressions/NAME.json`, with the device set to `cpu` and a note saying what
it caught. `properties/generations/test_p9_generations.py` replays every file there, on the run's device, through
all of P9's checks. The command ends by replaying the case here and saying whether it fails now.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from properties.failures.regression_files import promote_main, promote_parser, write_case
from properties.generations.replay import read_script
from properties.generations.run import run_script
from properties.generations.spec import Script
from properties.impl import DEFAULT_IMPL, load

GENERATION_REGRESSIONS = Path(__file__).resolve().parent / "regressions"


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
    kept = on_device(script, "cpu")
    kept.note = note or script.note
    return write_case(dest_dir, name or src.stem, kept.to_json(indent=1) + "\n", force, "script")


def main(argv: list[str] | None = None) -> int:
    parser = promote_parser(
        "python -m properties.generations.promote",
        __doc__,
        "a generation script written by a failing P9 run",
        DEFAULT_IMPL,
    )

    def fails_now(dest: Path, impl: str) -> str | None:
        return "" if run_script(read_script(dest), load(impl)).failed_at is not None else None

    return promote_main(argv, parser, promote, "properties/generations/test_p9_generations.py", fails_now)


if __name__ == "__main__":
    raise SystemExit(main())
