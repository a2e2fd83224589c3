"""P9: whole generations. Two engines run the same requests step after step, one bootstrapping through
the dispatch with the implementation under test, one always through the per-sequence loop (see
`properties.generations.pair`). After every step: the two worlds are equal (every running request's
fields, every request's result, the models' whole persistent state, the free lists), with D1 and D4
applied; neither engine leaked a block, slot or SSM slot or gave one to two running requests; and
every finished request equals its plain decoding alone (aborted or failed ones a prefix of it).
In fast numerics the same claims hold under the replay oracle (`properties.generations.oracle`):
continuous values within the dtype's rounding, discrete ones equal once the near-ties the oracle
explains were forced onto the loop engine and the solo decode; a run that forced more than 1 % of
its decisions fails (over the property's cases together). Every promoted generation in
`properties/generations/regressions/` is replayed too."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import event, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from properties.behaviours import covers
from properties.config import RunConfig
from properties.generations.counts import PairStats
from properties.generations.oracle import budget_text, over_budget
from properties.generations.pair import EnginePair
from properties.generations.promote import GENERATION_REGRESSIONS, on_device
from properties.generations.replay import read_script
from properties.generations.report import format_generation_report
from properties.generations.run import run_script
from properties.generations.spec import RequestSpec
from properties.generations.strategies import fault_specs, generation_specs, request_specs
from properties.run.shards import running_seed, shard_examples, shard_ids, shard_seed
from properties.sides.mismatch import Mismatch
from properties.worlds.specs import FaultSpec

MAX_LIVE = 6  # requests waiting or running at once
SHARDS = 6  # cases the profile's examples are split over, each a worker's (properties.run.shards)
ABORT_PICKS = 4 * MAX_LIVE
# Every finished example adds its counts here (read by `properties.generations.figures`).
TOTALS: list[PairStats] = []


class P9Generations(RuleBasedStateMachine):
    """Rules: add a request, plan a fault for the next step, step, abort. The checks run inside each
    rule that changes the engines; teardown runs every request to its end. `run` is the run's
    configuration, which this class does not have: `machine(run)` makes the class of one run, and a
    machine without its run fails at once."""

    run: RunConfig  # set by `machine(run)` only: no default, so no run's options are silently dropped

    def __init__(self) -> None:
        if not isinstance(getattr(type(self), "run", None), RunConfig):
            raise TypeError(f"{type(self).__name__} has no run: make its class with machine(run)")
        super().__init__()
        self.pair: EnginePair | None = None
        self.failed = False

    def check(self, found: list[Mismatch]) -> None:
        if found:
            self.failed = True
            assert self.pair is not None
            raise AssertionError(format_generation_report("P9 generations", self.pair, found))

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        spec = data.draw(generation_specs(self.run), label="world")
        self.pair = EnginePair(spec, self.run.impl, self.run.replays)

    @precondition(lambda self: len(self.pair.live_ids()) < MAX_LIVE)
    @rule(req=request_specs())
    def add_request(self, req: RequestSpec) -> None:
        self.pair.add(req)

    @precondition(lambda self: len(self.pair.planned) < 2)
    @rule(fault=fault_specs())
    def plan_fault(self, fault: FaultSpec) -> None:
        self.pair.plan_fault(fault)

    @rule(n=st.integers(1, 6))
    def step(self, n: int) -> None:
        for _ in range(n):
            self.check(self.pair.step())

    @precondition(lambda self: bool(self.pair.live_ids()))
    @rule(pick=st.integers(0, ABORT_PICKS - 1))
    def abort(self, pick: int) -> None:
        """Abort the `pick`-th waiting or running request; a pick past them aborts nothing (so most
        generations run to their end)."""
        ids = self.pair.live_ids()
        if pick < len(ids):
            self.check(self.pair.abort(ids[pick]))

    def teardown(self) -> None:
        if self.pair is None or self.failed:
            return
        self.check(self.pair.drain())
        s = self.pair.stats
        TOTALS.append(s)
        for reason in s.reasons:
            event(f"P9: a request finished by {reason}")
        for what, n in (
            ("batched bootstrap", s.batched_bootstraps),
            ("draft accepted", s.drafts_accepted),
            ("bonus token", s.bonus_tokens),
            ("slot reused", s.slots_reused),
            ("crossed a KV block", s.crossed_blocks),
            ("D1 engaged", s.d1_opened),
            ("D1 checkpoint read by a later verify", s.d1_reads),
            ("near-tie forced", len(s.tally.forced)),
        ):
            if n:
                event(f"P9: {what}")
        for change in s.reach.counts():
            event(f"P9: a request bootstrapped through the implementation before and after its {change}")


def machine(run: RunConfig, shard: int | None = None) -> type[P9Generations]:
    """The state machine of `run` (its device, numerics and implementation); for case `shard`
    under a given seed (the nightly's or `--hypothesis-seed`, `running_seed`) or a derandomized
    profile, seeded apart from the other cases, the same again for the same seed."""
    cls = type("P9Generations", (P9Generations,), {"run": run})
    given = running_seed()
    if shard is not None and (given is not None or settings().derandomize):
        cls = seed(shard_seed("P9 generations", shard, given))(cls)
    return cls


def p9_settings(shards: int = 1) -> settings:
    """One case's part of the loaded profile's example count (`shard_examples`), each example a whole
    run of up to 40 rules."""
    return settings(settings(), stateful_step_count=40, max_examples=shard_examples(shards))


@covers(
    "P9 generations",
    "B1",
    "B2",
    "B3",
    "B8",
    "B11",
    "B12",
    "B13",
    "B16",
    "B17",
    "B19",
    "B22",
    "B23",
    "D1",
    "D2",
    "D4",
)
@pytest.mark.parametrize("shard", range(SHARDS), ids=shard_ids(SHARDS))
def test_p9_generations(run: RunConfig, shard: int) -> None:
    start = len(TOTALS)
    run_state_machine_as_test(machine(run, shard), settings=p9_settings(SHARDS))
    # The near-tie budget holds over the cases together (the plugin sums their counts,
    # `properties.run.shard_budget`); this case's forced decisions are printed for a failure's report.
    print(budget_text([s.tally for s in TOTALS[start:]], run.forced_budget))


def check_budget(tallies: list, budget: float) -> None:
    """Fast numerics: the run's forced decisions within the budget (1 % of its decisions by default)."""
    why = over_budget(tallies, budget)
    assert why is None, f"P9: {why}\n{budget_text(tallies, budget)}"


CASES = sorted(GENERATION_REGRESSIONS.glob("*.json"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_p9_regression(run: RunConfig, path: Path) -> None:
    script = on_device(read_script(path), run.device)
    outcome = run_script(script, run.impl, run.replays)
    assert outcome.failed_at is None, f"regression {path.stem} ({script.note or 'no note'}):\n" + (
        format_generation_report(f"regression {path.stem}", outcome.pair, outcome.mismatches)
    )
    check_budget([outcome.pair.stats.tally], run.forced_budget)
