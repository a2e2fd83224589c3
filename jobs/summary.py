"""A job's summary: `summary.md` and `summary.json` in its results directory, the markdown printed too.
The verdict and the exit code follow from the steps' statuses."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from jobs.session import Session

FACT_ORDER = ("python", "torch", "cuda", "devices", "hypothesis", "pytest", "xgrammar", "triton")
EXIT = {"ok": 0, "failed": 1, "cut": 3, "planned": 0}  # exit code of the job by verdict


def verdict(s: Session) -> str:
    """failed if a step failed, else cut if one was stopped at its limit, else planned (a dry run) or ok."""
    statuses = {step.status for step in s.steps}
    for word in ("failed", "cut"):
        if word in statuses:
            return word
    return "planned" if s.dry_run else "ok"


def facts_line(facts: dict[str, str]) -> str:
    keys = [k for k in FACT_ORDER if k in facts] + [k for k in facts if k not in FACT_ORDER]
    return "; ".join(f"{k} {facts[k]}" for k in keys)


def shown(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def markdown(s: Session, params: dict[str, Any]) -> str:
    """The summary page: verdict, budget, environment, parameters, one line per step, the job's own
    sections, then each step's command line."""
    lines = [
        f"# {s.job} job: {verdict(s)}",
        "",
        f"- results: {s.out}",
        f"- budget {s.budget_s:.0f} s, {s.spent_s():.0f} s spent",
        f"- environment: {facts_line(s.facts) or 'not checked'}",
        "- parameters: " + ", ".join(f"{k}={shown(v)}" for k, v in params.items()),
        "",
        "| step | status | rc | seconds | outcome |",
        "|---|---|---:|---:|---|",
    ]
    for step in s.steps:
        rc = "-" if step.rc is None else str(step.rc)
        outcome = step.outcome.replace("|", "\\|")
        lines.append(f"| {step.name} | {step.status} | {rc} | {step.seconds:.0f} | {outcome} |")
    for section in s.sections:
        lines += ["", section.strip()]
    lines += ["", "## Commands", ""]
    lines += [f"- {step.name} ({step.log}): `{step.shell()}`" for step in s.steps]
    return "\n".join(lines) + "\n"


def write_summary(s: Session, params: dict[str, Any]) -> int:
    """Write summary.md and summary.json, print the markdown; the job's exit code."""
    text = markdown(s, params)
    s.path("summary.md").write_text(text)
    data = {
        "job": s.job,
        "verdict": verdict(s),
        "budget_s": s.budget_s,
        "spent_s": s.spent_s(),
        "environment": s.facts,
        "parameters": params,
        "steps": [asdict(step) for step in s.steps],
    }
    s.path("summary.json").write_text(json.dumps(data, indent=1) + "\n")
    print(text, end="", flush=True)
    return EXIT[verdict(s)]
