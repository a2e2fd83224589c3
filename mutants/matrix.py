"""The behaviour x property matrix as measured by a mutation run: for every behaviour id, the
properties whose tests killed its mutants, set against the covers the properties declare
(`@covers`, read from the suite's source).

    python -m mutants.matrix [RUN.json] [--out docs/coverage-matrix.md]

RUN.json is what `python -m mutants.run --json` wrote (default `artifacts/mutants.json`). A run
that stops at the first failing test (the default) shows one killer per mutant, so a declared cover
whose tests never ran against an id's mutants is "not reached", not a hole; a run with
`--keep-going` runs every test against every mutant and measures every declared cover.
Marks: K declared and killed a mutant of the id; k killed one without declaring the id; X declared,
ran against the id's mutants and killed none; ? declared, never ran against them (skipped, or the
run stopped at an earlier kill); - declared, but the run has no mutant of the id; . neither.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mutants.order import SuiteTest, suite_tests
from properties.behaviours import ALL_IDS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUN = ROOT / "artifacts" / "mutants.json"
DEFAULT_OUT = ROOT / "docs" / "coverage-matrix.md"
OTHER = "other"  # tests that declare no property (the regression cases, the matrix checks)
FINDINGS = (  # the page's sections of `findings`
    ("Declared covers that killed none of their id's mutants", "holes"),
    ("Declared covers not reached by this run", "unreached"),
    ("Kills outside the declared covers", "undeclared"),
)


def short(prop: str) -> str:
    """P3 for "P3 call accounting"; `OTHER` for no property."""
    return prop.split()[0] if prop else OTHER


def base_nodeid(nodeid: str) -> str:
    """A node id without its parametrization (`test_regression[b6-...]` -> `test_regression`)."""
    return re.sub(r"\[.*\]$", "", nodeid)


@dataclass(slots=True)
class Measured:
    """What a run showed: per (property, id), the mutants of that id its tests killed and those they
    ran against; the declared covers; the properties in suite order; the run's mutants per id."""

    killed: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    ran: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    declared: set[tuple[str, str]] = field(default_factory=set)
    props: list[str] = field(default_factory=list)
    mutants_of: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    keep_going: bool = False

    def mark(self, prop: str, bid: str) -> str:
        """The matrix cell of `prop` and behaviour id `bid`."""
        key = (prop, bid)
        if self.killed.get(key):
            return "K" if key in self.declared else "k"
        if key in self.declared:
            if not self.mutants_of.get(bid):
                return "-"
            return "X" if self.ran.get(key) else "?"
        return "."


def measure(run: dict[str, Any], tests: list[SuiteTest]) -> Measured:
    """The measured matrix of a mutation run's JSON against the suite's declared covers."""
    prop_of = {t.nodeid: short(t.prop) for t in tests}
    out = Measured()
    out.props = list(dict.fromkeys(short(t.prop) for t in tests if t.prop))
    out.declared = {(short(t.prop), i) for t in tests if t.prop for i in t.ids}
    out.keep_going = bool(run.get("summary", {}).get("keep_going", False))
    for m in run.get("mutants", []):
        for bid in m["ids"]:
            out.mutants_of[bid].append(m["id"])
        for row in m.get("tests", []):
            prop = prop_of.get(base_nodeid(row["nodeid"]), OTHER)
            for bid in m["ids"]:
                out.ran[prop, bid].add(m["id"])
                if row["outcome"] == "failed":
                    out.killed[prop, bid].add(m["id"])
    if any(p == OTHER for p, _ in out.killed):
        out.props.append(OTHER)
    return out


def matrix_text(mx: Measured) -> str:
    """The measured matrix as a fixed-width table, one row per behaviour id."""
    lines = ["id   " + " ".join(f"{p:>5}" for p in mx.props) + "  mutants"]
    for bid in ALL_IDS:
        marks = " ".join(f"{mx.mark(p, bid):>5}" for p in mx.props)
        lines.append(f"{bid:<4} {marks}  {len(mx.mutants_of.get(bid, []))}")
    return "\n".join(lines)


def findings(mx: Measured) -> dict[str, list[str]]:
    """The lines of each finding: declared covers that ran and killed none (holes), declared covers
    never run against the id's mutants, kills outside the declared covers, ids without a mutant."""
    holes, unreached, undeclared = [], [], []
    order = {bid: k for k, bid in enumerate(ALL_IDS)}
    for prop, bid in sorted(mx.declared, key=lambda k: (k[0], order.get(k[1], len(order)))):
        if mx.killed.get((prop, bid)) or not mx.mutants_of.get(bid):
            continue
        ran = sorted(mx.ran.get((prop, bid), ()))
        if ran:
            holes.append(f"{prop} {bid}: ran against {', '.join(ran)}; killed none")
        else:
            unreached.append(f"{prop} {bid}: not run against {', '.join(sorted(mx.mutants_of[bid]))}")
    for (prop, bid), ms in sorted(mx.killed.items()):
        if ms and (prop, bid) not in mx.declared:
            undeclared.append(f"{prop} {bid}: killed {', '.join(sorted(ms))}")
    no_mutant = [bid for bid in ALL_IDS if not mx.mutants_of.get(bid)]
    return {"holes": holes, "unreached": unreached, "undeclared": undeclared, "no_mutant": no_mutant}


def render(mx: Measured, source: str, run: dict[str, Any]) -> str:
    """The page: where the figures come from, the matrix, and the findings."""
    s = run.get("summary", {})
    f = findings(mx)
    how = "every test ran against every mutant" if mx.keep_going else "each mutant stopped at its first killing test"
    out = [
        "# Coverage matrix, measured",
        "",
        f"From `{source}`: {len(run.get('mutants', []))} mutants, mode `{s.get('mode', '?')}`, {how}. "
        "Generated by `python -m mutants.matrix`; the declared matrix is `python -m properties.run.verify --matrix`.",
        "",
        "K: declared and killed a mutant of the id. k: killed one without declaring the id. X: declared, ran "
        "against the id's mutants, killed none. ?: declared, not run against them (skipped, or stopped at an earlier "
        "kill). -: declared, no mutant of the id in this run. Last column: mutants of the id.",
        "",
        "```text",
        matrix_text(mx),
        "```",
    ]
    for title, key in FINDINGS:
        out += ["", f"## {title}", "", *([f"- {line}" for line in f[key]] or ["None."])]
    missing = f["no_mutant"]
    out += ["", "## Behaviour ids without a mutant in this run", "", ", ".join(missing) + "." if missing else "None."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the measured matrix page and print the matrix; 2 when the run's JSON is missing."""
    p = argparse.ArgumentParser(prog="python -m mutants.matrix", description=__doc__.splitlines()[0])
    p.add_argument("run", nargs="?", type=Path, default=DEFAULT_RUN, help="a mutation run's JSON")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the page to write (default docs/coverage-matrix.md)")
    p.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not args.run.is_file():
        print(f"no mutation run at {args.run}: run python -m mutants.run --json {args.run}", file=sys.stderr)
        return 2
    run = json.loads(args.run.read_text())
    mx = measure(run, suite_tests(args.root))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(mx, str(args.run), run))
    print(matrix_text(mx))
    f = findings(mx)
    print(f"\n{len(f['holes'])} declared cover(s) killed none, {len(f['unreached'])} not reached; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
