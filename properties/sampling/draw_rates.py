"""How often the oracles on a step's own draws raise an alarm: `python -m properties.sampling.draw_rates
--cases N [--impl NAME ...] [--sampler] [--numerics fast --dtype D] [--jobs J] [--write]`.

Cases are drawn as the property draws them (`properties.sampling.draw_specs`, one seed per case
index, so every implementation meets the same cases) and judged at the property's alpha in the `ci`
profile (`draw_case.statistical_tests` tests of 1e-6 / (10 x tests) each). On a correct
implementation the alarms are false alarms (the rate a run's verdict rests on); on a wrong one
(`mutants.wrong_steps`) the share of cases that catch it is the oracles' power against that class of
bug. For each implementation: the cases, those with any alarm and with each claim's, and for the
pooled fits and the pair tests the shares of p-values under a few levels (a calibrated test keeps
them near the level; the pair tests' exact tails are discrete, so at or under it). `--sampler`
draws through each implementation's declared row sampler instead (`properties.sampling.sampler_draws`).
`--write` puts the table into `docs/samplers.md` (the block of the mode).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from properties.config import OPTION, RunConfig
from properties.impl import load
from properties.run.doc_blocks import Block, write_block
from properties.sampling.draw_case import (
    DrawCase,
    Verdict,
    calls_for,
    collect_case,
    judge,
    sampler_case,
    statistical_tests,
)
from properties.sampling.draw_specs import draw_specs
from properties.sampling.statistics import row_alpha

LEVELS = (0.1, 0.01, 0.001)
CI_EXAMPLES = 10  # the property's examples in the ci profile (test_step_draws.examples)
DOC = Path("docs/samplers.md")
DEFAULT_IMPLS = ("literal", "vector", "vector-torch")  # measured without --impl


@dataclass(slots=True)
class Rates:
    """One implementation's alarms over its cases."""

    impl: str
    cases: int = 0
    alarms: int = 0
    claims: Counter[str] = field(default_factory=Counter)
    p_fits: list[float] = field(default_factory=list)
    p_pairs: list[float] = field(default_factory=list)
    single: int = 0  # pooled fits with one bin: only the support tested
    seconds: float = 0.0

    def add(self, v: Verdict) -> None:
        self.cases += 1
        self.alarms += int(not v.passed)
        self.claims.update(v.failures.keys())
        for fit in v.fits.values():
            if fit.bins >= 2:
                self.p_fits.append(fit.p_value)
            else:
                self.single += 1
        self.p_pairs += [a.p_value for a in v.pairs.values() if a.pairs and a.expected < a.pairs]

    def merge(self, other: Rates) -> None:
        self.cases += other.cases
        self.alarms += other.alarms
        self.claims.update(other.claims)
        self.p_fits += other.p_fits
        self.p_pairs += other.p_pairs
        self.single += other.single
        self.seconds += other.seconds


def case(run: RunConfig, i: int, sampler: bool, alpha: float) -> DrawCase:
    """Case `i`, drawn as the property draws its examples. A run's first example is the strategies'
    simplest whatever the seed, so case `i` is the second example of a run of two seeded with `i`:
    random, and the same for every implementation and every range it is drawn in."""
    drawn: list[DrawCase] = []

    @seed(i)
    @settings(
        max_examples=2,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def one(data: st.DataObject) -> None:
        spec, sources = data.draw(draw_specs(run))
        s = data.draw(st.integers(0, 2**63 - 1))
        drawn.append(
            sampler_case(spec, sources, s, alpha)
            if sampler
            else DrawCase(spec, sources, s, alpha, calls=calls_for(spec))
        )

    one()
    return drawn[-1]


def cases(run: RunConfig, first: int, count: int, sampler: bool) -> list[DrawCase]:
    """Cases `first` .. `first + count - 1` (`case`)."""
    alpha = row_alpha(CI_EXAMPLES * statistical_tests())
    return [case(run, i, sampler, alpha) for i in range(first, first + count)]


def measure(args: tuple[str, RunConfig, int, int, bool]) -> Rates:
    """The rates of one implementation on one range of cases (a worker's share)."""
    name, run, first, count, sampler = args
    torch.set_num_threads(1)
    impl = load(name)
    got = Rates(name)
    start = time.perf_counter()
    for case in cases(run, first, count, sampler):
        got.add(judge(case, collect_case(case, impl)))
    got.seconds = time.perf_counter() - start
    return got


def shares(ps: list[float]) -> str:
    return " / ".join(f"{sum(p < lv for p in ps) / len(ps):.3f}" if ps else "-" for lv in LEVELS)


def table(results: list[Rates], alpha: float, mode: str) -> str:
    """The markdown table of the module docstring."""
    claims = sorted({c for r in results for c in r.claims})
    head = f"{mode}; each test at alpha {alpha:.3g}; p-value shares under {' / '.join(map(str, LEVELS))}."
    lines = [
        head,
        "",
        "| implementation | cases | cases with an alarm | by claim | fits: p shares | pairs: p shares | one-bin fits |",
    ]
    lines.append("|---|---|---|---|---|---|---|")
    for r in results:
        by = ", ".join(f"{c} {r.claims[c]}" for c in claims if r.claims[c]) or "-"
        lines.append(
            f"| `{r.impl}` | {r.cases} | {r.alarms} ({r.alarms / max(r.cases, 1):.0%}) | {by} | "
            f"{shares(r.p_fits)} ({len(r.p_fits)}) | {shares(r.p_pairs)} ({len(r.p_pairs)}) | {r.single} |"
        )
    total = sum(r.seconds for r in results)
    lines += ["", f"{sum(r.cases for r in results)} cases in {total / 60:.1f} min of one core each."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m properties.sampling.draw_rates", description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=50)
    p.add_argument("--first", type=int, default=0, help="the first case's index (disjoint ranges on several hosts)")
    impls = OPTION["impl"].help(", ".join(DEFAULT_IMPLS), env=False) + "; repeatable"
    p.add_argument("--impl", dest="impls", action="append", metavar="IMPL", help=impls)
    p.add_argument("--sampler", action="store_true", help="through each implementation's declared row sampler")
    # The suite's options of the cases' worlds; the environment is not read (a table is the command's).
    RunConfig.add_arguments(p, ("numerics", "dtype", "device"), {"numerics": "exact", "device": "cpu"}, env=False)
    p.add_argument("--jobs", type=int, default=1, help="worker processes (each a share of the cases)")
    p.add_argument("--write", action="store_true")
    args, run = RunConfig.parse(p, argv, {})
    names = args.impls or list(DEFAULT_IMPLS)
    per = -(-args.cases // args.jobs)
    work = [
        (n, run, args.first + k * per, min(per, args.cases - k * per), args.sampler)
        for n in names
        for k in range(args.jobs)
        if k * per < args.cases
    ]
    results = {n: Rates(n) for n in names}
    with ProcessPoolExecutor(args.jobs) as pool:
        for r in pool.map(measure, work):
            results[r.impl].merge(r)
    mode = (
        f"{args.numerics}" + (f" {args.dtype}" if args.dtype else "") + (", declared samplers" if args.sampler else "")
    )
    text = table(list(results.values()), row_alpha(CI_EXAMPLES * statistical_tests()), f"{mode} on {run.device}")
    print(text)
    if args.write:
        block = "draw-rates-" + args.numerics + ("-sampler" if args.sampler else "")
        write_block(DOC, Block(block, "python -m properties.sampling.draw_rates --write"), text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
