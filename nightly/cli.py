"""The nightly equivalence job.

    python -m nightly (--minutes M | --examples N | both) [--device best|cuda|cpu] [--workers N]
                      [--numerics exact|fast] [--max-n N] [--impl module:function]
                      [--reference-device same|cpu] [--model small|serving] [--mps]
                      [--out DIR] [--database PATH|redis://HOST:PORT/DB] [--database-dir DIR]
                      [--shard i/N] [--shard-by tests|seeds] [--seed S] [--tests PATH ...] [--pack]
                      [-- extra pytest arguments]

Runs the property suite under the `nightly` profile in rounds, each a pytest-xdist run drawing
fresh random examples (and replaying what the example database holds): one worker per CPU core,
spread evenly over the visible GPUs (each pinned to its cuda:i, one torch thread), every worker
running every test on its own share of the examples from its own seeds. `--examples N`: every test
runs N examples a round over all workers, one round unless `--minutes` asks for more.
`--minutes M`: a calibration round, then rounds in which the side-by-side properties share the
time and cheap truth tables are capped, until M minutes are spent. Writes
report.md, summary.json, junit.xml, observed/, replays/ and logs/ to the output folder (`--pack`:
the per-round files go into details.tar.gz); exits 0 when every test passed, 1 when one failed, 2
when nothing could run. docs/nightly.md has the details.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nightly import outputs, records
from nightly.rounds import (
    CALIBRATION_EXAMPLES,
    Plan,
    Rate,
    calibration_examples,
    costliest_rate,
    exhausted,
    is_capped,
    next_round_seconds,
    round_overhead,
    weighted_plan,
    worker_seconds,
)
from nightly.runner import Job, run_round
from nightly.shard import SHARD_BY, parse_shard
from nightly.totals import OUTCOME_ORDER, RoundInfo, Totals
from properties.databases import describe, is_redis_url
from properties.gpu import MpsError, cuda_mps

FAILED_TO_RUN = (2, 3, 4, 5)  # pytest: interrupted, internal error, usage error, no tests collected
DEFAULT_DB_DIR = Path(".hypothesis") / "nightly"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nightly", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=None, help="time budget: rounds until it is spent")
    p.add_argument("--examples", type=int, default=None, help="examples per test and round")
    p.add_argument("--device", default="best", choices=("best", "cuda", "cpu"), help="default best")
    p.add_argument(
        "--workers", type=int, default=None, help="xdist workers (default: one per CPU core, spread over the GPUs)"
    )
    p.add_argument("--numerics", default="exact", choices=("exact", "fast"), help="fast: bfloat16 on a GPU")
    p.add_argument("--max-n", type=int, default=None, help="largest sequence mix")
    p.add_argument("--impl", default=None, help="implementation under test as module:function")
    p.add_argument(
        "--reference-device",
        default=None,
        choices=("same", "cpu"),
        help="where the reference step runs (cpu: fast numerics on a GPU only; default same)",
    )
    p.add_argument(
        "--model",
        default=None,
        choices=("small", "serving"),
        help="model size: small (default, hidden 32) or serving (hidden 1024, vocab 129280)",
    )
    p.add_argument("--profile", default="nightly", help="Hypothesis profile (default nightly)")
    p.add_argument(
        "--out", type=Path, default=None, help="output folder (new or empty; default artifacts/nightly/<time>)"
    )
    p.add_argument("--database", default=None, help="example database: a directory or redis://host:port/db")
    p.add_argument("--database-dir", type=Path, default=DEFAULT_DB_DIR, help="the local directory database")
    p.add_argument("--shard", default="0/1", help="i/N: this host's share of the job (0-based)")
    p.add_argument("--shard-by", default="tests", choices=SHARD_BY, help="split the tests, or run all (seeds)")
    p.add_argument("--seed", type=int, default=None, help="the run's seed (default: random); workers' seeds derive")
    p.add_argument("--tests", nargs="+", default=["properties"], help="test paths (default properties)")
    p.add_argument(
        "--mps",
        action="store_true",
        help="share each GPU among its workers through CUDA MPS, started for the run (about 3x on one H200)",
    )
    p.add_argument(
        "--pack", action="store_true", help="leave report.md, summary.json, junit.xml and details.tar.gz only"
    )
    return p


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(requested: str, n_gpus: int) -> str:
    """cpu or cuda; ValueError when cuda is asked for and no GPU is visible."""
    if requested == "cuda" and n_gpus == 0:
        raise ValueError("--device cuda: no CUDA device is visible")
    return "cuda" if requested in ("cuda", "best") and n_gpus else "cpu"


def default_workers(device: str, n_gpus: int, cores: int | None = None) -> int:
    """One worker per CPU core: on cuda, `cores // GPUs` workers on each GPU (at least one); on the
    CPU, one per core."""
    cores = max(1, cores if cores is not None else (os.cpu_count() or 1))
    return n_gpus * max(1, cores // n_gpus) if device == "cuda" and n_gpus else cores


def new_out(path: Path | None) -> Path:
    """The output folder, created; SystemExit when it exists and is not empty."""
    out = (path or Path("artifacts") / "nightly" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")).resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"output folder {out} is not empty: give a new one with --out")
    out.mkdir(parents=True, exist_ok=True)
    return out


def budget_text(args: argparse.Namespace) -> str:
    parts = []
    if args.minutes is not None:
        parts.append(f"{args.minutes:g} minute(s)")
    if args.examples is not None:
        parts.append(f"{args.examples} example(s) per test and round")
    return " and ".join(parts)


def per_round(out: Path, rounds: list[RoundInfo]) -> dict[str, list[tuple[float, int]]]:
    """Per test, its (worker seconds, examples) in each round so far."""
    stats: dict[str, list[tuple[float, int]]] = {}
    for info in rounds:
        got: dict[str, tuple[float, int]] = {}
        for r in records.read(records.results_path(out, info.round)):
            if r.get("event") == "test":
                s, n = got.get(r["nodeid"], (0.0, 0))
                got[r["nodeid"]] = (s + float(r.get("seconds") or 0.0), n + int(r.get("counts", {}).get("examples", 0)))
        for nodeid, pair in got.items():
            stats.setdefault(nodeid, []).append(pair)
    return stats


def rates(totals: dict[str, Totals], out: Path, rounds: list[RoundInfo]) -> dict[str, Rate]:
    """Expected worker seconds per example (the costliest round's), and side-by-side runs per
    example, of every test that ran examples."""
    stats = per_round(out, rounds)
    return {
        n: Rate(costliest_rate(stats.get(n, []), len(rounds) == 1), t.runs / t.examples)
        for n, t in totals.items()
        if t.examples
    }


def plan_round(
    args: argparse.Namespace,
    out: Path,
    rounds: list[RoundInfo],
    totals: dict[str, Totals],
    remaining: float,
    workers: int,
) -> tuple[Plan, str] | None:
    """The next round's plan and its description, or None when the run is over."""
    if not rounds:
        n = args.examples if args.examples is not None else calibration_examples(workers)
        return Plan(default=n), f"{n} examples per test" + ("" if args.examples else " (calibration)")
    last = rounds[-1]
    if args.minutes is None or last.stopped:
        return None
    if args.examples is not None:
        return (Plan(default=args.examples), f"{args.examples} examples per test") if remaining > last.seconds else None
    known = rates(totals, out, rounds)
    tests = [r for r in records.read(records.results_path(out, last.round)) if r.get("event") == "test"]
    overhead = round_overhead(last.seconds, tests)
    ran: dict[str, int] = {}
    for r in tests:
        ran[r["nodeid"]] = ran.get(r["nodeid"], 0) + int(r.get("counts", {}).get("examples", 0))
    done = exhausted(Plan.from_json(records.plan_path(out, last.round).read_text()), ran)
    round_seconds = next_round_seconds(remaining, args.minutes * 60, overhead)
    if round_seconds <= 0 or not known:
        return None
    plan = weighted_plan(known, worker_seconds(round_seconds, workers), CALIBRATION_EXAMPLES, done)
    capped = sum(is_capped(r) or n in done for n, r in known.items())
    sizes = sorted(plan.tests.values())
    return plan, (
        f"sized for {round_seconds:.0f} s on {max(workers, 1)} worker(s): {sizes[0]}-{sizes[-1]} examples per test, "
        f"{capped} cheap test(s) capped"
    )


class Progress:
    """Prints a line per test once every worker has reported it (a result, or that it was not its
    share), with the run's elapsed time and running example count."""

    def __init__(self, started: float, round_no: int, workers: int = 1) -> None:
        self.started = started
        self.round_no = round_no
        self.workers = max(workers, 1)
        self.examples = 0
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def stamp(self) -> str:
        m, s = divmod(int(time.monotonic() - self.started), 60)
        return f"[{m:3d}:{s:02d}]"

    def __call__(self, rec: dict[str, Any]) -> None:
        if rec.get("event") not in ("test", "share"):
            return
        got = self.pending.setdefault(rec["nodeid"], [])
        got.append(rec)
        if len(got) < self.workers:
            return
        tests = [r for r in got if r.get("event") == "test"]
        del self.pending[rec["nodeid"]]
        if not tests:
            return
        examples = sum(int(r.get("counts", {}).get("examples", 0)) for r in tests)
        near_ties = sum(int(r.get("counts", {}).get("near_ties", 0)) for r in tests)
        seconds = max(float(r.get("seconds") or 0) for r in tests)
        outcome = max((r["outcome"] for r in tests), key=OUTCOME_ORDER.index)
        self.examples += examples
        name = rec["nodeid"].split("::", 1)[-1]
        on = f" on {len(tests)} workers" if len(tests) > 1 else ""
        print(
            f"{self.stamp()} round {self.round_no} {outcome.upper():7} {name}: {examples} examples{on}, "
            f"{near_ties} near-ties, {seconds:.1f} s ({self.examples} examples this round)",
            flush=True,
        )


def build_job(args: argparse.Namespace, extra: list[str], argv: list[str]) -> tuple[Job, dict[str, Any]]:
    """The job the options ask for and the run's description for the report; ValueError for
    options that cannot run (the output folder is created here)."""
    if args.minutes is None and args.examples is None:
        raise ValueError("give --minutes, --examples or both")
    if args.reference_device == "cpu" and args.numerics != "fast":
        raise ValueError("--reference-device cpu needs --numerics fast (exact numerics are bit-equal on one device)")
    shard = parse_shard(args.shard, args.shard_by)
    n_gpus = gpu_count() if args.device != "cpu" else 0
    device = resolve_device(args.device, n_gpus)
    if args.mps and device != "cuda":
        raise ValueError("--mps shares a GPU among workers: it needs a CUDA device (--device cuda or best)")
    workers = args.workers if args.workers is not None else default_workers(device, n_gpus)
    run_seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    database = args.database if is_redis_url(args.database) else None
    db_dir = Path(args.database if args.database and database is None else args.database_dir).resolve()
    job = Job(
        out=new_out(args.out),
        tests=tuple(args.tests),
        device=device,
        workers=workers,
        numerics=args.numerics,
        max_n=args.max_n,
        impl=args.impl,
        reference_device=args.reference_device,
        model=args.model,
        profile=args.profile,
        database=database,
        database_dir=db_dir,
        shard=shard,
        seed=run_seed,
        extra=tuple(extra),
    )
    meta: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": 0.0,
        "budget": budget_text(args),
        "device": f"cuda x{n_gpus} ({os.cpu_count()} cores)" if device == "cuda" else f"cpu ({os.cpu_count()} cores)",
        "numerics": args.numerics,
        "reference_device": args.reference_device or "same",
        "model": args.model or "small",
        "workers": workers,
        "mps": bool(args.mps),
        "impl": args.impl or "literal",
        "database": describe(database, db_dir),
        "shard": f"{shard} by {shard.by}",
        "seed": run_seed,
        "command": shlex.join(["python", "-m", "nightly", *argv]),
    }
    return job, meta


