"""Run the mutation self-check: `python -m mutants.run [--only ID] [--json out.json] [--profile mutants]`.

Every mutant of the catalogue is applied to a fresh copy of a snapshot of the project and the property suite runs
against it (tests covering the mutant's behaviour ids first, stopping at the first failure). Prints
one line per mutant, writes the JSON results and regenerates the table in `docs/mutants.md` (for a
run of the whole catalogue, or wherever `--markdown` says). Exits 1 when any mutant survived, did
not apply or errored, or a behaviour id has no mutant; 2 when the unchanged suite does not pass (then
no result means anything, and the table is left alone)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from mutants.apply import ApplyError, copy_project, mutated_source
from mutants.catalogue import CATALOGUE, by_id, uncovered_ids
from mutants.execute import Result, RunOptions, run_mutant
from mutants.order import suite_tests
from mutants.report import summarize, write_json, write_markdown
from mutants.spec import Mutant

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MARKDOWN = ROOT / "docs" / "mutants.md"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (`argv`, or `sys.argv` when None)."""
    p = argparse.ArgumentParser(prog="python -m mutants.run", description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", metavar="ID", help="run only this mutant (repeatable)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON here")
    p.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="write the table here (default: docs/mutants.md for a run of the whole catalogue, nowhere for --only)",
    )
    p.add_argument("--profile", default="mutants", help="Hypothesis profile (default: mutants)")
    p.add_argument("--max-n", type=int, default=None, help="largest sequence mix (default: the suite's)")
    p.add_argument("--seed", type=int, default=None, help="Hypothesis seed instead of the derandomized one")
    p.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant (default 300)")
    p.add_argument("--keep", action="store_true", help="keep the mutated copies (their paths go in the JSON)")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    return p.parse_args(argv)


def selected(only: list[str] | None) -> list[Mutant]:
    """The mutants named by `--only`, in the order given, or the whole catalogue."""
    return [by_id(i) for i in only] if only else list(CATALOGUE)


def not_applying(root: Path, mutants: list[Mutant]) -> list[Result]:
    """A not-applied result for every mutant whose snippets do not each occur exactly once."""
    out = []
    for m in mutants:
        try:
            mutated_source(root, m)
        except ApplyError as e:
            out.append(Result(m.id, m.file, list(m.ids), m.description, "not-applied", reason=str(e)))
    return out


def progress_line(r: Result, done: int, total: int) -> str:
    """One line for a finished mutant: its outcome, the killing test and example, the time."""
    if r.status == "killed":
        what = f"killed by {(r.killer or '').split('::')[-1]} at example {r.examples}"
    else:
        what = r.status + (f": {r.reason.splitlines()[0][:160]}" if r.reason else "")
    return f"[{done}/{total}] {r.id}: {what} ({r.seconds:.1f} s)"


def run_all(root: Path, mutants: list[Mutant], opts: RunOptions, jobs: int) -> tuple[Result, list[Result]]:
    """The baseline (the unchanged suite at `root`, which must pass) and the mutants' results in
    catalogue order, run `jobs` at a time. Mutants that do not apply are reported without running;
    when the baseline fails, the mutants not yet started are not run (their results are errors)."""
    broken = {r.id: r for r in not_applying(root, mutants)}
    runnable = [m for m in mutants if m.id not in broken]
    tests = suite_tests(root)
    results: dict[str, Result] = dict(broken)
    for r in broken.values():
        print(progress_line(r, len(results), len(mutants)), flush=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        base_future = pool.submit(run_mutant, root, None, tests, opts)
        futures = [pool.submit(run_mutant, root, m, tests, opts) for m in runnable]
        for f in as_completed([base_future, *futures]):
            if f.cancelled():
                continue
            r = f.result()
            if f is base_future:
                print(baseline_line(r), flush=True)
                if r.status != "survived":
                    for g in futures:
                        g.cancel()
                continue
            results[r.id] = r
            print(progress_line(r, len(results), len(mutants)), flush=True)
    baseline = base_future.result()
    for m in mutants:
        results.setdefault(
            m.id, Result(m.id, m.file, list(m.ids), m.description, "error", reason="not run: the baseline failed")
        )
    return baseline, [results[m.id] for m in mutants]


def baseline_line(r: Result) -> str:
    """One line for the baseline run: passed with its totals, or why it did not."""
    if r.status == "survived":
        return (
            f"[baseline] the unchanged suite passes: {r.tests_run} tests, {r.examples_total} examples "
            f"({r.seconds:.1f} s)"
        )
    what = f"{(r.killer or '').split('::')[-1]} failed: {r.reason}" if r.status == "killed" else r.reason
    return f"[baseline] the unchanged suite does not pass, so no mutant result means anything: {what}"


def main(argv: list[str] | None = None) -> int:
    """Run the selected mutants and report; the exit status the module docstring gives."""
    args = parse_args(argv)
    if args.list:
        for m in CATALOGUE:
            print(f"{m.id:<34} {m.file:<26} {' '.join(m.ids):<12} {m.description}")
        return 0
    missing = uncovered_ids()
    if missing:
        print(f"the catalogue names no mutant for {', '.join(missing)}", file=sys.stderr)
    mutants = selected(args.only)
    opts = RunOptions(profile=args.profile, max_n=args.max_n, seed=args.seed, timeout_s=args.timeout, keep=args.keep)
    started = time.perf_counter()
    # Every run starts from one snapshot of the project, so that editing the tree while the runner
    # works cannot mix two versions of the suite into one table.
    with tempfile.TemporaryDirectory(prefix="mutants-snapshot-") as tmp:
        snapshot = Path(tmp) / "project"
        copy_project(ROOT, snapshot)
        baseline, results = run_all(snapshot, mutants, opts, args.jobs)
    summary = summarize(results, baseline, time.perf_counter() - started, args.profile, args.jobs)
    print(
        f"\n{summary.killed}/{summary.total} killed, {summary.survived} survived, {summary.failed} not applied or "
        f"errored; examples to kill: median {summary.median_examples}, worst {summary.worst_examples} "
        f"({summary.worst_mutant}); across the suite median {summary.median_examples_total}, worst "
        f"{summary.worst_examples_total}; {summary.wall_seconds:.0f} s"
    )
    if args.json:
        write_json(args.json, summary, baseline, results)
    if baseline.status != "survived":
        return 2
    markdown = args.markdown or (None if args.only else DEFAULT_MARKDOWN)
    if markdown:
        write_markdown(markdown, summary, results)
    ok = summary.killed == summary.total and not missing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
