"""`python -m jobs JOB [options] --out DIR`: one job, its results in DIR (new or empty), a summary
printed and written there (summary.md, summary.json). Every job takes `--budget-s` (default 570: one
ten-minute call with room to spare), `--wheels DIR` (install the wheels there into `--site`, put on
the steps' PYTHONPATH), `--dry-run` (write the summary of what would run, run nothing) and
`--python`. Exit codes: 0 every step ok, 1 a step failed, 3 a step was stopped at its time limit
(none failed), 2 the job could not start (the reason printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobs.bench import BenchParams, bench
from jobs.check import CheckParams, check
from jobs.environment import check_environment, install_wheels, needs_cuda
from jobs.mutants import MutantsParams, mutants
from jobs.nightly import NightlyParams, nightly
from jobs.profile import ProfileParams, profile
from jobs.session import Session, child_env

Job = tuple[type, Callable[[Session, Any], None], str]
JOBS: dict[str, Job] = {
    "check": (CheckParams, check, "the GPU tests, then the properties (fast bf16 on cuda by default)"),
    "mutants": (MutantsParams, mutants, "the mutation catalogue (python -m mutants.run)"),
    "bench": (BenchParams, bench, "the pytest-benchmark benchmarks, their tables and plots"),
    "profile": (ProfileParams, profile, "benchmarks.profile in each of its modes asked for"),
    "nightly": (NightlyParams, nightly, "the nightly job (python -m nightly)"),
}
DEFAULT_BUDGET_S = 570.0


def suite_options() -> Any:
    """`properties.config` where this Python imports it, whose table (`OPTION_TABLE`) gives the jobs'
    suite options their flags, choices and help; None where it does not: the job's own Python may lack
    torch, which `--wheels` installs for the steps only, so a job imports nothing of the project's
    before it parses (the options then take any value, and the steps' commands check it)."""
    try:
        import properties.config as config
    except ImportError:
        return None
    return config


def add_params(parser: argparse.ArgumentParser, params: type) -> None:
    """One option per field of the dataclass `params`: `--name value` (a tuple: several values; a
    bool: `--name` / `--no-name`), its default and help from the field; a suite option's field
    (`jobs.session.suite_field`) takes its flag, choices and help from the suite's table
    (`suite_options`), its default from the field, and reads no environment variable."""
    hints, config = typing.get_type_hints(params), suite_options()
    for f in dataclasses.fields(params):
        flag, kind, help_ = f"--{f.name.replace('_', '-')}", hints[f.name], f.metadata.get("help", "")
        if f.metadata.get("suite") and config is not None:
            own = config.Default(f.default, f.metadata["default"])
            config.RunConfig.add_arguments(parser, (f.name,), {f.name: own}, env=False)
            continue
        if f.metadata.get("suite"):
            help_ = f"the suite's {flag} (python -m properties.run.verify --help)"
        shown = " ".join(f.default) if isinstance(f.default, tuple) else str(f.default)
        if f.default not in ("", 0, ()) and not isinstance(f.default, bool) and "default" not in help_:
            help_ = f"{help_} (default: {shown})"
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=help_)
        elif typing.get_origin(kind) is tuple:
            parser.add_argument(flag, nargs="*", default=f.default, help=help_)
        else:
            parser.add_argument(flag, type=kind, default=f.default, help=help_)


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, required=True, help="the results directory (new or empty)")
    common.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="the job's seconds, all steps")
    common.add_argument("--wheels", type=Path, default=None, help="install the wheels of this folder first")
    common.add_argument("--site", type=Path, default=Path(tempfile.gettempdir()) / "jobs-site",
                        help="where --wheels go (put on the steps' PYTHONPATH)")  # fmt: skip
    common.add_argument("--dry-run", action="store_true", help="write the summary of the steps, run none")
    common.add_argument("--python", default=sys.executable, help="the Python the steps run")
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="python -m jobs", description=__doc__, formatter_class=raw)
    sub = p.add_subparsers(dest="job", required=True)
    for name, (params, fn, help_) in JOBS.items():
        doc = sys.modules[fn.__module__].__doc__
        job = sub.add_parser(name, parents=[common], help=help_, description=doc,
                             formatter_class=raw)  # fmt: skip
        add_params(job, params)
    return p


def start(a: argparse.Namespace, params: Any) -> tuple[Session | None, str]:
    """The job's session, its directory made and its environment set up, and why it cannot run ("": it can)."""
    if a.out.exists() and any(a.out.iterdir()):
        return None, f"--out {a.out}: not empty (a job writes into a new or empty folder)"
    a.out.mkdir(parents=True, exist_ok=True)
    site = a.site if a.wheels is not None else None
    s = Session(a.job, a.out.resolve(), a.budget_s, child_env(site), a.python, dry_run=a.dry_run)
    if a.dry_run:
        return s, ""
    if a.wheels is not None and not install_wheels(s, a.wheels, a.site):
        return s, f"the wheels of {a.wheels} did not install (logs/wheels.log)"
    facts = check_environment(s)
    device = getattr(params, "device", "cpu")
    if needs_cuda(device) and facts.get("devices", "none") == "none":
        return s, f"--device {device}: no CUDA device is visible here (torch {facts.get('torch', '-')})"
    return s, ""


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    params_type, fn, _ = JOBS[a.job]
    params = params_type(**{f.name: _value(getattr(a, f.name)) for f in dataclasses.fields(params_type)})
    session, problem = start(a, params)
    if not problem and session is not None:
        try:
            fn(session, params)
        except ValueError as e:
            problem = str(e)
    if problem:
        print(f"python -m jobs {a.job}: {problem}", file=sys.stderr)
    if session is None:
        return 2
    if problem:
        session.sections.append(f"The job could not run: {problem}")
    code = session.write_summary(dataclasses.asdict(params))
    return 2 if problem else code


def _value(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v
