"""The declared row sampler follows the reference: the fast path of the oracles on a step's own draws.

An implementation may declare its step's sampler (`ROW_SAMPLER`, `properties.impl`). Every token
its step emits is then held to that sampler's token on the same row and request
(`properties.sides.own_noise`), so the sampler can be tested alone, where draws are cheap: the rows
the reference decodes for a generated world's sampled sequences, many copies of each in one call,
the sources' rows side by side, with 63-bit seeds, partners sharing a seed's low 32 bits or one
position later, and twins (`properties.sampling.sampler_draws`), judged by the same oracles as the
step's draws (`properties.sampling.draw_case`): support, each row's pooled distribution, the
independence of seed bits and positions, and the same token for the same request on the same row.
An implementation that declares no sampler has its step's draws tested alone (`test_step_draws`);
this test is then skipped. The same oracles on the reference's own sampler are the suite's
false-alarm control (`properties/self_tests/test_reference_sampler.py`).

A failure's case replays with `python -m properties.sampling.test_step_draws CASE.json --impl NAME`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.failures.report import replay_command, save_json
from properties.impl import Impl
from properties.sampling.draw_case import collect_case, judge, report, sampler_case, statistical_tests
from properties.sampling.draw_specs import draw_specs
from properties.sampling.statistics import row_alpha

SEEDS = st.integers(0, 2**63 - 1)
NO_SAMPLER = "no declared row sampler: the step's own draws are test_step_draws'"


def examples() -> int:
    """This property's examples under the loaded profile (each draws 1200 tokens a row)."""
    return max(3, settings().max_examples // 4)


def check_sampler(impl: Impl, run: RunConfig, data: st.DataObject) -> None:
    """One example of the oracles on `impl`'s declared sampler; AssertionError with the report."""
    spec, sources = data.draw(draw_specs(run), label="world")
    case = sampler_case(spec, sources, data.draw(SEEDS, label="draw seed"), row_alpha(examples() * statistical_tests()))
    verdict = judge(case, collect_case(case, impl))
    if not verdict.passed:
        path = save_json(case.to_json(), run.replays, prefix="sampler-")
        raise AssertionError(report(case, f"the row sampler of {impl.name}", verdict, replay_command(path, impl.name)))


@settings(max_examples=examples())
@given(data=st.data())
def test_the_declared_row_sampler_follows_the_reference(run: RunConfig, data: st.DataObject) -> None:
    impl = run.impl
    if impl.sampler is None:
        pytest.skip(NO_SAMPLER)
    check_sampler(impl, run, data)
