"""What kills each wrong step: `python -m mutants.wrong_steps.table [--numerics fast --dtype D]
[--only NAME] [--workers N] [--json PATH] [--write]`.

Each wrong step of this package (`WRONG`: a class of bug an engine's step really has, as a module run
through `--impl`) meets every property of the step (`properties/`, the self tests left out) in the
`mutants` profile (derandomized, 60 examples, no shrinking) with the mutation runner's counting
plugin (`mutants.plugin`): every test runs to its end, so the table lists every test that fails
against it and the example at which each first failed. A wrong step no test kills, or a test that
errors, makes the command exit 1. `--write` puts the mode's table into `docs/wrong-steps.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from properties.config import RunConfig
from properties.run.doc_blocks import Block, write_block
from reference.model.modes import NumericsMode

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "wrong-steps.md"
# name: (module:function, the class of bug)
WRONG: dict[str, tuple[str, str]] = {
    "do nothing": ("mutants.wrong_steps.null:do_nothing", "a step that does nothing"),
    "raise": ("mutants.wrong_steps.raising:raise_error", "a step that raises, and its declared sampler too"),
    "never samples": ("mutants.wrong_steps.never_samples:step", "every sampled row its best kept token"),
    "temperature 1": ("mutants.wrong_steps.temperature_one:step", "cut at the temperature, drawn at 1"),
    "position ignored": ("mutants.wrong_steps.position_ignored:step", "noise seeded from the seed alone"),
    "seeds truncated": ("mutants.wrong_steps.seeds_truncated:step", "noise seeded from 32 bits of the seed"),
    "rows mixed up": ("mutants.wrong_steps.rows_mixed:step", "each sampled row the next one's token"),
    "batch-position noise": ("mutants.wrong_steps.batch_position_noise:step", "one generator per batch"),
    "no index validation": ("mutants.wrong_steps.no_index_validation:step", "bad indices mended, not refused"),
    "cache in a deque": ("mutants.wrong_steps.cache_in_deque:step", "a per-process deque of rows it saw"),
    "state changed by prepare_model": ("mutants.wrong_steps.prepare_model_state:step", "weights scaled in place"),
}


@dataclass(slots=True)
class Killed:
    """One wrong step's run: each failing test with the example it first failed at, and the time."""

    name: str
    killers: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    tests: int = 0
    seconds: float = 0.0


def run_one(name: str, numerics: str, dtype: str | None, workers: int) -> Killed:
    """The properties against wrong step `name` (module docstring)."""
    spec = WRONG[name][0]
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "pytest", "properties", "-m", "not self_test", "--impl", spec, "-q"]
        cmd += ["--hypothesis-profile", "mutants", "--numerics", numerics, "--replays", str(Path(tmp) / "replays")]
        cmd += ["-p", "mutants.plugin", "--mutants-result", str(result), "-p", "no:randomly"]
        cmd += ["--dtype", dtype] if dtype else []
        cmd += ["-n", str(workers)] if workers > 1 else []
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MTP_VERIFY_", "PYTEST_"))}
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
        out = Killed(name, seconds=round(time.perf_counter() - start, 1))
        if not result.is_file():
            out.errors.append(f"{' '.join(cmd)} wrote no results")
            return out
        rows = json.loads(result.read_text())["tests"]
    out.tests = len(rows)
    for r in rows:
        if r["outcome"] == "failed":
            out.killers[r["nodeid"]] = int(r["failing_example"] or 1)
    return out


def short(nodeid: str) -> str:
    """`file::test[case]` as `test`, a split property's cases merged."""
    return nodeid.rpartition("::")[2].partition("[")[0]


def merged(k: Killed) -> dict[str, int]:
    """The killing tests by name (cases merged), each at the earliest example any case failed."""
    out: dict[str, int] = {}
    for nodeid, example in k.killers.items():
        out[short(nodeid)] = min(example, out.get(short(nodeid), example))
    return out


def mode_of(numerics: NumericsMode, dtype: str | None) -> tuple[str, str, str]:
    """A mode's name in its table, the options its command adds, and its block of the page: exact
    numerics (in the suite's dtypes) are "exact", fast numerics name their options."""
    if numerics == NumericsMode.EXACT:
        return "exact", "", "wrong-steps-exact"
    options = f"--numerics {numerics}" + (f" --dtype {dtype}" if dtype else "")
    return options, options, f"wrong-steps-{numerics}-{dtype or 'default'}"


def table(results: list[Killed], mode: str, options: str = "") -> str:
    """The markdown table of one mode (`mode_of`'s name and options)."""
    command = "python -m mutants.wrong_steps.table" + (f" {options}" if options else "")
    lines = [f"Mode: {mode}. Command: `{command}`.", ""]
    lines += ["| wrong step | the bug | killed by (example of the first failure) | tests failed | time |"]
    lines.append("|---|---|---|---|---:|")
    for k in results:
        by = sorted(merged(k).items(), key=lambda kv: (kv[1], kv[0]))
        shown = ", ".join(f"`{t}` ({e})" for t, e in by[:4]) + (f" and {len(by) - 4} more" if len(by) > 4 else "")
        failed = f"{len(k.killers)} of {k.tests}"
        lines.append(f"| {k.name} | {WRONG[k.name][1]} | {shown or '**survived**'} | {failed} | {k.seconds:.0f} s |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mutants.wrong_steps.table", description=__doc__.splitlines()[0])
    # The environment is not read: the suites run without the suite's variables (`run_one`).
    RunConfig.add_arguments(p, ("numerics", "dtype"), {"numerics": "exact"}, env=False)
    p.add_argument("--only", action="append", choices=sorted(WRONG), help="this wrong step only (repeatable)")
    p.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per run (default 2)")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--write", action="store_true", help=f"put the table into {DOC.relative_to(ROOT)}")
    args = p.parse_args(argv)
    mode, options, block = mode_of(NumericsMode(args.numerics), args.dtype)
    results = []
    for name in args.only or list(WRONG):
        k = run_one(name, args.numerics, args.dtype, args.workers)
        error = f"; {k.errors[0]}" if k.errors else ""
        print(f"{name}: {len(k.killers)} of {k.tests} tests failed ({k.seconds:.0f} s){error}", flush=True)
        results.append(k)
    text = table(results, mode, options)
    print(text)
    if args.json:
        args.json.write_text(json.dumps([asdict(k) for k in results], indent=1))
    if args.write:
        write_block(DOC, Block(block, "python -m mutants.wrong_steps.table --write"), text)
    return 0 if all(k.killers and not k.errors for k in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
