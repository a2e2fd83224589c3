"""Make a failure a permanent regression case in one step:

    python -m properties.failures.promote REPLAY.json [--name NAME] [--note TEXT] [--force]

copies the replay spec a failing property wrote (the file its `replay:` line names) into
`properties/step/regressions/NAME.json` (NAME defaults to the replay file's name), with the device set to
`cpu` and an optional note saying what it caught. `properties/step/test_regressions.py` replays every file
there through the full checks (P1 equivalence, P3 call accounting, P7 logs) on every run, on the run's
device. The command ends by replaying the case here and saying whether it fails now.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.config import DEFAULT_REPLAYS
from properties.failures.regression_files import promote_main, promote_parser, write_case
from properties.impl import DEFAULT_IMPL, Impl, load
from properties.sides.harness import run_side_by_side
from properties.sides.mismatch import Mismatch
from properties.sides.side_by_side import SideBySide
from properties.worlds.specs import WorldSpec

REGRESSIONS = Path(__file__).resolve().parent.parent / "step" / "regressions"


def load_regression(path: Path) -> tuple[WorldSpec, str]:
    """The spec a regression (or replay) file holds and its note ("" when it has none); ValueError
    naming the file when it is not a spec."""
    try:
        text = path.read_text()
        return WorldSpec.from_json(text), str(json.loads(text).get("note", ""))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a replay spec: {e}") from None


def on_device(spec: WorldSpec, device: str) -> WorldSpec:
    """`spec` with both sides on `device`; dtype and numerics as recorded."""
    return replace(spec, model=replace(spec.model, device=device, reference_device=""))


def full_check(spec: WorldSpec, impl: Impl, replays: Path = DEFAULT_REPLAYS) -> tuple[SideBySide, list[Mismatch]]:
    """Run `spec` side by side against `impl` and apply every check a regression must pass: P1
    equivalence, P3 call accounting and P7 logs."""
    sbs = run_side_by_side(spec, impl, replays)
    return sbs, check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)


def regression_text(spec: WorldSpec, note: str) -> str:
    """The file a regression is kept in: the spec as JSON, one field a line, plus the note."""
    d = json.loads(on_device(spec, "cpu").to_json())
    if note:
        d["note"] = note
    return json.dumps(d, indent=1, sort_keys=True) + "\n"


def promote(
    src: Path, name: str | None = None, note: str = "", force: bool = False, dest_dir: Path = REGRESSIONS
) -> Path:
    """Write `src`'s spec to `dest_dir/NAME.json` and return that path. ValueError for a file that
    is not a spec or a name that is not lower-case letters, digits, `_` and `-`; FileExistsError
    when another regression has that name (unless `force`)."""
    spec, old_note = load_regression(src)
    return write_case(dest_dir, name or src.stem, regression_text(spec, note or old_note), force, "spec")


def main(argv: list[str] | None = None) -> int:
    parser = promote_parser(
        "python -m properties.failures.promote", __doc__, "a replay file written by a failing property", DEFAULT_IMPL
    )

    def fails_now(dest: Path, impl: str) -> str | None:
        spec, _ = load_regression(dest)
        _, mismatches = full_check(spec, load(impl))
        return f" ({len(mismatches)} difference(s))" if mismatches else None

    return promote_main(argv, parser, promote, "properties/step/test_regressions.py", fails_now)


if __name__ == "__main__":
    raise SystemExit(main())
