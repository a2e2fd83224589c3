"""A job's session: its results directory, its time budget, and the commands it runs as steps.

Every step is one subprocess, started from the repository root with the session's environment, its
output in `logs/<step>.log`. A step's time limit is what it asks for, never more than the budget
leaves: at the limit its process group gets SIGINT (pytest and pytest-benchmark then still write
their reports), and SIGKILL `GRACE_S` seconds later. A step the budget has no room for is skipped.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jobs.outcomes import junit_counts, last_line

ROOT = Path(__file__).resolve().parents[1]
GRACE_S = 20.0  # from SIGINT to SIGKILL
MIN_STEP_S = 5.0  # a step with less time than this left is skipped
STATUSES = ("ok", "failed", "cut", "skipped", "planned")
WORKER_VARS = ("PYTEST_XDIST_", "PYTEST_CURRENT_TEST")  # a calling test's, not for the steps' own runs


@dataclass(slots=True)
class Step:
    """One command of a job and what came of it (`status`: one of STATUSES; rc None: it did not run)."""

    name: str
    command: list[str]
    status: str = "planned"
    rc: int | None = None
    seconds: float = 0.0
    outcome: str = ""
    log: str = ""  # relative to the results directory

    def shell(self) -> str:
        return shlex.join(self.command)


@dataclass(slots=True)
class Session:
    """The results directory `out`, the budget in seconds from `started`, the children's environment,
    the steps run so far, and what the summary adds (`facts`: the environment; `sections`: markdown)."""

    job: str
    out: Path
    budget_s: float
    env: dict[str, str]
    python: str
    dry_run: bool = False
    started: float = field(default_factory=time.monotonic)
    steps: list[Step] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)

    def left_s(self) -> float:
        """Seconds of the budget not yet spent."""
        return self.budget_s - (time.monotonic() - self.started)

    def share_s(self, parts: int, keep_s: float = 0.0) -> float:
        """An equal share of what the budget leaves for `parts` steps, `keep_s` kept for later ones."""
        return (self.left_s() - keep_s - GRACE_S - 5) / max(parts, 1)

    def spent_s(self) -> float:
        return time.monotonic() - self.started

    def py(self, *args: str | os.PathLike[str]) -> list[str]:
        """A command line of the session's Python."""
        return [self.python, *map(str, args)]

    def path(self, *parts: str) -> Path:
        """A path in the results directory."""
        return self.out.joinpath(*parts)

    def run(
        self,
        name: str,
        command: Iterable[str | os.PathLike[str]],
        limit_s: float | None = None,
        ok: tuple[int, ...] = (0,),
        junit: Path | None = None,
        env: Mapping[str, str] | None = None,
        cpus: tuple[int, ...] = (),
    ) -> Step:
        """Run `command` as step `name` for at most `limit_s` seconds (and what the budget leaves):
        ok when its exit code is in `ok`, cut when the limit stopped it, failed otherwise; its outcome
        the test counts of `junit` where given, else its log's last line. `env` adds variables;
        `cpus` pins it to those CPUs. In a dry run nothing runs: the step stays planned."""
        step = Step(name, [str(c) for c in command], log=f"logs/{name}.log")
        self.steps.append(step)
        if self.dry_run:
            return step
        room = self.share_s(1)
        if room < MIN_STEP_S:
            step.status, step.outcome = "skipped", "no time left in the budget"
            return step
        limit = room if limit_s is None else min(limit_s, room)
        log = self.path(step.log)
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with log.open("w") as f:
            proc = subprocess.Popen(
                step.command,
                cwd=ROOT,
                env={**self.env, **(env or {})},
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so that a limit reaches its children
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            )
            cut = wait_or_stop(proc, limit)
        step.rc, step.seconds = proc.returncode, time.monotonic() - t0
        step.status = "cut" if cut else ("ok" if step.rc in ok else "failed")
        counts = junit_counts(junit) if junit is not None else ""
        step.outcome = counts or last_line(log)
        if cut:
            step.outcome = f"stopped at its {limit:.0f} s limit; {step.outcome}"
        print(f"== {name}: {step.status} (rc {step.rc}, {step.seconds:.0f} s) {step.outcome}", flush=True)
        return step


def wait_or_stop(proc: subprocess.Popen[bytes], limit_s: float) -> bool:
    """Wait for `proc`; past `limit_s` interrupt its process group, and kill it `GRACE_S` later.
    True when the limit stopped it."""
    try:
        proc.wait(timeout=limit_s)
        return False
    except subprocess.TimeoutExpired:
        pass
    for sig, wait_s in ((signal.SIGINT, GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    return True


def child_env(site: Path | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the steps run in: this one's, without pytest-xdist's worker variables (a step
    is a run of its own), with `site` (where wheels went) and the repository root first on PYTHONPATH."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith(WORKER_VARS)}
    paths = [str(site)] if site is not None else []
    paths += [str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env
