"""A pytest plugin for the verification job: a progress line per property as it finishes and a
summary table (property, examples, near-ties, result, time) at the end; optional JSON summary.

The counts (`properties.counters`) are per process. Wherever a test runs (the only process, or an
xdist worker) its counts travel with its report as the user property `COUNTS_PROPERTY` (a JSON
string, so JUnit XML shows it too); the process that reports (the only one, or the xdist
controller) reads them back with `counts_of`. Examples are counted from Hypothesis's observability
records, so the plugin turns observability on (without its line coverage, which is slow).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from properties import counters
from properties.hypothesis_internals import observe, stop_observing

COUNTS_PROPERTY = "mtp_verify_counts"


@dataclass(slots=True)
class Row:
    test: str
    examples: int
    near_ties: int
    largest_near_tie: float | None
    result: str
    seconds: float
    runs: int = 0
    decisions: int = 0  # the reference's decisions in the side-by-side runs (near_ties were forced of these)


def counts_of(report: pytest.TestReport) -> dict[str, Any]:
    """The counts a report carries (`counters.snapshot` of its test); zeros when it carries none,
    as for a test whose worker crashed."""
    for name, value in report.user_properties:
        if name == COUNTS_PROPERTY:
            return json.loads(value)
    return counters.snapshot("no such test")


def is_final(report: pytest.TestReport) -> bool:
    """True for the report that decides a test's result: its call, a setup that did not pass, or
    the report xdist makes for a test whose worker crashed."""
    return report.when == "call" or (report.when != "teardown" and report.outcome != "passed")


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl
def pytest_runtest_setup(item: pytest.Item) -> None:
    counters.current_test = item.nodeid  # also where the root conftest (and the budget) is not loaded


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if is_final(report):
        report.user_properties.append((COUNTS_PROPERTY, json.dumps(counters.snapshot(item.nodeid))))
    return report


class Summary:
    """The reporting side: progress lines, the table, the JSON rows."""

    def __init__(self, json_path: str | None = None) -> None:
        self.rows: list[Row] = []
        self.total = 0
        self.json_path = json_path  # where the rows go as JSON (`--summary-json`), if anywhere

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not is_final(report):
            return
        result = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[report.outcome]
        counts = counts_of(report)
        name = report.nodeid.split("::")[-1]
        row = Row(
            name,
            counts["examples"],
            counts["near_ties"],
            counts["largest_near_tie"],
            result,
            report.duration,
            counts["runs"],
            counts["decisions"],
        )
        self.rows.append(row)
        print(
            f"\n[{len(self.rows)}/{self.total or '?'}] {result} {name}: {row.examples} examples, "
            f"{row.near_ties} near-ties, {row.seconds:.1f} s",
            flush=True,
        )

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr = terminalreporter
        tr.section("equivalence verification summary")
        width = max([len(r.test) for r in self.rows] + [8])
        tr.write_line(f"{'property':<{width}}  {'examples':>8}  {'near-ties':>9}  {'result':<6}  {'time':>7}")
        for r in self.rows:
            tr.write_line(f"{r.test:<{width}}  {r.examples:>8}  {r.near_ties:>9}  {r.result:<6}  {r.seconds:>6.1f}s")
        total_ex = sum(r.examples for r in self.rows)
        failed = sum(r.result == "FAIL" for r in self.rows)
        tr.write_line(
            f"{'total':<{width}}  {total_ex:>8}  {sum(r.near_ties for r in self.rows):>9}  "
            f"{'FAIL' if failed else 'PASS':<6}  {sum(r.seconds for r in self.rows):>6.1f}s"
        )
        path = self.json_path
        if path:
            Path(path).write_text(json.dumps([asdict(r) for r in self.rows], indent=2) + "\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("mtp-verify").addoption("--summary-json", default=None, help="write the summary rows here as JSON")


def pytest_configure(config: pytest.Config) -> None:
    observe(counters.count_observation)
    if not is_worker(config):
        config.pluginmanager.register(Summary(config.getoption("summary_json")), "mtp-verify-summary")


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_observing(counters.count_observation)
