"""The near-tie budget: a passing test with too many forced decisions fails, with a message that
says how many and what to look at."""

from __future__ import annotations

import pytest

from properties.checks.forced_budget import over_budget
from properties.config import RunConfig

pytest_plugins = ["pytester"]


def test_one_forced_decision_is_always_allowed() -> None:
    assert over_budget(1, 3, 0.01) is None


def test_the_budget_is_a_fraction_of_the_decisions() -> None:
    assert over_budget(10, 1000, 0.01) is None
    why = over_budget(11, 1000, 0.01)
    assert why is not None and "11 of 1000" in why and "allowed 10" in why


def test_a_malformed_budget_is_an_error_naming_the_option_and_variable() -> None:
    with pytest.raises(ValueError, match=r"--forced-budget \(or MTP_VERIFY_FORCED_BUDGET\)"):
        RunConfig.build({}, {"MTP_VERIFY_FORCED_BUDGET": "lots"})
    with pytest.raises(ValueError, match="expected a fraction"):
        RunConfig.build({"forced_budget": "1.5"}, {})
    assert RunConfig.build({}, {"MTP_VERIFY_FORCED_BUDGET": "0.5"}).forced_budget == 0.5
    assert RunConfig.build({"forced_budget": "0.25"}, {"MTP_VERIFY_FORCED_BUDGET": "0.5"}).forced_budget == 0.25


def test_the_plugin_fails_a_passing_test_over_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from properties import counters

        def test_many_forced():
            counters.count_run(5, [0.1] * 5, 100)

        def test_few_forced():
            counters.count_run(1, [0.1], 100)
        """
    )
    result = pytester.runpytest("-p", "properties.run.plugin", "--forced-budget", "0.01")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*near-tie budget exceeded: 5 of 100*"])


SHARDED = """
import pytest
from properties import counters
from properties.run.shards import shard_ids

FORCED = {FORCED}

@pytest.mark.parametrize("shard", range(2), ids=shard_ids(2))
def test_property(shard):
    counters.count_run(FORCED[shard], [0.1] * FORCED[shard], 150)
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
@pytest.mark.parametrize(
    ("forced", "failed"),
    [((3, 0), 0), ((0, 3), 0), ((2, 2), 1), ((0, 4), 1)],
    ids=["3 then 0 of 300", "0 then 3 of 300", "2 and 2 of 300", "0 then 4 of 300"],
)
def test_a_sharded_propertys_budget_holds_over_its_cases_together(
    pytester: pytest.Pytester, workers: list[str], forced: tuple[int, int], failed: int
) -> None:
    """3 forced of 300 decisions is the budget at 1 %; one case alone forcing 3 of its 150 would be
    over it. The last case to report carries the verdict of the sum."""
    pytester.makepyfile(test_sharded=SHARDED.replace("{FORCED}", repr(forced)))
    result = pytester.runpytest_subprocess("-p", "properties.run.plugin", "--forced-budget", "0.01", *workers)
    result.assert_outcomes(passed=2 - failed, failed=failed)
    if failed:
        result.stdout.fnmatch_lines(
            [f"*near-tie budget exceeded: {sum(forced)} of 300*", "*over the property's 2 cases, summed*"]
        )


def test_a_case_run_alone_answers_for_the_budget_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sharded=SHARDED.replace("{FORCED}", "(0, 3)"))
    result = pytester.runpytest_subprocess("-p", "properties.run.plugin", "-k", "shard2of2")
    result.assert_outcomes(passed=0, failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*near-tie budget exceeded: 3 of 150*"])
