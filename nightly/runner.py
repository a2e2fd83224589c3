"""One round: the property suite as a pytest run in a child process (its own process group), its
output to `logs/`, its results followed line by line as they are written, and stopped when its
time is up or the person presses Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nightly import records
from nightly.rounds import Plan
from nightly.shard import Shard
from nightly.totals import RoundInfo

POLL_SECONDS = 0.5
STOP_WAITS = ((signal.SIGINT, 20.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0))


@dataclass(slots=True, frozen=True)
class Job:
    """What every round of a run shares."""

    out: Path
    tests: tuple[str, ...] = ("properties",)
    device: str = "cpu"  # cpu or cuda (each xdist worker pins its own cuda:i)
    workers: int = 1  # xdist workers, each running every test on its share; 0: the pytest process itself
    numerics: str = "exact"
    max_n: int | None = None
    impl: str | None = None
    reference_device: str | None = None  # same or cpu (None: the properties' default)
    model: str | None = None  # small or serving (None: the properties' default, small)
    profile: str = "nightly"
    database: str | None = None
    database_dir: Path = Path(".hypothesis/nightly")
    shard: Shard = field(default_factory=Shard)
    seed: int | None = None  # the run's seed; each worker's seeds derive from it (None: Hypothesis's own)
    extra: tuple[str, ...] = ()


def junit_path(out: Path, round_no: int) -> Path:
    return out / "junit" / f"round-{round_no:03d}.xml"


def pytest_command(job: Job, round_no: int, plan_path: Path) -> list[str]:
    """The pytest command line of one round: `--dist each`, so that every worker runs every test on
    its share of the examples (`nightly.spread`). No `--hypothesis-seed`: Hypothesis turns the
    example database off for a run with a fixed seed; the plugin gives each test its own seed per
    worker and round instead (`@seed` keeps the database)."""
    cmd = [sys.executable, "-m", "pytest", *job.tests, "-q", "-rfE", "-p", "no:cacheprovider"]
    cmd += ["-p", "properties.summary_plugin", "-p", "nightly.plugin"]
    cmd += ["--nightly-out", str(job.out), "--nightly-round", str(round_no), "--nightly-plan", str(plan_path)]
    cmd += ["--nightly-shard", str(job.shard), "--nightly-shard-by", job.shard.by]
    if job.seed is not None:
        cmd += ["--nightly-seed", str(job.seed)]
    cmd += ["--hypothesis-show-statistics"]
    cmd += ["--junitxml", str(junit_path(job.out, round_no))]
    if job.workers > 0:
        cmd += ["-n", str(job.workers), "--dist", "each"]
    return cmd + list(job.extra)


def pytest_env(job: Job) -> dict[str, str]:
    """The environment of a round: the profile, device, numerics, mix size, implementation,
    reference device and model size the
    properties read, the example database, the replay folder inside the output folder, and one
    thread per worker (torch's and OpenMP's, unless the environment sets them)."""
    env = dict(os.environ)
    env.setdefault("MTP_VERIFY_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(
        MTP_VERIFY_PROFILE=job.profile,
        MTP_VERIFY_DEVICE=job.device,
        MTP_VERIFY_NUMERICS=job.numerics,
        MTP_VERIFY_DB=job.database or str(job.database_dir),
        MTP_VERIFY_DB_DIR=str(job.database_dir),
        MTP_VERIFY_REPLAYS=str(job.out / "replays"),
    )
    settings = (
        ("MTP_VERIFY_MAX_N", job.max_n),
        ("MTP_VERIFY_IMPL", job.impl),
        ("MTP_VERIFY_REFERENCE_DEVICE", job.reference_device),
        ("MTP_VERIFY_MODEL", job.model),
    )
    for name, value in settings:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


class Follower:
    """Reads the records appended to a file since the last call, complete lines only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        return records.parse_lines(data[:end].decode("utf-8", errors="replace"))


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the round's process group: Ctrl-C first (pytest then writes its JUnit XML), then
    harder, each after a grace period."""
    for sig, wait in STOP_WAITS:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_round(
    job: Job,
    round_no: int,
    plan: Plan,
    planned: str,
    hard_deadline: float | None,
    progress: Callable[[dict[str, Any]], None],
) -> RoundInfo:
    """Run one round to its end, or until `hard_deadline` (monotonic) or Ctrl-C, calling
    `progress` with each result record as it is written."""
    plan_path = records.plan_path(job.out, round_no)
    plan_path.parent.mkdir(parents=True, exist_ok=True)
    plan_path.write_text(plan.to_json() + "\n")
    log_path = job.out / "logs" / f"round-{round_no:03d}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    follower = Follower(records.results_path(job.out, round_no))
    info = RoundInfo(round_no, planned)
    started = time.monotonic()
    with log_path.open("wb") as log:
        cmd = pytest_command(job, round_no, plan_path)
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=pytest_env(job), start_new_session=True)
        try:
            while proc.poll() is None:
                for rec in follower.new():
                    progress(rec)
                if hard_deadline is not None and time.monotonic() > hard_deadline:
                    info.stopped = "time limit"
                    stop(proc)
                    break
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            info.stopped = "interrupted"
            stop(proc)
        proc.wait()
    for rec in follower.new():
        progress(rec)
    info.exit_code = proc.returncode
    info.seconds = time.monotonic() - started
    return info
