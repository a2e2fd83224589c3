"""A pytest plugin for the verification job: a progress line per property as it finishes and a
summary table (property, examples, near-ties, result, time) at the end; optional JSON summary."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from properties import counters

ENV_SUMMARY_JSON = "MTP_VERIFY_SUMMARY_JSON"


@dataclass(slots=True)
class Row:
    test: str
    examples: int
    near_ties: int
    largest_near_tie: float | None
    result: str
    seconds: float


class Summary:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.started: dict[str, float] = {}
        self.total = 0

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        counters.current_test = item.nodeid
        self.started[item.nodeid] = time.perf_counter()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            result = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}[report.outcome]
            seconds = time.perf_counter() - self.started.get(report.nodeid, time.perf_counter())
            name = report.nodeid.split("::")[-1]
            row = Row(
                name,
                counters.examples[report.nodeid],
                counters.near_ties[report.nodeid],
                counters.largest_near_tie.get(report.nodeid),
                result,
                seconds,
            )
            self.rows.append(row)
            done = len(self.rows)
            print(
                f"\n[{done}/{self.total}] {result} {name}: {row.examples} examples, "
                f"{row.near_ties} near-ties, {seconds:.1f} s",
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
        path = os.environ.get(ENV_SUMMARY_JSON)
        if path:
            Path(path).write_text(json.dumps([asdict(r) for r in self.rows], indent=2) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Summary(), "mtp-verify-summary")
