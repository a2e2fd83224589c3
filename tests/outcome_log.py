"""A pytest plugin for the negative controls (`-p tests.outcome_log --outcome-log PATH`): writes to
PATH, as JSON, every test the run selected and every test it deselected (each node id with whether
it carries the `self_test` marker), and each selected test's outcome (failed when any phase failed,
skipped when it was skipped, else passed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SELF_TEST = "self_test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--outcome-log", default=None, help="where to write the selection and outcomes (JSON)")


class OutcomeLog:
    """The selection and the outcomes of one run, written at its end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.deselected: dict[str, bool] = {}
        self.selected: dict[str, bool] = {}
        self.outcomes: dict[str, str] = {}

    @pytest.hookimpl
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.update({i.nodeid: i.get_closest_marker(SELF_TEST) is not None for i in items})

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = {i.nodeid: i.get_closest_marker(SELF_TEST) is not None for i in session.items}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        was = self.outcomes.get(report.nodeid)
        if report.failed or was == "failed":
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped:
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and was is None:
            self.outcomes[report.nodeid] = "passed"

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        out: dict[str, Any] = {"selected": self.selected, "deselected": self.deselected, "outcomes": self.outcomes}
        self.path.write_text(json.dumps(out, indent=1))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("outcome_log")
    if path:
        config.pluginmanager.register(OutcomeLog(Path(path)), "outcome-log")
