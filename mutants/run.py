"""Run the mutation self-check: `python -m mutants.run [--only ID | --subset] [--json out.json]
[--numerics exact|fast] [--dtype float64|float32|bfloat16] [--device cpu|cuda [--mps]] [--jobs N]`.

Every mutant of the catalogue (or of the subset) is applied to a fresh copy of a snapshot of the
project and the property suite runs against it in the run's mode (the mutant's last killer from
`mutants/killers.json`, then the tests covering its behaviour ids, first; stopping at the first
failure unless `--keep-going`). Prints one line per
mutant, writes the JSON results and regenerates the mode's table in `docs/mutants.md` (for a run of
the whole catalogue or of the subset, or wherever `--markdown` says). With `--device cuda` each
mutant's suite runs on one GPU (spread over the visible GPUs), one torch thread each. Exits 1 when
any mutant survived, did not apply or errored, or a behaviour id has no mutant; 2 when the unchanged
suite does not pass (then no result means anything, and the table is left alone) or no GPU is
visible for `--device cuda`."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from mutants import baseline
from mutants.apply import ApplyError, mutated_source
from mutants.catalogue import CATALOGUE, EQUIVALENT_FOR, by_id, cover, for_impl, uncovered_ids
from mutants.execute import Result, RunOptions, run_mutant, server_env, snapshot
from mutants.forked import pytest_server
from mutants.modes import DEVICES, Mode
from mutants.order import MEMO, load_killers, record_killers, suite_tests
from mutants.reach import applies, reached_by
from mutants.report import summarize, write_json, write_markdown
from mutants.spec import Mutant
from properties.config import Default, RunConfig
from properties.impl import short_name
from properties.run.gpu import MpsError, cuda_mps
from reference.model.modes import NumericsMode

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MARKDOWN = ROOT / "docs" / "mutants.md"
SUITE_OPTIONS = ("numerics", "dtype", "device", "reference_device", "max_n", "impl")  # the suite's a run takes
IMPL_DEFAULT = "literal; the baseline runs against the implementation, and without --only the mutants for it"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (`argv`, or `sys.argv` when None)."""
    p = argparse.ArgumentParser(prog="python -m mutants.run", description=__doc__.splitlines()[0])
    add = p.add_argument
    add("--only", action="append", metavar="ID", help="run only this mutant (repeatable)")
    add("--subset", action="store_true", help="a deterministic subset: every behaviour id keeps --per-id mutants")
    add("--per-id", type=int, default=1, help="mutants kept per behaviour id by --subset (default 1)")
    add("--keep-going", action="store_true", help="run every test against each mutant (for python -m mutants.matrix)")
    add("--json", type=Path, metavar="PATH", help="write the results as JSON here")
    add("--markdown", type=Path, metavar="PATH",
        help="write the table here (default: docs/mutants.md for the whole catalogue or --subset, "
        "nowhere for --only)")  # fmt: skip
    add("--profile", default="mutants", help="Hypothesis profile (default: mutants)")
    add("--seed", type=int, default=None, help="Hypothesis seed instead of the derandomized one")
    add("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    add("--timeout", type=float, default=300.0, help="seconds per mutant (default 300)")
    add("--memo", type=Path, default=MEMO, metavar="PATH",
        help="the killers' memo: each mutant's last killer runs first, and this run's killers are recorded "
        "(default mutants/killers.json; an order only, never a verdict)")  # fmt: skip
    add("--no-memo", action="store_true", help="neither read nor write the killers' memo")
    add("--keep", action="store_true", help="keep the mutated copies (their paths go in the JSON)")
    add("--list", action="store_true", help="list the catalogue and exit")
    add("--mps", action="store_true", help="with --device cuda: the jobs share each GPU through CUDA MPS")
    # The suite's options a mode is made of; the environment is not read (nor passed to the suites).
    own = {"numerics": "exact", "device": Default("cpu", "cpu; cuda: every GPU, a mutant on each")}
    own |= {"reference_device": "same", "impl": Default(None, IMPL_DEFAULT)}
    RunConfig.add_arguments(p.add_argument_group("the suite's options"), SUITE_OPTIONS, own,
                            choices={"device": DEVICES}, env=False)  # fmt: skip
    return p.parse_args(argv)


def selected(only: list[str] | None, subset: bool = False, per_id: int = 1, impl: str | None = None) -> list[Mutant]:
    """The mutants named by `--only`, in the order given; else those written for `impl` and the
    catalogue's mutants of code it shares (`shared_with`), or the whole catalogue without `impl`;
    of those, with `subset`, the subset (`mutants.catalogue.cover`)."""
    if only:
        return [by_id(i) for i in only]
    pool = for_impl(impl) + shared_with(impl) if impl is not None else list(CATALOGUE)
    return cover(pool, per_id) if subset else pool


def shared_with(impl: str) -> list[Mutant]:
    """The catalogue's mutants of code `impl` runs too (`mutants.reach`), in catalogue order; the
    rest change code it replaces, and are listed as not reached. Those `EQUIVALENT_FOR` names for
    `impl` are listed with the reason and left out."""
    reached = reached_by(impl)
    equivalent = EQUIVALENT_FOR.get(impl, {})
    shared = [m for m in CATALOGUE if applies(m, reached) and m.id not in equivalent]
    skipped = [m.id for m in CATALOGUE if m not in shared and m.id not in equivalent]
    if skipped:
        print(f"not reached by {impl} (code it replaces): {', '.join(skipped)}", flush=True)
    for mid, why in equivalent.items():
        print(f"equivalent for {impl}: {mid}: {why}", flush=True)
    return shared


def gpu_count() -> int:
    """The CUDA devices this process sees."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def devices(mode: Mode, count: int, n_gpus: int) -> list[str]:
    """Where each of `count` suites runs: the mode's device on the CPU, else cuda:0, cuda:1, ...
    round-robin over `n_gpus`, so that parallel jobs spread over every GPU."""
    if mode.device != "cuda":
        return [mode.device] * count
    return [f"cuda:{k % max(n_gpus, 1)}" for k in range(count)]


def not_applying(root: Path, mutants: list[Mutant]) -> list[Result]:
    """A not-applied result for every mutant whose snippets do not each occur exactly once."""
    out = []
    for m in mutants:
        try:
            mutated_source(root, m)
        except ApplyError as e:
            out.append(Result.of(m, "not-applied", str(e)))
    return out


def progress_line(r: Result, done: int, total: int) -> str:
    """One line for a finished mutant: its outcome, the killing test and example, the time."""
    if r.status == "killed":
        what = f"killed by {(r.killer or '').split('::')[-1]} at example {r.examples}"
    else:
        what = r.status + (f": {r.reason.splitlines()[0][:160]}" if r.reason else "")
    return f"[{done}/{total}] {r.id}: {what} ({r.seconds:.1f} s)"


def run_all(
    root: Path,
    mutants: list[Mutant],
    opts: RunOptions,
    jobs: int,
    n_gpus: int = 0,
    on_result: Callable[[Result], None] = lambda r: None,
    baseline_times: dict[str, float] | None = None,
) -> tuple[Result, list[Result]]:
    """The baseline (the unchanged suite at `root`, which must pass) and the mutants' results in
    catalogue order, run `jobs` at a time (on `n_gpus` GPUs for a cuda mode, `devices`), each passed
    to `on_result` as it finishes. The baseline runs as `jobs` parts balanced on `baseline_times`
    (`mutants.baseline`), first, beside the mutants. Mutants that do not apply are reported without
    running; when the baseline fails, the mutants not yet started are not run (their results are
    errors)."""
    broken = {r.id: r for r in not_applying(root, mutants)}
    runnable = [m for m in mutants if m.id not in broken]
    tests = suite_tests(root)
    parts = baseline.split(tests, jobs, baseline_times or {})
    results: dict[str, Result] = dict(broken)
    for r in broken.values():
        print(progress_line(r, len(results), len(mutants)), flush=True)
    where = devices(opts.mode, len(runnable) + len(parts), n_gpus)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        starts = zip(parts, where[: len(parts)], strict=True)
        base_futures = [pool.submit(run_mutant, root, None, part, opts, d) for part, d in starts]
        runs = zip(runnable, where[len(parts) :], strict=True)
        futures = [pool.submit(run_mutant, root, m, tests, opts, d) for m, d in runs]
        base_parts: list[Result] = []
        for f in as_completed([*base_futures, *futures]):
            if f.cancelled():
                continue
            r = f.result()
            if f in base_futures:
                base_parts.append(r)
                if r.status != "survived":
                    for g in futures:
                        g.cancel()
                if len(base_parts) == len(base_futures):
                    print(baseline_line(baseline.merged(base_parts)), flush=True)
                continue
            results[r.id] = r
            print(progress_line(r, len(results), len(mutants)), flush=True)
            on_result(r)
    base = baseline.merged([f.result() for f in base_futures])
    for m in mutants:
        results.setdefault(m.id, Result.of(m, "error", "not run: the baseline failed"))
    return base, [results[m.id] for m in mutants]


def memo_writer(memo: Path, mode_key: str, on: bool) -> Callable[[Result], None]:
    """What records each kill's test in the killers' memo as it comes (`on`), so that a run stopped
    part way (a time limit) still leaves the next run its order; the memo is an order, never a
    verdict, so a kill recorded before the baseline has finished misleads nothing."""

    def record(r: Result) -> None:
        if on and r.status == "killed" and r.killer:
            record_killers(memo, mode_key, {r.id: r.killer})

    return record


def baseline_line(r: Result) -> str:
    """One line for the baseline run: passed with its totals, or why it did not."""
    if r.status == "survived":
        totals = f"{r.tests_run} tests, {r.examples_total} examples ({r.seconds:.1f} s)"
        return f"[baseline] the unchanged suite passes: {totals}"
    what = f"{(r.killer or '').split('::')[-1]} failed: {r.reason}" if r.status == "killed" else r.reason
    return f"[baseline] the unchanged suite does not pass, so no mutant result means anything: {what}"


def main(argv: list[str] | None = None) -> int:
    """Run the selected mutants and report; the exit status the module docstring gives."""
    args = parse_args(argv)
    if args.impl is not None:
        args.impl = short_name(args.impl)  # the catalogue names implementations by their registry names
    if args.list:
        for m in selected(None, args.subset, args.per_id, args.impl):
            print(f"{m.id:<34} {m.file:<26} {' '.join(m.ids):<12} {m.description}")
        return 0
    missing = uncovered_ids()
    if missing:
        print(f"the catalogue names no mutant for {', '.join(missing)}", file=sys.stderr)
    reference = "" if args.reference_device == "same" else args.reference_device
    mode = Mode(args.numerics, args.dtype, args.device, args.subset and not args.only, args.impl, reference)
    if mode.reference_device == "cpu" and (mode.numerics is not NumericsMode.FAST or mode.device != "cuda"):
        print("--reference-device cpu needs --numerics fast and --device cuda", file=sys.stderr)
        return 2
    mutants = selected(args.only, args.subset, args.per_id, args.impl)
    n_gpus = gpu_count() if mode.device == "cuda" else 0
    if mode.device == "cuda" and not n_gpus:
        print("--device cuda: no CUDA device is visible", file=sys.stderr)
        return 2
    if args.mps and mode.device != "cuda":
        print("--mps shares a GPU among jobs: it needs --device cuda", file=sys.stderr)
        return 2
    killers = {} if args.no_memo else load_killers(args.memo, mode.key)
    record = memo_writer(args.memo, mode.key, not args.no_memo and not args.keep_going)
    opts = RunOptions(args.profile, args.max_n, args.seed, args.timeout, args.keep, mode, args.keep_going, args.impl,
                      killers)  # fmt: skip
    print(f"mode {mode.key}: {len(mutants)} mutant(s), {args.jobs} job(s)", flush=True)
    started = time.perf_counter()
    try:
        with (
            snapshot(ROOT, "mutants-snapshot-") as project,
            cuda_mps() if args.mps else contextlib.nullcontext(),
            pytest_server(server_env()) as opts.server,
        ):
            times = {} if args.no_memo else baseline.load_times(args.memo, mode.key)
            base, results = run_all(project, mutants, opts, args.jobs, n_gpus, record, times)
    except MpsError as e:
        print(e, file=sys.stderr)
        return 2
    wall = time.perf_counter() - started
    if not args.no_memo and not args.keep_going and not args.only:
        baseline.record_times(args.memo, mode.key, base)
    summary = summarize(results, base, wall, args.profile, args.jobs, mode, args.keep_going)
    print(
        f"\n{summary.killed}/{summary.total} killed, {summary.survived} survived, {summary.failed} not applied or "
        f"errored; examples to kill: median {summary.median_examples}, worst {summary.worst_examples} "
        f"({summary.worst_mutant}); across the suite median {summary.median_examples_total}, worst "
        f"{summary.worst_examples_total}; {summary.wall_seconds:.0f} s"
    )
    if args.json:
        write_json(args.json, summary, base, results)
    if base.status != "survived":
        return 2
    markdown = args.markdown or (None if args.only else DEFAULT_MARKDOWN)
    if markdown:
        write_markdown(markdown, summary, results, mode)
    ok = summary.killed == summary.total and not missing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
