"""One round: the property suite as a pytest run in a child process (its own process group),
configured by its command line alone, its output to `logs/`, its results to `junit/` (pytest's
`--junitxml`), its progress lines echoed as they come, and stopped like Ctrl-C when its time is up
or the person presses Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nightly.rounds import Plan, RoundInfo
from nightly.spread import Shard
from properties.config import RunConfig
from properties.run.stopping import Ladder, stop_group

POLL_SECONDS = 0.5
STOP_WAITS: Ladder = ((signal.SIGINT, 20.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0))
# The line `properties.run.summary_plugin` prints when a test passes or fails on a worker.
PROGRESS = re.compile(r"^\[\d+/[\d?]+\] (PASS|FAIL) ")


@dataclass(slots=True, frozen=True)
class Job:
    """What every round of a run shares: the suite's configuration, its example database (a
    directory or a Redis URL, and this host's directory), what to run, on how many xdist workers
    (0: in the pytest process), under which Hypothesis profile, the run's seed (None: Hypothesis's
    own random seeds), this host's shard and extra pytest arguments."""

    out: Path
    run: RunConfig = field(default_factory=RunConfig)
    database: str = ".hypothesis/nightly"
    database_dir: Path = Path(".hypothesis/nightly")
    tests: tuple[str, ...] = ("properties",)
    workers: int = 1
    profile: str = "nightly"
    seed: int | None = None
    shard: Shard = field(default_factory=Shard)
    extra: tuple[str, ...] = ()

    def suite_options(self) -> list[str]:
        """The options of `properties.run.plugin` that configure the suite for every round."""
        return [*self.run.options(), "--example-db", self.database, "--example-db-dir", str(self.database_dir)]


def round_file(out: Path, folder: str, round_no: int, suffix: str) -> Path:
    return out / folder / f"round-{round_no:03d}{suffix}"


def pytest_command(job: Job, round_no: int) -> list[str]:
    """The pytest command line of one round. No `--hypothesis-seed`: Hypothesis turns the example
    database off under a fixed seed, and every worker would draw the same stream; `nightly.plugin`
    seeds each test per worker instead."""
    cmd = [sys.executable, "-m", "pytest", *job.tests, "-q", "-rfE", "-p", "no:cacheprovider", "--durations", "10"]
    cmd += [
        "-p",
        "properties.run.plugin",
        "-p",
        "properties.run.summary_plugin",
        "-p",
        "nightly.plugin",
        *job.suite_options(),
    ]
    cmd += ["--hypothesis-profile", job.profile, "--hypothesis-show-statistics"]
    cmd += ["--junitxml", str(round_file(job.out, "junit", round_no, ".xml"))]
    cmd += ["--nightly-round", str(round_no), "--nightly-plan", str(round_file(job.out, "plans", round_no, ".json"))]
    cmd += ["--nightly-shard", str(job.shard), "--nightly-shard-by", job.shard.by]
    cmd += ["--nightly-observed", str(job.out / "observed")]
    if job.seed is not None:
        cmd += ["--nightly-seed", str(job.seed)]
    if job.workers > 0:
        cmd += ["-n", str(job.workers), "--dist", "each"]
    return cmd + list(job.extra)


def child_env() -> dict[str, str]:
    """The round's environment: this one without the suite's `MTP_VERIFY_*` variables (the command
    line alone configures the round), with one OpenMP thread per worker unless set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTP_VERIFY_")}
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """The complete lines of `path` past byte `offset`, and the offset after them."""
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", errors="replace").splitlines(), offset + end


def run_round(
    job: Job, round_no: int, plan: Plan, planned: str, deadline: float | None, echo: Callable[[str], None]
) -> RoundInfo:
    """Run one round to its end, or until `deadline` (monotonic) or Ctrl-C, passing `echo` each
    progress line of its output as it is written."""
    for folder in ("plans", "logs", "junit"):
        (job.out / folder).mkdir(parents=True, exist_ok=True)
    round_file(job.out, "plans", round_no, ".json").write_text(plan.to_json() + "\n")
    log = round_file(job.out, "logs", round_no, ".log")
    info = RoundInfo(round_no, planned, plan)
    started, offset = time.monotonic(), 0
    with log.open("wb") as f:
        cmd = pytest_command(job, round_no)
        f.write(("$ " + " ".join(cmd) + "\n").encode())
        f.flush()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=child_env(), start_new_session=True)
        try:
            while proc.poll() is None:
                lines, offset = new_lines(log, offset)
                for line in filter(PROGRESS.match, lines):
                    echo(line)
                if deadline is not None and time.monotonic() > deadline:
                    info.stopped = "time limit"
                    stop_group(proc, STOP_WAITS)  # Ctrl-C first: pytest then writes its JUnit XML
                    break
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            info.stopped = "interrupted"
            stop_group(proc, STOP_WAITS)
        proc.wait()
    for line in filter(PROGRESS.match, new_lines(log, offset)[0]):
        echo(line)
    info.exit_code, info.seconds = proc.returncode, time.monotonic() - started
    return info
