"""A job's session: its results directory, its time budget, the commands it runs as steps, and its
summary (`summary.md` and `summary.json`; the verdict and the exit code follow from the steps).

Every step is one subprocess, started from the repository root with the session's environment, its
output in `logs/<step>.log`. A step's time limit is what it asks for, never more than the budget
leaves: at the limit its process group gets SIGINT (pytest and pytest-benchmark then still write
their reports), and SIGKILL `GRACE_S` seconds later. A step the budget has no room for is skipped.
A step's outcome, in a few words: its JUnit XML's test counts, else its log's last line.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from properties.run.stopping import Ladder, wait_or_stop

ROOT = Path(__file__).resolve().parents[1]
GRACE_S = 20.0  # from SIGINT to SIGKILL
STOP: Ladder = ((signal.SIGINT, GRACE_S), (signal.SIGKILL, None))  # a step past its limit (`wait_or_stop`)
MIN_STEP_S = 5.0  # a step with less time than this left is skipped
STATUSES = ("ok", "failed", "cut", "skipped", "planned")
EXIT = {"ok": 0, "failed": 1, "cut": 3, "planned": 0}  # exit code of the job by verdict
WORKER_VARS = ("PYTEST_XDIST_", "PYTEST_CURRENT_TEST")  # a calling test's, not for the steps' own runs
FACT_ORDER = ("python", "torch", "cuda", "devices", "hypothesis", "pytest", "xgrammar", "triton")
HEADLINE_KEYS = (  # benchmarks.profile reports' figures worth a summary line, in this order
    ("median_ms", "median {:.3f} ms"),
    ("device_busy_ms", "device busy {:.3f} ms"),
    ("examples_per_s", "{:.2f} examples/s"),
    ("worst_overall_in_u", "worst {:.3g} u"),
    ("forced", "{} forced decisions"),
)


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
        cpus: tuple[int, ...] = (),
    ) -> Step:
        """Run `command` as step `name` for at most `limit_s` seconds (and what the budget leaves):
        ok when its exit code is in `ok`, cut when the limit stopped it, failed otherwise; its outcome
        the test counts of `junit` where given, else its log's last line; `cpus` pins it to those CPUs.
        In a dry run nothing runs: the step stays planned."""
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
            # Its own process group (`start_new_session`), so that a limit reaches its children.
            proc = subprocess.Popen(step.command, cwd=ROOT, env=self.env, stdout=f, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)  # fmt: skip
            cut = wait_or_stop(proc, limit, STOP)
        step.rc, step.seconds = proc.returncode, time.monotonic() - t0
        step.status = "cut" if cut else ("ok" if step.rc in ok else "failed")
        step.outcome = (junit_counts(junit) if junit is not None else "") or last_line(log)
        if cut:
            step.outcome = f"stopped at its {limit:.0f} s limit; {step.outcome}"
        print(f"== {name}: {step.status} (rc {step.rc}, {step.seconds:.0f} s) {step.outcome}", flush=True)
        return step

    def verdict(self) -> str:
        """failed if a step failed, else cut if one was stopped at its limit, else planned (a dry run) or ok."""
        statuses = {step.status for step in self.steps}
        return next((w for w in ("failed", "cut") if w in statuses), "planned" if self.dry_run else "ok")

    def markdown(self, params: dict[str, Any]) -> str:
        """The summary page: verdict, budget, environment, parameters, one line per step, the job's own
        sections, then each step's command line."""
        keys = [k for k in FACT_ORDER if k in self.facts] + [k for k in self.facts if k not in FACT_ORDER]
        facts = "; ".join(f"{k} {self.facts[k]}" for k in keys) or "not checked"
        shown = {k: " ".join(map(str, v)) if isinstance(v, tuple | list) else str(v) for k, v in params.items()}
        lines = [
            f"# {self.job} job: {self.verdict()}",
            "",
            f"- results: {self.out}",
            f"- budget {self.budget_s:.0f} s, {time.monotonic() - self.started:.0f} s spent",
            f"- environment: {facts}",
            "- parameters: " + ", ".join(f"{k}={v}" for k, v in shown.items()),
            "",
            "| step | status | rc | seconds | outcome |",
            "|---|---|---:|---:|---|",
        ]
        for step in self.steps:
            rc, outcome = "-" if step.rc is None else str(step.rc), step.outcome.replace("|", "\\|")
            lines.append(f"| {step.name} | {step.status} | {rc} | {step.seconds:.0f} | {outcome} |")
        for section in self.sections:
            lines += ["", section.strip()]
        lines += ["", "## Commands", ""] + [f"- {step.name} ({step.log}): `{step.shell()}`" for step in self.steps]
        return "\n".join(lines) + "\n"

    def write_summary(self, params: dict[str, Any]) -> int:
        """Write summary.md and summary.json, print the markdown; the job's exit code."""
        text = self.markdown(params)
        self.path("summary.md").write_text(text)
        data = {"job": self.job, "verdict": self.verdict(), "budget_s": self.budget_s,
                "spent_s": time.monotonic() - self.started, "environment": self.facts, "parameters": params,
                "steps": [asdict(step) for step in self.steps]}  # fmt: skip
        self.path("summary.json").write_text(json.dumps(data, indent=1) + "\n")
        print(text, end="", flush=True)
        return EXIT[self.verdict()]


def child_env(site: Path | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the steps run in: this one's, without pytest-xdist's worker variables (a step
    is a run of its own), with `site` (where wheels went) and the repository root first on PYTHONPATH."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith(WORKER_VARS)}
    paths = [str(site)] if site is not None else []
    paths += [str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def junit_counts(path: Path) -> str:
    """ "N passed, N failed, N skipped" (zero counts left out) from a pytest JUnit XML file; "" when
    there is none or it cannot be read."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return ""
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    parts = [(passed, "passed"), (total["failures"], "failed"), (total["errors"], "errors")]
    parts.append((total["skipped"], "skipped"))
    return ", ".join(f"{n} {word}" for n, word in parts if n) or "no tests"


def last_line(path: Path, width: int = 160) -> str:
    """The last non-empty line of a text file, cut to `width` characters; "" when there is none."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    tail = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return tail if len(tail) <= width else tail[: width - 3] + "..."


def suite_field(default: Any, shown: str = "") -> Any:
    """A job's parameter that is one of the suite's options (`properties.config.OPTION_TABLE`, named
    as the field): its flag, choices and help come from that table (`jobs.cli.add_params`), its default
    is the job's (`shown`: the help's words for it; "": the value, or the suite's default for "" and 0,
    a job's "not given")."""
    return field(default=default, metadata={"suite": True, "default": shown})


def pairs(*items: tuple[str, object]) -> list[str]:
    """`--option value` for every item whose value is set (a job's optional options)."""
    return [str(a) for option, value in items if value for a in (option, value)]


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def headline(report: Any) -> str:
    """A profile report's headline figures (`HEADLINE_KEYS`), or "" when it has none."""
    if not isinstance(report, dict):
        return ""
    return ", ".join(fmt.format(report[key]) for key, fmt in HEADLINE_KEYS if report.get(key) is not None)
