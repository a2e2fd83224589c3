"""Running the property suite against one mutant in a throw-away copy of the project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mutants.apply import ApplyError, prepare
from mutants.forked import PytestServer
from mutants.modes import Mode
from mutants.order import SuiteTest, ordered_nodeids
from mutants.spec import Mutant

BASELINE = "baseline"
# The baseline runs every test to the end where a mutant usually stops at its first: its time limit
# is this many mutants' (a loaded machine must not fail the run before any mutant result exists).
BASELINE_TIMEOUTS = 4


def _dropped(name: str) -> bool:
    """Environment a mutant's suite must not inherit: the suite's own variables (`MTP_VERIFY_*`,
    which would configure what the runner's options do not say) and extra pytest options."""
    return name.startswith("MTP_VERIFY_") or name == "PYTEST_ADDOPTS"


@dataclass(slots=True)
class RunOptions:
    """How each mutant runs: Hypothesis profile, largest mix, a Hypothesis seed in place of the
    profile's derandomized one (to check that a kill does not hang on one example stream), the
    per-mutant timeout, whether to keep the copies, the mode (numerics, dtype, device), and whether
    to go on after the first failing test (every test's verdict, for the measured coverage matrix)."""

    profile: str = "mutants"
    max_n: int | None = None
    seed: int | None = None
    timeout_s: float = 300.0
    keep: bool = False
    mode: Mode = field(default_factory=Mode)
    keep_going: bool = False
    impl: str | None = None  # the implementation under test for the baseline and mutants naming none
    last_killers: dict[str, str] = field(default_factory=dict)  # mutant id -> test to run first (`mutants.killers`)
    server: PytestServer | None = None  # fork each suite from here (`mutants.forked`); None: a new python each


@dataclass(slots=True)
class Result:
    """A mutant's outcome. status: killed, survived, not-applied or error. `killer` is the first
    failing test, `examples` the example of that test that failed, `examples_total` every example
    run across the tests before and including the kill."""

    id: str
    file: str
    ids: list[str]
    description: str
    status: str
    killer: str | None = None
    examples: int | None = None
    examples_total: int = 0
    tests_run: int = 0
    reason: str = ""
    seconds: float = 0.0
    workdir: str | None = None
    tests: list[dict] = field(default_factory=list)
    device: str = ""  # where its suite ran (cpu, cuda:i)


def pytest_command(
    nodeids: list[str],
    opts: RunOptions,
    device: str | None = None,
    impl: str | None = None,
    result_path: Path | None = None,
) -> list[str]:
    """The pytest command line: the suite in the given order, stop at the first failure (unless
    `opts.keep_going`), the counting plugin writing to `result_path` (from `opts.seed` when set),
    the run's profile and mode (`device`, e.g. cuda:1, in place of the mode's device), the
    implementation under test (`impl`, else the default)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "mutants.plugin", "-p", "no:cacheprovider"]
    cmd += [] if opts.keep_going else ["-x"]
    cmd += ["--hypothesis-profile", opts.profile, *opts.mode.pytest_args(device)]
    if result_path is not None:
        cmd += ["--mutants-result", str(result_path)]
    if opts.seed is not None:
        cmd += ["--mutants-seed", str(opts.seed)]
    if opts.max_n is not None:
        cmd += ["--max-n", str(opts.max_n)]
    if impl is not None:
        cmd += ["--impl", impl]
    return cmd + nodeids


def child_env(project: Path) -> dict[str, str]:
    """The environment of a mutant's pytest: this one's less what `_dropped` names, the copy first
    on the import path (`import_path`), one OpenMP thread, no bytecode written into the copy."""
    env = {k: v for k, v in os.environ.items() if not _dropped(k)}
    env["PYTHONPATH"] = import_path(project, env.get("PYTHONPATH", ""))
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def server_env() -> dict[str, str]:
    """The environment of the pytest server (`mutants.forked`): this one's, less what `child_env`
    drops, with no copy of the project on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not _dropped(k)}
    inherited = env.get("PYTHONPATH", "").split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(e for e in inherited if e and not _holds_project(e))
    return env