def run_rounds(args: argparse.Namespace, job: Job, meta: dict[str, Any], rounds: list[RoundInfo]) -> None:
    """Run rounds, appending each to `rounds`, until the budget is spent, a round cannot run, or
    Ctrl-C; the outputs are rewritten after every round."""
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes is not None else None
    hard_deadline = deadline + max(60.0, 0.1 * args.minutes * 60) if deadline is not None else None
    totals: dict[str, Totals] = {}
    while True:
        remaining = deadline - time.monotonic() if deadline is not None else float("inf")
        planned = plan_round(args, job.out, rounds, totals, remaining, job.workers)
        if planned is None:
            return
        plan, text = planned
        progress = Progress(started, len(rounds) + 1, job.workers)
        print(f"{progress.stamp()} round {progress.round_no}: {text}", flush=True)
        info = run_round(job, progress.round_no, plan, text, hard_deadline, progress)
        rounds.append(info)
        meta["wall_seconds"] = time.monotonic() - started
        totals = outputs.write_all(job.out, meta, rounds)
        stopped = f", stopped: {info.stopped}" if info.stopped else ""
        print(
            f"{progress.stamp()} round {info.round} ended in {info.seconds:.0f} s (pytest exit {info.exit_code}"
            f"{stopped}); {sum(t.examples for t in totals.values())} examples so far",
            flush=True,
        )
        if info.stopped == "interrupted":
            return
        if info.exit_code in FAILED_TO_RUN and not info.stopped:
            log = job.out / "logs" / f"round-{info.round:03d}.log"
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            print(f"round {info.round} could not run its tests (pytest exit {info.exit_code}); {log} ends:\n{tail}")
            return


def main(argv: list[str] | None = None) -> int:
    """`python -m nightly`; the exit code (0 every test passed, 1 one failed, 2 nothing could run)."""
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parser().parse_known_args(argv)
    unknown = [a for a in extra if a.startswith("-") and a != "--"]
    if "--" not in extra and unknown:
        parser().error(f"unrecognized arguments: {' '.join(unknown)} (pytest arguments go after --)")
    try:
        job, meta = build_job(args, [a for a in extra if a != "--"], argv)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    print(f"nightly: {meta['budget']} on {meta['device']}, {job.workers} worker(s); outputs in {job.out}", flush=True)
    rounds: list[RoundInfo] = []
    try:
        with cuda_mps() if args.mps else contextlib.nullcontext():
            run_rounds(args, job, meta, rounds)
    except MpsError as e:
        print(e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nightly: interrupted; writing the report of the rounds that ran", flush=True)
    totals = outputs.collect(job.out, rounds)
    outputs.prune_replays(job.out, totals)
    totals = outputs.write_all(job.out, meta, rounds, packed=args.pack)
    if args.pack:
        outputs.pack(job.out)
    verdict = outputs.overall(totals)
    print(f"nightly: {verdict}; report {job.out / 'report.md'}", flush=True)
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)
