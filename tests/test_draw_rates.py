"""The alarm-rate command's cases and counts (`properties.sampling.draw_rates`): its rates mean
something only if every case index is its own random case and each alarm is counted once per claim."""

from __future__ import annotations

from properties.config import RunConfig
from properties.sampling.draw_case import Verdict
from properties.sampling.draw_rates import Rates, cases

RUN = RunConfig.build({"numerics": "exact", "dtype": None, "device": "cpu"}, {})


def test_each_case_index_is_its_own_case() -> None:
    drawn = cases(RUN, 0, 6, sampler=False)
    keys = {(c.seed, c.spec) for c in drawn}
    assert len(keys) == len(drawn), "case indices drew the same case (a run's simplest example?)"


def test_a_case_does_not_depend_on_the_range_it_is_drawn_in() -> None:
    whole = cases(RUN, 0, 4, sampler=False)
    (alone,) = cases(RUN, 2, 1, sampler=False)
    assert (alone.seed, alone.spec, alone.sources) == (whole[2].seed, whole[2].spec, whole[2].sources)


def test_rates_count_claims_not_their_lines() -> None:
    r = Rates("x")
    for _ in range(3):
        v = Verdict()
        v.fail("distribution", ["seq[0]: p = 0", "seq[1]: p = 0"])
        r.add(v)
    r.add(Verdict())
    assert (r.cases, r.alarms, dict(r.claims)) == (4, 3, {"distribution": 3})
