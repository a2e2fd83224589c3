"""Running the property suite against one mutant in a throw-away copy of the project."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mutants.apply import ApplyError, copy_project, prepare
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
    last_killers: dict[str, str] = field(default_factory=dict)  # mutant id -> test to run first (`mutants.order`)
    server: PytestServer | None = None  # where each suite is forked from (`mutants.forked`; `snapshot`)


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

    @classmethod
    def of(cls, m: Mutant | None, status: str, reason: str = "") -> Result:
        """A result of mutant `m` (None: the baseline) with `status` and `reason`, nothing run yet."""
        if m is None:
            return cls(BASELINE, "", [], "", status, reason=reason)
        return cls(m.id, m.file, list(m.ids), m.description, status, reason=reason)


def pytest_args(
    nodeids: list[str],
    opts: RunOptions,
    device: str | None = None,
    impl: str | None = None,
    result: Path | None = None,
    first: str | None = None,
) -> list[str]:
    """pytest's arguments: the suite in the given order, `first` (a test's or a case's node id)
    before it, stop at the first failure (unless `opts.keep_going`), the counting plugin writing to
    `result` (from `opts.seed` when set), the run's profile and mode (`device`, e.g. cuda:1, in place
    of the mode's device), the implementation under test (`impl`, else the default)."""
    cmd = ["-q", "-p", "mutants.plugin", "-p", "no:cacheprovider", *([] if opts.keep_going else ["-x"])]
    if first is not None:
        cmd += ["--mutants-first", first]
    cmd += ["--hypothesis-profile", opts.profile, *opts.mode.pytest_args(device)]
    if result is not None:
        cmd += ["--mutants-result", str(result)]
    if opts.seed is not None:
        cmd += ["--mutants-seed", str(opts.seed)]
    if opts.max_n is not None:
        cmd += ["--max-n", str(opts.max_n)]
    if impl is not None:
        cmd += ["--impl", impl]
    return cmd + nodeids


def _holds_project(entry: str) -> bool:
    return (Path(entry) / "batched" / "step.py").is_file()


def _outside_copies(entries: str) -> list[str]:
    """The entries of a PYTHONPATH-like string that do not hold a copy of the project themselves."""
    return [e for e in entries.split(os.pathsep) if e and not _holds_project(e)]


def import_path(project: Path, inherited: str) -> str:
    """PYTHONPATH for a mutant's suite: the copy first, then the inherited entries that do not hold
    a copy of the project themselves (a `batched/step.py`), so that packages installed elsewhere
    (e.g. a `--target` folder) stay importable and no other copy can shadow the mutated one."""
    return os.pathsep.join([str(project), *_outside_copies(inherited)])


def server_env() -> dict[str, str]:
    """The environment of the pytest server (`mutants.forked`): this one's, less what `_dropped`
    names, with no copy of the project on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not _dropped(k)}
    env["PYTHONPATH"] = os.pathsep.join(_outside_copies(env.get("PYTHONPATH", "")))
    return env


def child_env(project: Path) -> dict[str, str]:
    """The environment of a mutant's pytest: the server's, the copy first on the import path
    (`import_path`), one OpenMP thread, no bytecode written into the copy."""
    env = server_env()
    env["PYTHONPATH"] = import_path(project, env["PYTHONPATH"])
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def child_sys_path(project: Path, env: dict[str, str]) -> list[str]:
    """A forked suite's import path: what a new python with `env` would have, the copy first and no
    other copy of the project (this process's own folder included)."""
    out = [str(project), *env["PYTHONPATH"].split(os.pathsep)[1:], *_outside_copies(os.pathsep.join(sys.path))]
    return list(dict.fromkeys(e for e in out if e))


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
        res.status, res.killer, res.reason = "killed", first["nodeid"], first["reason"]
        res.examples = first["failing_example"]
        upto = res.tests[: res.tests.index(first)]
        res.examples_total = sum(t["examples"] for t in upto) + (first["failing_example"] or 0)
    else:
        res.status, res.examples_total = "survived", sum(t["examples"] for t in res.tests)


def run_mutant(
    root: Path, m: Mutant | None, tests: list[SuiteTest], opts: RunOptions, device: str | None = None
) -> Result:
    """Copy the project, apply `m`, run the suite (its last killer, then the tests covering `m.ids`,
    first) on `device` (the mode's when None) and say whether it was killed, by which test, after
    how many examples and in how long. `m` None is the baseline: the unchanged project, every test in
    suite order, which must pass."""
    res = Result.of(m, "error")
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
        first = opts.last_killers.get(m.id) if m else None
        args, env = pytest_args(order, opts, device, impl, result_path, first), child_env(project)
        timeout_s = opts.timeout_s * (BASELINE_TIMEOUTS if m is None else 1)
        assert opts.server is not None, "a mutant's suite is forked from the pytest server (`snapshot`)"
        done = opts.server.run(args, project, env, child_sys_path(project, env), work, timeout_s)
        code, output = done.code, done.output
        if done.timed_out:
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


@contextlib.contextmanager
def snapshot(root: Path, prefix: str) -> Iterator[Path]:
    """A copy of the project at `root` that every suite of a command starts from, so that editing the
    tree meanwhile cannot mix two versions of the suite into one result."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        copy_project(root, Path(tmp) / "project")
        yield Path(tmp) / "project"
