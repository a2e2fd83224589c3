"""Which corner pairs (`properties.worlds.corners`) the derandomized `ci` samples reach: the gate's two self
tests on gate inputs (`properties/self_tests/test_gate.py`), P2's two on worlds run through the
dispatch, and the mixes P1 draws, as `properties.worlds.fixed_sample` draws them; and the markdown of
`docs/corners.md` (`python -m properties.worlds.corner_reach`).

A pair counts as reached when an example that runs the code meeting both its conditions holds it:
gate inputs run the gate function alone, so they reach the pairs of two clauses (which only the gate
function reads); a world runs the dispatch (P2) or the batched step (P1, whatever the gate says), so
it reaches any pair of a clause or the gate; the pairs of two limits, or of a limit and the drafter
kind, are the batched step's, reached by P1's mixes and by P2's worlds where the gate opens."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.corners import (
    CONDITIONS,
    VARIABLES,
    Pair,
    all_pairs,
    clause_pair,
    conditions_of,
    exclusions,
    pairs_of,
    reachable_pairs,
    step_pair,
    variable_of,
)
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.gate_worlds import (
    CLAUSES,
    corner_worlds,
    dispatch_specs,
    gate_inputs,
    passing_gate_inputs,
    violate,
)
from properties.worlds.strategies import world_specs

# The CPU default of a `ci` run (exact numerics, float64/float32, mixes of up to 12), whatever the
# options of this session, and the `ci` profile's examples per property.
CI_RUN = RunConfig()
CI_EXAMPLES = 100
INPUTS, WORLDS, MIXES = "P2 gate inputs", "P2 worlds", "mixes"


@st.composite
def clause_rounds(draw: st.DrawFn) -> list[dict]:
    """What one example of `test_gate_each_clause_alone` checks: passing inputs, then each clause
    violated alone."""
    base = draw(passing_gate_inputs())
    return [base, *(draw(violate(base, c)) for c in CLAUSES)]


def ci_strategies(run: RunConfig) -> dict[str, tuple[str, st.SearchStrategy[Any]]]:
    """Each sampled property's generator, by name, with its group (`INPUTS`, `WORLDS` or `MIXES`); each
    draws a list of the examples one run of the property checks."""
    return {
        "test_gate_truth_table": (INPUTS, gate_inputs().map(lambda g: [g])),
        "test_gate_each_clause_alone": (INPUTS, clause_rounds()),
        "test_dispatch_follows_gate": (WORLDS, dispatch_specs(run).map(lambda s: [s])),
        "test_dispatch_at_the_gate_corner": (WORLDS, corner_worlds(run).map(lambda w: [w[0]])),
        "test_p1_equivalence (world_specs)": (MIXES, world_specs(run).map(lambda s: [s])),
    }


@dataclass(slots=True)
class Reach:
    """The pairs each sample's examples held, by sample name, those held by the examples that ran the
    batched step, and the group each sample counts for."""

    by_sample: dict[str, set[Pair]] = field(default_factory=dict)
    batched: dict[str, set[Pair]] = field(default_factory=dict)
    group: dict[str, str] = field(default_factory=dict)

    def held(self, *groups: str, batched: bool = False) -> set[Pair]:
        """The pairs held by an example of the samples of `groups` (of every sample without one); with
        `batched`, by an example that ran the batched step."""
        samples = self.batched if batched else self.by_sample
        return {p for name, ps in samples.items() if not groups or self.group[name] in groups for p in ps}

    def counted(self, group: str) -> set[Pair]:
        """The pairs the samples of `group` reach (module docstring): gate inputs the pairs of two
        clauses; worlds any pair of a clause or the gate, and the others where the batched step ran."""
        if group == INPUTS:
            return {p for p in self.held(INPUTS) if clause_pair(p)}
        every, batched = self.held(group), self.held(group, batched=True)
        return {p for p in every if not step_pair(p)} | {p for p in batched if step_pair(p)}

    def reached(self) -> set[Pair]:
        return self.counted(INPUTS) | self.counted(WORLDS) | self.counted(MIXES)


def reached_pairs(examples: Iterable[Any]) -> set[Pair]:
    """The pairs the examples hold, each example on its own."""
    return {p for e in examples for p in pairs_of(conditions_of(e))}


def runs_batched(group: str, example: Any) -> bool:
    """Whether the property runs the batched step on the example: P1 on every mix, P2 on a world
    whose gate opens, never on gate inputs."""
    return group == MIXES or (group == WORLDS and "gate open" in conditions_of(example))


def measure(count: int = CI_EXAMPLES, run: RunConfig = CI_RUN) -> Reach:
    """The pairs reached by `count` derandomized examples of each sampled property's generator."""
    reach = Reach()
    for name, (group, strategy) in ci_strategies(run).items():
        examples = [e for drawn in fixed_sample(strategy, count) for e in drawn]
        reach.by_sample[name] = reached_pairs(examples)
        reach.batched[name] = reached_pairs(e for e in examples if runs_batched(group, e))
        reach.group[name] = group
    return reach


