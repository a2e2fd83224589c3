"""Examples-to-kill of HypoFuzz against plain Hypothesis rounds, on catalogue mutants.

    python -m mutants.fuzz_compare --mutant ID=NODEID [--mutant ...] [--seeds 0 1 2] [--cap 150]
                                   [--json out.json]

For each mutant: one mutated copy of the project (`baseline` for the unchanged one, to time
executions that never fail), then for each seed one trial per engine (`python -m mutants.fuzz_compare
trial ...` inside the copy, a fresh process each, one torch thread), on the one test given (the test
that kills the mutant in `docs/mutants.md`'s table). Prints one line per trial and a table of the
median and worst executions-to-kill and seconds per engine; a trial that reached `--cap` without a
kill counts as not killed. Needs HypoFuzz (`pip install -e '.[fuzz]'`).

A trial runs one test with one engine from one seed, at most `--cap` executions, and prints one JSON
line. `hypothesis`: the test's own Hypothesis run (generate phase only, no database), as a nightly
round runs it. `hypofuzz`: HypoFuzz's fuzz target for the test (coverage-guided mutation of choice
sequences, stability re-executions counted as executions) with its random generators seeded from S.
Both count every execution of the test's body up to and including the first failing one; neither
shrinks."""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from random import Random
from typing import Any

from mutants.apply import prepare
from mutants.catalogue import by_id
from mutants.execute import BASELINE, child_env
from mutants.plugin import ExampleCounter

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("hypothesis", "hypofuzz")
TRIAL = "trial"  # the first argument of a trial's command line


def target_for(nodeid: str) -> Any:
    """HypoFuzz's fuzz target of `nodeid` (pytest collects it in this process, conftest included)."""
    from hypofuzz.collection import collect_tests

    targets = collect_tests([nodeid, "-p", "no:cacheprovider", "-q", "--hypothesis-profile", "nightly"]).fuzz_targets
    if len(targets) != 1:
        raise SystemExit(f"{nodeid}: expected one Hypothesis test, collected {len(targets)}")
    return targets[0]


def run_hypothesis(nodeid: str, seed: int, cap: int) -> dict[str, Any]:
    """The test's own Hypothesis engine from `seed`: executions up to the first failure."""
    from hypothesis import HealthCheck, Phase, settings

    fn = target_for(nodeid).wrapped_test
    counter = ExampleCounter(Path("unused.json"))
    counter.current = nodeid
    counter.wrap(fn)
    fn._hypothesis_internal_use_settings = settings(max_examples=cap, database=None, derandomize=False, deadline=None,
                                                    phases=[Phase.explicit, Phase.generate],
                                                    suppress_health_check=list(HealthCheck))  # fmt: skip
    fn._hypothesis_internal_use_seed = seed
    # the failure the mutant causes (or an error: failed_at says whether the test body failed first)
    with contextlib.suppress(Exception):
        fn()
    failed_at = counter.first_failure.get(nodeid)
    return {"killed": failed_at is not None, "executions": failed_at or counter.examples[nodeid]}


def run_hypofuzz(nodeid: str, seed: int, cap: int) -> dict[str, Any]:
    """HypoFuzz's engine on the test from `seed`: executions (fresh, mutated and replayed for
    stability alike) up to the first failing one."""
    from hypothesis.internal.conjecture.data import Status

    target = target_for(nodeid)
    target.random = Random(seed)
    target.provider.random = Random(seed + 1)
    target._enter_fixtures()
    for k in range(1, cap + 1):
        data = target.new_conjecture_data()
        target._execute_once(data)
        data.freeze()
        if data.status is Status.INTERESTING:
            return {"killed": True, "executions": k}
    return {"killed": False, "executions": cap}


def trial_main(argv: list[str]) -> int:
    """One trial, in the folder of a mutated copy: prints `TRIAL {json}`."""
    p = argparse.ArgumentParser(prog="python -m mutants.fuzz_compare trial")
    p.add_argument("--engine", choices=ENGINES, required=True)
    p.add_argument("--test", required=True, help="the pytest node id of one Hypothesis test")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--cap", type=int, default=150, help="most executions of the test (default 150)")
    args = p.parse_args(argv)
    wall, cpu = time.perf_counter(), time.process_time()
    result = (run_hypothesis if args.engine == "hypothesis" else run_hypofuzz)(args.test, args.seed, args.cap)
    result.update(engine=args.engine, seed=args.seed, seconds=round(time.perf_counter() - wall, 2),
                  cpu_seconds=round(time.process_time() - cpu, 2))  # fmt: skip
    print("TRIAL " + json.dumps(result), flush=True)
    return 0


def trial(project: Path, engine: str, nodeid: str, seed: int, cap: int, timeout_s: float) -> dict[str, Any]:
    """One trial in `project` (a mutated copy); its JSON result, or killed=None when it errored."""
    cmd = [sys.executable, "-m", "mutants.fuzz_compare", TRIAL, "--engine", engine, "--test", nodeid]
    cmd += ["--seed", str(seed), "--cap", str(cap)]
    try:
        done = subprocess.run(cmd, cwd=project, env=child_env(project), capture_output=True, text=True,
                              timeout=timeout_s)  # fmt: skip
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
    """The comparison (or, with `trial` first, one trial); prints the table, writes `--json`."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [TRIAL]:
        return trial_main(argv[1:])
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
