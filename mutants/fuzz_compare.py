"""Examples-to-kill of HypoFuzz against plain Hypothesis rounds, on catalogue mutants.

    python -m mutants.fuzz_compare --mutant ID=NODEID [--mutant ...] [--seeds 0 1 2] [--cap 150]
                                   [--json out.json]

For each mutant: one mutated copy of the project (`baseline` for the unchanged one, to time
executions that never fail), then for each seed one trial per engine
(`mutants.fuzz_trial`, a fresh process each, one torch thread), on the one test given (the test that
kills the mutant in `docs/mutants.md`'s table). Prints one line per trial and a table of the median
and worst executions-to-kill and seconds per engine; a trial that reached `--cap` without a kill
counts as not killed. Needs HypoFuzz (`pip install -e '.[fuzz]'`)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mutants.apply import prepare
from mutants.catalogue import by_id
from mutants.execute import BASELINE, child_env
from mutants.fuzz_trial import ENGINES

ROOT = Path(__file__).resolve().parent.parent


def trial(project: Path, engine: str, nodeid: str, seed: int, cap: int, timeout_s: float) -> dict[str, Any]:
    """One trial in `project` (a mutated copy); its JSON result, or killed=None when it errored."""
    cmd = [sys.executable, "-m", "mutants.fuzz_trial", "--engine", engine, "--test", nodeid]
    cmd += ["--seed", str(seed), "--cap", str(cap)]
    env = child_env(project)
    try:
        done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"engine": engine, "seed": seed, "killed": None, "error": f"past {timeout_s:.0f} s"}
    line = next((s for s in done.stdout.splitlines() if s.startswith("TRIAL ")), None)
    if line is None:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        return {"engine": engine, "seed": seed, "killed": None, "error": tail}
    return json.loads(line.removeprefix("TRIAL "))


def summary_rows(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """A markdown table: per mutant and engine, kills, median and worst executions-to-kill, median
    seconds per trial."""
    lines = [
        "| mutant | engine | killed | executions to kill: median / worst | seconds: median |",
        "|---|---|--:|--:|--:|",
    ]
    for mid, trials in results.items():
        for engine in ENGINES:
            ts = [t for t in trials if t["engine"] == engine and t.get("killed") is not None]
            if not ts:
                continue
            kills = [t["executions"] for t in ts if t["killed"]]
            cap = max(t["executions"] for t in ts)
            ex = [t["executions"] if t["killed"] else f">{cap}" for t in ts]
            med = statistics.median([t["executions"] for t in ts]) if len(kills) == len(ts) else "-"
            worst = max(kills) if len(kills) == len(ts) else f">{cap}"
            secs = statistics.median(t["seconds"] for t in ts)
            lines.append(
                f"| `{mid}` | {engine} | {len(kills)}/{len(ts)} | {med} / {worst} ({', '.join(map(str, ex))}) |"
                f" {secs:.1f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mutants.fuzz_compare", description=__doc__.splitlines()[0])
    p.add_argument("--mutant", action="append", required=True, metavar="ID=NODEID", help="a mutant and its test")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--cap", type=int, default=150, help="most executions per trial (default 150)")
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per trial (default 600)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    results: dict[str, list[dict[str, Any]]] = {}
    for spec in args.mutant:
        mid, nodeid = spec.split("=", 1)
        work = Path(tempfile.mkdtemp(prefix=f"fuzz-{mid}-"))
        try:
            prepare(ROOT, None if mid == BASELINE else by_id(mid), work / "project")
            for seed in args.seeds:
                for engine in args.engines:
                    t = trial(work / "project", engine, nodeid, seed, args.cap, args.timeout)
                    results.setdefault(mid, []).append(t)
                    print(f"{mid} {engine} seed {seed}: {json.dumps(t)}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(["", *summary_rows(results)]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
