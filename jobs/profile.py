"""The `profile` job: `python -m benchmarks.profile` in each of `--modes`, the step modes (timers,
timeline, torch) once per mix, each report `profile-<mode>[-<mix>].json`, and their headline figures
as the steps' outcomes. The runs share the budget. `--profile-args` go to every run as they are, e.g.
`--profile-args "--no-ahead"` or, for the kernel mode's stages grid, `"--tiles 16 --warps 1 2 4
--splits 0 8 --stages 1 2 3 4 --kernel-rows 64 256 --calls 100"`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from jobs.session import Session, headline, read_json, suite_field

# benchmarks.profile's modes (tests/test_jobs.py holds the two alike): the job imports nothing of the
# project's own, whose packages may come from the wheels it installs.
STEP_MODES = ("timers", "timeline", "torch")
MODES = (*STEP_MODES, "example", "rounding", "kernel", "copies")


@dataclass(slots=True, frozen=True)
class ProfileParams:
    device: str = suite_field("cuda")
    modes: tuple[str, ...] = field(default=("timers", "timeline", "torch"), metadata={"help": ", ".join(MODES)})
    mixes: tuple[str, ...] = field(default=("greedy", "mixed"), metadata={"help": "the step modes' mixes"})
    impl: str = suite_field("", "each mode's")
    n: int = field(default=64, metadata={"help": "the step modes' sequences"})
    steps: int = field(default=30, metadata={"help": "the step modes' measured steps"})
    profile_args: str = field(default="", metadata={"help": "further options of benchmarks.profile, quoted"})


def runs(p: ProfileParams) -> list[tuple[str, str, str]]:
    """(name, mode, mix) of every run: the step modes once per mix, the others once."""
    unknown = set(p.modes) - set(MODES)
    if unknown:
        raise ValueError(f"--modes {', '.join(sorted(unknown))}: expected among {', '.join(MODES)}")
    todo = []
    for mode in p.modes:
        todo += [(f"{mode}-{mix}", mode, mix) for mix in p.mixes] if mode in STEP_MODES else [(mode, mode, "")]
    return todo


def profile(s: Session, p: ProfileParams) -> None:
    """Run every mode (`runs`), each for an equal share of what the budget leaves."""
    todo = runs(p)
    for k, (name, mode, mix) in enumerate(todo):
        out = s.path(f"profile-{name}.json")
        cmd = s.py("-m", "benchmarks.profile", "--mode", mode, "--device", p.device, "--n", p.n, "--steps", p.steps)
        cmd += ["--mix", mix] if mix else []
        cmd += ["--impl", p.impl] if p.impl else []
        cmd += [*shlex.split(p.profile_args), "--out", str(out)]
        step = s.run(f"profile-{name}", cmd, limit_s=s.share_s(len(todo) - k))
        step.outcome = headline(read_json(out)) or step.outcome
