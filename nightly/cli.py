"""`python -m nightly`: the property suite in rounds on every core of the host until a time or an
example budget is spent (`--help` lists the options; docs/nightly.md has the details). Writes
report.md, summary.json and junit.xml to the output folder; exits 0 when every test passed, 1 when
one failed, 2 when nothing could run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import random
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nightly import outputs
from nightly.rounds import Plan, RoundInfo, next_plan
from nightly.runner import Job, round_file, run_round
from nightly.spread import SHARD_BY, parse_shard
from properties.config import OPTIONS, Default, RunConfig
from properties.run.databases import describe, is_redis_url
from properties.run.gpu import MpsError, cuda_mps

COULD_NOT_RUN = (2, 3, 4, 5)  # pytest: interrupted, internal error, usage error, no tests collected
SUITE_OPTIONS = tuple(name for name in OPTIONS if name not in ("replays", "threads"))
DEVICES = {"device": ("best", "cuda", "cpu")}  # the rounds spread over every GPU: no cuda:N


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nightly", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = p.add_argument
    add("--minutes", type=float, help="time budget: rounds until it is spent")
    add("--examples", type=int, help="examples per test and round, over all workers")
    add("--workers", type=int, help="xdist workers (default: one per CPU core, spread over the GPUs; 0: in-process)")
    # The suite's options but where failures' replays go and the threads (the rounds set them); the
    # environment is not read: the rounds get every setting as an option (the report's options line).
    own = {"device": Default("best", "best: every GPU, else the CPU"), "numerics": "exact"}
    RunConfig.add_arguments(p.add_argument_group("the suite's options"), SUITE_OPTIONS, own, choices=DEVICES, env=False)
    add("--mps", action="store_true", help="share each GPU among its workers through CUDA MPS, started for the run")
    add("--profile", default="nightly", help="Hypothesis profile (default nightly)")
    add("--out", type=Path, help="output folder, new or empty (default artifacts/nightly/<UTC time>)")
    add("--database", help="example database: a directory or redis://host:port/db (default: --database-dir)")
    add("--database-dir", type=Path, default=Path(".hypothesis/nightly"), help="the local directory database")
    add("--shard", default="0/1", help="i/N: this host's share of a job over N hosts (0-based)")
    add("--shard-by", default="tests", choices=SHARD_BY, help="deal the tests to hosts, or run all (seeds)")
    add("--seed", type=int, help="the run's seed (default: random); every worker's seeds derive from it")
    add("--tests", nargs="+", default=["properties"], help="test paths (default properties)")
    add("--pack", action="store_true", help="leave report.md, summary.json, junit.xml and details.tar.gz only")
    return p


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def default_workers(device: str, n_gpus: int, cores: int | None = None) -> int:
    """One worker per CPU core: on cuda `cores // GPUs` on each GPU (at least one), else one a core."""
    cores = max(1, cores if cores is not None else (os.cpu_count() or 1))
    return n_gpus * max(1, cores // n_gpus) if device == "cuda" and n_gpus else cores


def new_out(path: Path | None) -> Path:
    """The output folder, created; ValueError when it exists and is not empty."""
    out = (path or Path("artifacts") / "nightly" / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")).resolve()
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"output folder {out} is not empty: give a new one with --out")
    out.mkdir(parents=True, exist_ok=True)
    return out


def build_job(args: argparse.Namespace, extra: list[str], argv: list[str]) -> tuple[Job, dict[str, Any]]:
    """The job the options ask for and the run's settings for the report; a ValueError names an
    option that cannot run. `RunConfig` checks the suite's settings here, as the rounds' pytest
    will, and the rounds get them as its options."""
    if args.minutes is None and args.examples is None:
        raise ValueError("give --minutes, --examples or both")
    shard = parse_shard(args.shard, args.shard_by)
    n_gpus = gpu_count() if args.device != "cpu" else 0
    if args.device == "cuda" and not n_gpus:
        raise ValueError("--device cuda: no CUDA device is visible")
    device = "cuda" if n_gpus else "cpu"
    if args.mps and device != "cuda":
        raise ValueError("--mps shares a GPU among workers: it needs a CUDA device (--device cuda or best)")
    run = RunConfig.from_args(argparse.Namespace(**(vars(args) | {"device": device})), {})
    run.impl  # noqa: B018  import it now: a bad --impl is a usage error, not a failed round
    out = new_out(args.out)
    db_dir = args.database_dir.resolve()
    database = args.database if is_redis_url(args.database) else str(Path(args.database or db_dir).resolve())
    workers = args.workers if args.workers is not None else default_workers(device, n_gpus)
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    run = dataclasses.replace(run, replays=out / "replays", threads=1)
    job = Job(out, run, database, db_dir, tuple(args.tests), workers, args.profile, seed, shard, tuple(extra))
    budget = [f"{args.minutes:g} minute(s)"] if args.minutes is not None else []
    budget += [f"{args.examples} example(s) per test and round"] if args.examples is not None else []
    host = f"cuda x{n_gpus} ({os.cpu_count()} cores)" if n_gpus else f"cpu ({os.cpu_count()} cores)"
    meta = {"started": datetime.now(UTC).isoformat(timespec="seconds"), "wall_seconds": 0.0,
            "budget": " and ".join(budget), "host": host, "workers": workers, "mps": bool(args.mps),
            "options": shlex.join(run.options()), "database": describe(args.database, db_dir),
            "shard": f"{shard} by {shard.by}", "seed": seed,
            "command": shlex.join(["python", "-m", "nightly", *argv])}  # fmt: skip
    return job, meta


def run_rounds(args: argparse.Namespace, job: Job, meta: dict[str, Any], rounds: list[RoundInfo]) -> None:
    """Run rounds, appending each to `rounds` and rewriting the outputs after it, until the budget
    is spent, a round cannot run, or Ctrl-C."""
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes is not None else None
    # A round still running at the deadline gets a grace period (10 % of the budget, at least a minute).
    hard_deadline = deadline + max(60.0, 6 * args.minutes) if deadline is not None else None

    def echo(text: str) -> None:
        m, s = divmod(int(time.monotonic() - started), 60)
        print(f"[{m:3d}:{s:02d}] {text}", flush=True)

    def planned() -> tuple[Plan, str] | None:
        left = (deadline or float("inf")) - time.monotonic()
        cases = outputs.read_cases(job.out, rounds)
        return next_plan(rounds, cases, args.minutes, args.examples, job.workers, left)

    while (next_round := planned()) is not None:
        (plan, text), n = next_round, len(rounds) + 1
        echo(f"round {n}: {text}")
        info = run_round(job, n, plan, text, hard_deadline, lambda line, n=n: echo(f"round {n} {line}"))
        rounds.append(info)
        meta["wall_seconds"] = time.monotonic() - started
        verdict = outputs.write_all(job.out, meta, rounds)
        stopped = f", stopped: {info.stopped}" if info.stopped else ""
        echo(f"round {n} ended in {info.seconds:.0f} s (pytest exit {info.exit_code}{stopped}); run so far: {verdict}")
        if info.stopped == "interrupted":
            return
        if info.exit_code in COULD_NOT_RUN and not info.stopped:
            log = round_file(job.out, "logs", n, ".log")
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            print(f"round {n} could not run its tests (pytest exit {info.exit_code}); {log} ends:\n{tail}")
            return


def main(argv: list[str] | None = None) -> int:
    """`python -m nightly`; the exit status: 0 every test passed, 1 one failed, 2 nothing could run."""
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parser().parse_known_args(argv)
    unknown = [a for a in extra if a.startswith("-") and a != "--"]
    if "--" not in extra and unknown:
        parser().error(f"unrecognized arguments: {' '.join(unknown)} (pytest arguments go after --)")
    try:
        job, meta = build_job(args, [a for a in extra if a != "--"], argv)
    except ValueError as e:
        print(f"nightly: {e}", file=sys.stderr)
        return 2
    print(f"nightly: {meta['budget']} on {meta['host']}, {job.workers} worker(s); outputs in {job.out}", flush=True)
    rounds: list[RoundInfo] = []
    try:
        with cuda_mps() if args.mps else contextlib.nullcontext():
            run_rounds(args, job, meta, rounds)
    except MpsError as e:
        print(e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nightly: interrupted; writing the report of the rounds that ran", flush=True)
    outputs.prune_replays(job.out, rounds)
    verdict = outputs.write_all(job.out, meta, rounds, packed=args.pack)
    if args.pack:
        outputs.pack(job.out)
    print(f"nightly: {verdict}; report {job.out / 'report.md'}", flush=True)
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)
