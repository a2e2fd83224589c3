"""The power of the properties against small semantic errors in sampling: for each kind of error
(temperature, top-p mass, repetition, frequency and presence penalties) and each property, the
smallest error size the property detects under a profile (`power`: the examples of a user's `ci`
run, without the shrinking that follows a failure, which changes nothing about whether or where it
fails).

    python -m mutants.power [--profile power] [--jobs N] [--root DIR] [--kinds K ...] [--props P ...]
                            [--sizes EPS ...] [--json OUT] [--markdown OUT]

An error of size eps is a mutant of the default implementation that samples each row with that
parameter off by eps (relative, or absolute for the top-p mass) and nothing else. For each (kind,
property) the sizes of `GRID` (or `--sizes`) are bisected, largest first (detection grows with the size: a kill at
eps is taken to hold for every larger size), each size one run of that property's tests against
the mutant. The table says, per kind and property, the smallest size killed and the example that
killed it; "none" when even the largest size survived.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from mutants.execute import RunOptions, run_mutant, server_env, snapshot
from mutants.forked import pytest_server
from mutants.order import SuiteTest, suite_tests
from mutants.spec import Mutant, mutant

ROOT = Path(__file__).resolve().parent.parent
STEP = "batched/step.py"
SAMPLE = "tok = sample_for_seq(model, a, row_logits, pen[j], verify_ctx)"
ADAPTIVE = "from reference.adaptive_spec import"
IMPORT = (ADAPTIVE, "from dataclasses import replace\n\n" + ADAPTIVE)
GRID = (0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 1e-4, 1e-5, 1e-6)
# Each kind: what it gets wrong, and the sampling call with the error of size EPS in it.
KINDS: dict[str, tuple[str, str]] = {
    "temperature": (
        "samples at temperature T * (1 + eps)",
        "tok = sample_for_seq(model, replace(a, temperature=a.temperature * (1 + EPS)), row_logits, pen[j], "
        "verify_ctx)",
    ),
    "top-p mass": (
        "cuts at top-p p + eps (p < 1)",
        "tok = sample_for_seq(model, replace(a, top_p=min(1.0, a.top_p + EPS)) if a.top_p < 1.0 else a, "
        "row_logits, pen[j], verify_ctx)",
    ),
    "repetition": (
        "applies a repetition penalty r != 1 as r * (1 + eps)",
        "tok = sample_for_seq(model, a, row_logits, replace(pen[j], repetition=pen[j].repetition * (1 + EPS)) "
        "if pen[j].repetition != 1.0 else pen[j], verify_ctx)",
    ),
    "frequency and presence": (
        "applies frequency and presence penalties f, p as f * (1 + eps), p * (1 + eps)",
        "tok = sample_for_seq(model, a, row_logits, replace(pen[j], frequency=pen[j].frequency * (1 + EPS), "
        "presence=pen[j].presence * (1 + EPS)), verify_ctx)",
    ),
}
# The properties measured: those that hold sampled tokens to the reference, by test file.
PROPERTIES = {
    "P1": "properties/step/test_p1_equivalence.py",
    "P3": "properties/step/test_p3_proposing.py",
    "P4": "properties/step/test_p4_faults.py",
    "P9": "properties/generations/test_p9_generations.py",
}


def error_mutant(kind: str, eps: float) -> Mutant:
    """The default implementation sampling with error `kind` of size `eps`."""
    what, call = KINDS[kind]
    name = f"power-{kind.replace(' ', '-')}-{eps:g}"
    return mutant(name, STEP, "B8", f"{what}, eps = {eps:g}", IMPORT, (SAMPLE, call.replace("EPS", repr(eps))))


@dataclass(slots=True)
class Point:
    """One run: the error, the property, and whether (and at which example) it was killed."""

    kind: str
    prop: str
    eps: float
    killed: bool
    example: int | None
    seconds: float


def measure(
    root: Path, kind: str, prop: str, tests: list[SuiteTest], opts: RunOptions, sizes: tuple[float, ...] = GRID
) -> list[Point]:
    """Bisect `sizes` (largest first) for the smallest size of `kind` that `prop`'s tests kill."""
    points: list[Point] = []

    def run(i: int) -> bool:
        r = run_mutant(root, error_mutant(kind, sizes[i]), tests, opts)
        if r.status not in ("killed", "survived"):
            raise RuntimeError(f"{kind} {sizes[i]:g} against {prop}: {r.status}: {r.reason}")
        points.append(Point(kind, prop, sizes[i], r.status == "killed", r.examples, r.seconds))
        return r.status == "killed"

    if not run(0):
        return points
    lo, hi = 0, len(sizes)  # sizes[lo] killed; every index >= hi survives or is untried
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run(mid):
            lo = mid
        else:
            hi = mid
    return points


def smallest(points: list[Point], kind: str, prop: str) -> Point | None:
    """The smallest size of `kind` that `prop` killed, or None."""
    killed = [p for p in points if p.kind == kind and p.prop == prop and p.killed]
    return min(killed, key=lambda p: p.eps) if killed else None


def table(points: list[Point], profile: str) -> str:
    """The markdown table: per kind measured, each property measured's smallest size killed (and the
    example that killed it)."""
    props = [p for p in PROPERTIES if any(pt.prop == p for pt in points)]
    tried = sorted({pt.eps for pt in points}, reverse=True)
    lines = [
        f"Smallest error detected (profile `{profile}`; sizes run: {', '.join(f'{e:g}' for e in tried)}):",
        "",
        "| error | " + " | ".join(props) + " |",
        "|---|" + "---|" * len(props),
    ]
    for kind, (what, _) in KINDS.items():
        if not any(pt.kind == kind for pt in points):
            continue
        cells = []
        for prop in props:
            p = smallest(points, kind, prop)
            cells.append("none" if p is None else f"{p.eps:g} (example {p.example})")
        lines.append(f"| {kind}: {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mutants.power", description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="power")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--root", type=Path, default=ROOT, help="the project whose suite is measured")
    p.add_argument("--max-n", type=int, default=None)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--kinds", nargs="+", choices=tuple(KINDS), default=tuple(KINDS), help="errors to measure")
    p.add_argument("--props", nargs="+", choices=tuple(PROPERTIES), default=tuple(PROPERTIES), help="properties")
    p.add_argument("--sizes", nargs="+", type=float, default=GRID, help="error sizes to bisect (default GRID)")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", type=Path)
    args = p.parse_args(argv)
    sizes = tuple(sorted(set(args.sizes), reverse=True))
    opts = RunOptions(profile=args.profile, max_n=args.max_n, timeout_s=args.timeout)
    suite = suite_tests(args.root)
    props = [(prop, [t for t in suite if t.nodeid.startswith(path + "::")]) for prop, path in PROPERTIES.items()]
    work = [(kind, prop, tests) for kind in args.kinds for prop, tests in props if prop in args.props]
    with (
        snapshot(args.root, "power-snapshot-") as project,
        pytest_server(server_env()) as opts.server,
        ThreadPoolExecutor(args.jobs) as pool,
    ):
        results = pool.map(lambda w: measure(project, w[0], w[1], w[2], opts, sizes), work)
        points = [pt for batch in results for pt in batch]
    text = table(points, args.profile)
    print(text)
    if args.json:
        args.json.write_text(json.dumps([asdict(pt) for pt in points], indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