def child_sys_path(project: Path, env: dict[str, str]) -> list[str]:
    """A forked suite's import path: what a new python with `env` would have, the copy first and no
    other copy of the project (this process's own folder included)."""
    base = [e for e in sys.path if e and not _holds_project(e)]
    out = [str(project), *env["PYTHONPATH"].split(os.pathsep)[1:], *base]
    return list(dict.fromkeys(e for e in out if e))


def _holds_project(entry: str) -> bool:
    return (Path(entry) / "batched" / "step.py").is_file()


def import_path(project: Path, inherited: str) -> str:
    """PYTHONPATH for a mutant's suite: the copy first, then the inherited entries that do not hold
    a copy of the project themselves (a `batched/step.py`), so that packages installed elsewhere
    (e.g. a `--target` folder) stay importable and no other copy can shadow the mutated one."""
    keep = [e for e in inherited.split(os.pathsep) if e and not _holds_project(e)]
    return os.pathsep.join([str(project), *keep])


def _tail(text: str, lines: int = 15) -> str:
    """The last `lines` lines of `text`."""
    return "\n".join(text.strip().splitlines()[-lines:])


def read_outcome(res: Result, payload: dict, project: Path) -> None:
    """Fill `res` from the plugin's JSON. A suite that imported the batched step from outside the
    mutated copy is an error, never a survivor."""
    loaded = payload.get("step_module_file") or ""
    if not Path(loaded).resolve().is_relative_to(project.resolve()):
        res.status, res.reason = "error", f"batched.step was imported from {loaded!r}, not the mutated copy"
        return
    res.tests = payload["tests"]
    res.tests_run = len(res.tests)
    failed = [t for t in res.tests if t["outcome"] == "failed"]
    if failed:
        first = failed[0]
        res.status, res.killer, res.examples, res.reason = (
            "killed",
            first["nodeid"],
            first["failing_example"],
            first["reason"],
        )
        upto = res.tests[: res.tests.index(first)]
        res.examples_total = sum(t["examples"] for t in upto) + (first["failing_example"] or 0)
    else:
        res.status = "survived"
        res.examples_total = sum(t["examples"] for t in res.tests)


def run_mutant(
    root: Path, m: Mutant | None, tests: list[SuiteTest], opts: RunOptions, device: str | None = None
) -> Result:
    """Copy the project, apply `m`, run the suite (its last killer, then the tests covering `m.ids`,
    first) on `device` (the mode's when None) and say whether it was killed, by which test, after
    how many examples and in how long. `m` None is the baseline: the unchanged project, every test in suite order, which
    must pass."""
    res = Result(m.id, m.file, list(m.ids), m.description, "error") if m else Result(BASELINE, "", [], "", "error")
    res.device = device or opts.mode.device
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix=f"mutant-{res.id}-"))
    project, result_path = work / "project", work / "result.json"
    try:
        try:
            prepare(root, m, project)
        except ApplyError as e:
            res.status, res.reason = "not-applied", str(e)
            return res
        impl = (m.impl if m else None) or opts.impl
        order = ordered_nodeids(tests, m.ids, opts.last_killers.get(m.id)) if m else ordered_nodeids(tests, ())
        cmd = pytest_command(order, opts, device, impl, result_path)
        env = child_env(project)
        timeout_s = opts.timeout_s * (BASELINE_TIMEOUTS if m is None else 1)
        if opts.server is not None:
            done = opts.server.run(cmd[3:], project, env, child_sys_path(project, env), work, timeout_s)
            code, output, timed_out = done.code, done.output, done.timed_out
        else:
            try:
                proc = subprocess.run(
                    cmd, cwd=project, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
                )
                code, output, timed_out = proc.returncode, proc.stdout + proc.stderr, False
            except subprocess.TimeoutExpired:
                code, output, timed_out = None, "", True
        if timed_out:
            res.reason = f"the suite ran past {timeout_s:.0f} s"
            return res
        if code not in (0, 1) or not result_path.is_file():
            res.reason = f"pytest exit {code}: {_tail(output)}"
            return res
        read_outcome(res, json.loads(result_path.read_text()), project)
        if res.status == "survived" and code != 0:
            res.status, res.reason = "error", f"pytest exit 1 with no failed test: {_tail(output)}"
        return res
    finally:
        res.seconds = round(time.perf_counter() - started, 2)
        if opts.keep:
            res.workdir = str(work)
        else:
            shutil.rmtree(work, ignore_errors=True)
