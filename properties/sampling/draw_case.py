"""One case of the oracles on a step's own draws: what replays it (`DrawCase`, a JSON file), running
it against an implementation, and the verdict with its report.

The verdict's claims, each its own section of a report: the step raised; support (every draw inside
its row's support, refusals where the reference refuses); distribution (each source's pooled draws);
independence of seed bits and of positions (`properties.sampling.draw_checks`); and seed invariance
within a call (twins). The statistical claims are tested at `alpha` each, so that a run of the
profile's examples raises a false alarm in at most `FAMILY_RATE` of runs (`statistical_tests`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from properties.impl import Impl
from properties.sampling.draw_checks import (
    Agreement,
    Distributions,
    agreements,
    pooled_fit,
    sampled,
    support_faults,
    twin_faults,
)
from properties.sampling.draw_specs import MAX_SOURCES
from properties.sampling.draw_worlds import base_world
from properties.sampling.sampler_draws import collect_sampler
from properties.sampling.statistics import FAMILY_RATE, GofResult
from properties.sampling.step_draws import Draws, collect
from properties.worlds.specs import WorldSpec, compact
from properties.worlds.world import build_world

TRIPLES = 6  # triples of copies per source and call (`properties.sampling.step_draws`)
CALLS = 24  # calls per case: 432 independent draws a source, 144 pairs of each kind
WIDE_CALLS = 8  # for vocabularies past `NARROW` ids, where each row's cut sorts tens of thousands of ids
NARROW = 4096
PAIR_KINDS = ("bits", "position")
SAMPLER_TRIPLES = 100  # through a declared sampler: 1200 independent draws a source, 400 pairs of each kind
SAMPLER_CALLS = 4


def statistical_tests() -> int:
    """The statistical tests of one case at most: a fit per source and one test per kind of pair."""
    return MAX_SOURCES + len(PAIR_KINDS)


@dataclass(slots=True, frozen=True)
class DrawCase:
    """What replays one case: the world, its sources, the seed of every call's copies, the copies per
    source and call, the calls, and each test's level."""

    spec: WorldSpec
    sources: tuple[int, ...]
    seed: int
    alpha: float
    triples: int = TRIPLES
    calls: int = CALLS
    sampler: bool = False  # drawn through the implementation's declared row sampler, not its step

    def to_json(self) -> str:
        d = {"spec": json.loads(self.spec.to_json()), "sources": list(self.sources), "seed": self.seed}
        d |= {"alpha": self.alpha, "triples": self.triples, "calls": self.calls, "sampler": self.sampler}
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> DrawCase:
        d = json.loads(text)
        spec = WorldSpec.from_json(json.dumps(d["spec"]))
        sampler = bool(d.get("sampler", False))
        return cls(
            spec, tuple(d["sources"]), int(d["seed"]), float(d["alpha"]), int(d["triples"]), int(d["calls"]), sampler
        )

    def copies_per_call(self) -> int:
        return len(self.sources) * (3 * self.triples + 1)


def calls_for(spec: WorldSpec) -> int:
    """The calls of a step case of `spec`: fewer for a wide vocabulary (the same tests, fewer draws)."""
    return CALLS if spec.model.vocab_size <= NARROW else WIDE_CALLS


def sampler_case(spec: WorldSpec, sources: tuple[int, ...], seed: int, alpha: float) -> DrawCase:
    """A case drawn through a declared row sampler: many draws in few calls (fewer for a wide
    vocabulary, whose calls hold [copies, V] logits)."""
    triples = SAMPLER_TRIPLES if spec.model.vocab_size <= NARROW else SAMPLER_TRIPLES // 4
    return DrawCase(spec, sources, seed, alpha, triples, SAMPLER_CALLS, sampler=True)


@dataclass(slots=True)
class Verdict:
    """A case's outcome: each failed claim's lines, by claim, and what was tested."""

    failures: dict[str, list[str]] = field(default_factory=dict)
    fits: dict[int, GofResult] = field(default_factory=dict)
    pairs: dict[str, Agreement] = field(default_factory=dict)
    twins_compared: int = 0
    draws: int = 0

    def fail(self, claim: str, lines: list[str]) -> None:
        if lines:
            self.failures.setdefault(claim, []).extend(lines)

    @property
    def passed(self) -> bool:
        return not self.failures


def collect_case(case: DrawCase, impl: Impl) -> Draws:
    """The case's draws from `impl`'s step, or from its declared row sampler for a sampler case (a
    ValueError when it declares none)."""
    rng = random.Random(case.seed)
    if case.sampler:
        if impl.sampler is None:
            raise ValueError(f"{impl.name} declares no row sampler (ROW_SAMPLER) to draw a sampler case from")
        return collect_sampler(impl.sampler, build_world(case.spec), case.sources, case.triples, case.calls, rng)
    base = base_world(case.spec, case.copies_per_call())
    return collect(impl, base, case.sources, case.triples, case.calls, rng)


def judge(case: DrawCase, draws: Draws) -> Verdict:
    """Every claim of the module docstring on the case's draws."""
    v = Verdict(draws=len(draws.draws))
    if draws.error is not None:
        v.fail("the sampler raised" if case.sampler else "the step raised", [draws.error])
    dists = Distributions()
    v.fail("support", support_faults(draws.draws, dists)[:8])
    for j in case.sources:
        mine = sampled((d for d in draws.draws if d.copy.source == j), dists)
        if mine:
            fit = v.fits[j] = pooled_fit(mine)
            if not fit.passed(case.alpha):
                v.fail("distribution", [f"seq[{j}]: {fit.describe()}"])
    for kind in PAIR_KINDS:
        a = v.pairs[kind] = agreements(draws.draws, dists, kind)
        if a.p_value < case.alpha:
            v.fail(f"independence ({kind})", [a.describe()])
    twins, v.twins_compared = twin_faults(draws.draws)
    v.fail("seed invariance within a call", twins[:8])
    return v


def report(case: DrawCase, impl_name: str, v: Verdict, replay: str) -> str:
    """The failure report: each failed claim, what was tested, the mix, the replay."""
    what = f"the row sampler of {impl_name}" if case.sampler else f"the step's own draws ({impl_name})"
    lines = [f"{what} do not follow the reference"]
    for claim, found in v.failures.items():
        lines += ["", f"{claim}:"] + [f"  {x}" for x in found]
    lines += ["", f"tested at alpha {case.alpha:.3g} each (a false alarm in at most {FAMILY_RATE:g} of runs):"]
    lines += [f"  seq[{j}]: {fit.describe()}" for j, fit in v.fits.items()]
    lines += [f"  {a.describe()}" for a in v.pairs.values()]
    lines.append(f"  {v.twins_compared} twins on equal row bits, {v.draws} draws in {case.calls} calls")
    lines += ["", f"sources: {list(case.sources)}; copies per call {case.copies_per_call()}, seed {case.seed}"]
    lines += ["", "mix (non-default fields; * = bootstrapped):"] + ["  " + x for x in compact(case.spec).splitlines()]
    lines += ["", f"replay: {replay}"]
    return "\n".join(lines)