def missing(reach: Reach) -> list[Pair]:
    """The reachable pairs no sample reached."""
    got = reach.reached()
    return [p for p in reachable_pairs() if p not in got]


def excluded_but_held(reach: Reach) -> list[Pair]:
    """The pairs listed as unreachable that an example of any sample held (the exclusions are wrong)."""
    got = reach.held()
    return [p for p in exclusions() if p in got]


def kind(p: Pair) -> str:
    """The kinds of the pair's two variables: clause, gate, limit or drafter."""

    def of(condition: str) -> str:
        name = variable_of(condition).name
        return "clause" if name.startswith("G") else name if name in ("gate", "drafter") else "limit"

    a, b = sorted((of(p[0]), of(p[1])), key=("clause", "gate", "limit", "drafter").index)
    return f"{a} × {b}"


def markdown(reach: Reach) -> str:
    """The tables of `docs/corners.md`: conditions, counts by kind, exclusions, missed and every pair."""
    return "\n\n".join((conditions_table(), counts_table(reach), exclusions_table(), missed(reach), pairs_table(reach)))


def conditions_table() -> str:
    rows = [f"| {v.name} | {v.scope} | {v.plain} | {v.corner} | {v.meaning} |" for v in VARIABLES]
    header = "| variable | scope | plain | corner | the corner means |\n|---|---|---|---|---|"
    summary = (
        f"{len(CONDITIONS)} conditions, {len(all_pairs())} pairs: {len(reachable_pairs())} reachable, "
        f"{len(exclusions())} excluded."
    )
    return "\n".join([header, *rows, "", summary])


def counts_table(reach: Reach) -> str:
    """Reachable pairs by kind, and how many each group of samples reached."""
    reachable = reachable_pairs()
    got = [reach.counted(g) for g in (INPUTS, WORLDS, MIXES)] + [reach.reached()]
    out = [
        f"| pairs | reachable | {INPUTS} | {WORLDS} | {MIXES} | reached | missed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for k in [*dict.fromkeys(kind(p) for p in reachable), "all"]:
        ps = [p for p in reachable if k in ("all", kind(p))]
        counts = [len(ps), *(sum(p in g for p in ps) for g in got)]
        out.append(f"| {k} | {' | '.join(map(str, counts))} | {counts[0] - counts[-1]} |")
    return "\n".join(out)


def exclusions_table() -> str:
    rows = [f"| {a} · {b} | {why} |" for (a, b), why in exclusions().items()]
    return "\n".join(["| excluded pair | reason |", "|---|---|", *rows])


def missed(reach: Reach) -> str:
    lost = missing(reach)
    return "\n".join(
        [f"Reachable pairs not reached: {len(lost)}" + (":" if lost else "."), *(f"- {a} · {b}" for a, b in lost)]
    )


def pairs_table(reach: Reach) -> str:
    """Every reachable pair, marked where each group of samples reached it."""
    got = [reach.counted(g) for g in (INPUTS, WORLDS, MIXES)]
    out = [f"| pair | {INPUTS} | {WORLDS} | {MIXES} |", "|---|:-:|:-:|:-:|"]
    for p in reachable_pairs():
        out.append(f"| {p[0]} · {p[1]} | {' | '.join('x' if p in g else '' for g in got)} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    """Print the markdown of `docs/corners.md` for the `ci` samples (`--examples` per property)."""
    parser = argparse.ArgumentParser(prog="python -m properties.worlds.corner_reach", description=main.__doc__)
    parser.add_argument("--examples", type=int, default=CI_EXAMPLES)
    args = parser.parse_args(argv)
    print(markdown(measure(args.examples)))


if __name__ == "__main__":
    main()
