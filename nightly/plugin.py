"""The pytest plugin of a nightly round (`-p nightly.plugin`, with `properties.summary_plugin`).

Wherever tests run (the only process, or each xdist worker) it selects this shard's tests
(`--nightly-shard`), sets each Hypothesis test's `max_examples` from the round's plan
(`--nightly-plan`) and writes every Hypothesis observability record to
`OUT/observed/round-NNN-<worker>-<pid>.jsonl`. Where results are reported (the only process, or the
xdist controller) it writes the collected tests, a record per finished test (outcome, time, the
counts the summary plugin carries, the failure text) and the round's end to
`OUT/results/round-NNN.jsonl`. Every line is written when known, so a crashed worker or a killed
round loses nothing that finished.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.internal import observability

from nightly import records
from nightly.rounds import Plan
from nightly.shard import SHARD_BY, parse_shard, select_tests
from properties.summary_plugin import counts_of, is_final, is_worker

CRASH_MARK = "crashed while running"
OBSERVED_MAX_BYTES = 256 * 2**20  # per process and round


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nightly")
    group.addoption("--nightly-out", default=None, help="the nightly output folder")
    group.addoption("--nightly-round", default=1, type=int, help="this round's number (1-based)")
    group.addoption("--nightly-plan", default=None, help="JSON file: max_examples per test for this round")
    group.addoption("--nightly-shard", default="0/1", help="i/N: this host's shard")
    group.addoption("--nightly-shard-by", default="tests", choices=SHARD_BY, help="what shards split")


class ObservationWriter:
    """Writes each observability record of this process, as it arrives, to its own file. A passing
    test case's `representation` is left empty (its `arguments` hold the same example as JSON); past
    `OBSERVED_MAX_BYTES` only failing test cases and info records are written, after one record
    saying so."""

    def __init__(self, out: Path, round_no: int) -> None:
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.round_no = round_no
        self.path = records.observed_path(out, round_no, self.worker, os.getpid())
        self.written = 0

    def __call__(self, observation: object) -> None:
        kind, status = getattr(observation, "type", None), getattr(observation, "status", None)
        passing = kind == "test_case" and status != "failed"
        if passing and self.written > OBSERVED_MAX_BYTES:
            return
        record = records.observation_record(observation, self.round_no, self.worker)
        if passing:
            record["representation"] = ""
        self.written += records.append(self.path, record)
        if self.written > OBSERVED_MAX_BYTES and passing:
            note = f"over {OBSERVED_MAX_BYTES} bytes: passing test cases are no longer written"
            records.append(self.path, {"type": "info", "title": "nightly", "content": note})


class ResultWriter:
    """The reporting side: the round's collected tests, a record per finished test, its end."""

    def __init__(self, out: Path, round_no: int) -> None:
        self.round_no = round_no
        self.path = records.results_path(out, round_no)
        self.collected = False

    def write_collected(self, nodeids: list[str]) -> None:
        if not self.collected:
            self.collected = True
            records.append(self.path, {"event": "collected", "round": self.round_no, "nodeids": nodeids})

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.write_collected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        self.write_collected(list(ids))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not (is_final(report) or report.failed):
            return
        text = report.longreprtext if report.failed else ""
        outcome = "crashed" if report.failed and CRASH_MARK in text else report.outcome
        node = getattr(report, "node", None)
        records.append(
            self.path,
            {
                "event": "test",
                "round": self.round_no,
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": outcome,
                "seconds": report.duration,
                "counts": counts_of(report),
                "failure": text,
                "worker": getattr(getattr(node, "gateway", None), "id", "main"),
            },
        )

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            records.append(
                self.path,
                {
                    "event": "test",
                    "round": self.round_no,
                    "nodeid": report.nodeid or "(collection)",
                    "when": "collect",
                    "outcome": "failed",
                    "seconds": 0.0,
                    "counts": {},
                    "failure": report.longreprtext,
                    "worker": "main",
                },
            )

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        records.append(self.path, {"event": "finished", "round": self.round_no, "exitstatus": int(exitstatus)})


def apply_plan(items: list[pytest.Item], plan: Plan) -> None:
    """Give each Hypothesis test the plan's `max_examples` on top of the loaded profile. A test with
    its own `@settings` keeps them; a test function shared by several items takes the first's."""
    done: set[int] = set()
    for item in items:
        fn = getattr(item, "obj", None)
        fn = getattr(fn, "__func__", fn)
        n = plan.for_test(item.nodeid)
        if n is None or not getattr(fn, "is_hypothesis_test", False) or id(fn) in done:
            continue
        done.add(id(fn))
        if not hasattr(fn, "_hypothesis_internal_settings_applied"):
            settings(settings.default, max_examples=n)(fn)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard = parse_shard(config.getoption("nightly_shard"), config.getoption("nightly_shard_by"))
    keep = set(select_tests([item.nodeid for item in items], shard))
    deselected = [item for item in items if item.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.nodeid in keep]
    plan_file = config.getoption("nightly_plan")
    if plan_file:
        apply_plan(items, Plan.from_json(Path(plan_file).read_text()))


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("nightly_out")
    if not out:
        return
    round_no = config.getoption("nightly_round")
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    observability.add_observability_callback(ObservationWriter(Path(out), round_no))
    if not is_worker(config):
        config.pluginmanager.register(ResultWriter(Path(out), round_no), "nightly-results")
