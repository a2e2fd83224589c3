"""The near-tie budget of a property split over cases (`properties.run.shards`): held to the property's
whole run, not to each case.

The budget is a share of the reference's decisions (`properties.checks.forced_budget`). A case runs
a part of the property's examples, so its own share moves more than the whole run's, and a property
that forced 1 % of its decisions would fail or pass by how its examples fell into cases. So a case
does not answer for the budget alone: each carries its counts (forced decisions, decisions) with
its report, and the process that reports (the only one, or the xdist controller) sums the counts
of the property's collected cases; when the last of them reports, a run over the budget fails that
case, with the sum and every case named. Cases are known by their ids (`properties.run.shards.property_of`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from properties.checks.forced_budget import over_budget
from properties.run.shards import property_of

COUNTS_PROPERTY = "mtp_verify_budget"  # a shard case's (forced, decisions), on its report


@dataclass(slots=True)
class PropertyBudget:
    """One sharded property's cases as they report: those collected, those done, the summed counts."""

    cases: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    forced: int = 0
    decisions: int = 0


class ShardBudget:
    """The reporting side: collects the cases, sums their counts, fails the last case of a property
    whose sum is over `fraction`."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction
        self.props: dict[str, PropertyBudget] = {}

    def collected(self, nodeids: list[str]) -> None:
        """The run's collected node ids (again from each xdist worker: the same ids)."""
        for nodeid in nodeids:
            prop = property_of(nodeid)
            if prop is not None:
                self.props.setdefault(prop, PropertyBudget()).cases.add(nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.collected(ids)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected([item.nodeid for item in session.items])

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        prop = property_of(report.nodeid)
        if prop is None or prop not in self.props:
            return
        final = report.when == "call" or (report.when == "setup" and report.outcome != "passed")
        if not final:
            return
        budget = self.props[prop]
        forced, decisions = counts_of(report)
        budget.forced += forced
        budget.decisions += decisions
        budget.done.add(report.nodeid)
        if budget.done != budget.cases or report.outcome != "passed":
            return
        why = over_budget(budget.forced, budget.decisions, self.fraction)
        if why is not None:
            cases = ", ".join(sorted(budget.cases))
            report.outcome = "failed"
            report.longrepr = f"{why}\nThe budget holds over the property's {len(budget.cases)} cases, summed: {cases}"


def counts_of(report: pytest.TestReport) -> tuple[int, int]:
    """The (forced, decisions) a shard case's report carries; (0, 0) when it carries none (a case
    skipped at setup, or whose worker crashed)."""
    for name, value in report.user_properties:
        if name == COUNTS_PROPERTY:
            forced, decisions = json.loads(value)
            return int(forced), int(decisions)
    return 0, 0
