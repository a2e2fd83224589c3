"""The pytest plugin of a nightly round (`-p nightly.plugin`, with `properties.summary_plugin`).

Wherever tests run (the only process, or each xdist worker) it selects this shard's tests
(`--nightly-shard`), gives each Hypothesis test this worker's share of the round's `max_examples`
(`--nightly-plan`, `nightly.spread`) and its own seed (`--nightly-seed`), lets only the first worker
replay the example database, and writes every Hypothesis observability record to
`OUT/observed/round-NNN-<worker>-<pid>.jsonl`. Where results are reported (the only process, or the
xdist controller) it writes the collected tests, a record per finished test (outcome, time, the
counts the summary plugin carries, the failure text) and the round's end to
`OUT/results/round-NNN.jsonl` (a worker that skipped a test because it was not its share writes a
`share` record instead). Every line is written when known, so a crashed worker or a killed round
loses nothing that finished.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.internal import observability

from nightly import records
from nightly.rounds import Plan
from nightly.shard import SHARD_BY, parse_shard, select_tests
from nightly.spread import SHARE_SKIP, replays_database, share, worker_seed, worker_slot
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
    group.addoption("--nightly-seed", default=None, type=int, help="the run's seed (workers' seeds derive)")


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
        node = getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", "main")
        if is_share_skip(report):
            records.append(
                self.path, {"event": "share", "round": self.round_no, "nodeid": report.nodeid, "worker": worker}
            )
            return
        text = report.longreprtext if report.failed else ""
        outcome = "crashed" if report.failed and CRASH_MARK in text else report.outcome
        records.append(
            self.path,
            {
                "event": "test",
                "round": self.round_no,
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": outcome,
                "seconds": report.duration,
                "start": getattr(report, "start", None),
                "stop": getattr(report, "stop", None),
                "counts": counts_of(report),
                "failure": text,
                "worker": worker,
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


def is_share_skip(report: pytest.TestReport) -> bool:
    """True for a report of a test this worker skipped because it was another worker's share."""
    return bool(report.skipped) and SHARE_SKIP in str(report.longrepr)


def worker_settings(base: settings, examples: int, index: int, count: int) -> settings:
    """`base` with this worker's share of `examples` and, past the first worker, without replaying
    the example database."""
    phases = list(base.phases) if replays_database(index, count) else [p for p in base.phases if p != Phase.reuse]
    return settings(base, max_examples=share(examples, index, count), phases=phases)


def apply_plan(
    items: list[pytest.Item], plan: Plan, round_no: int = 1, run_seed: int | None = None, host: int = 0
) -> None:
    """Give each Hypothesis test this worker's share of its examples and, with `run_seed`, its own
    seed. The examples are the plan's `max_examples` on top of the loaded profile (the profile's own
    when the plan has none); a test with its own `@settings` keeps them, its `max_examples` spread
    the same way. A test with no examples in this worker's share, and a test that is not a
    Hypothesis test on any worker but the first, is skipped with `SHARE_SKIP`. A test function
    shared by several items takes the first's plan."""
    index, count = worker_slot()
    skip = pytest.mark.skip(reason=SHARE_SKIP)
    done: dict[int, bool] = {}
    for item in items:
        fn = getattr(item, "obj", None)
        fn = getattr(fn, "__func__", fn)
        if not getattr(fn, "is_hypothesis_test", False):
            if not replays_database(index, count):
                item.add_marker(skip)
            continue
        if id(fn) not in done:
            own = getattr(fn, "_hypothesis_internal_settings_applied", False)
            base = fn._hypothesis_internal_use_settings if own else settings.default
            total = None if own else plan.for_test(item.nodeid)
            total = base.max_examples if total is None else total
            fn._hypothesis_internal_use_settings = worker_settings(base, total, index, count)
            fn._hypothesis_internal_settings_applied = True
            done[id(fn)] = share(total, index, count) > 0
            if run_seed is not None:
                # What `@seed` sets, without the `database=None` that `@seed` adds: the workers
                # share the example database.
                fn._hypothesis_internal_use_seed = worker_seed(run_seed, host, round_no, index, item.nodeid)
        if not done[id(fn)]:
            item.add_marker(skip)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard = parse_shard(config.getoption("nightly_shard"), config.getoption("nightly_shard_by"))
    keep = set(select_tests([item.nodeid for item in items], shard))
    deselected = [item for item in items if item.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if item.nodeid in keep]
    plan_file = config.getoption("nightly_plan")
    plan = Plan.from_json(Path(plan_file).read_text()) if plan_file else Plan()
    if plan_file or worker_slot()[1] > 1:
        apply_plan(items, plan, config.getoption("nightly_round"), config.getoption("nightly_seed"), shard.index)


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("nightly_out")
    if not out:
        return
    round_no = config.getoption("nightly_round")
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    observability.add_observability_callback(ObservationWriter(Path(out), round_no))
    if not is_worker(config):
        config.pluginmanager.register(ResultWriter(Path(out), round_no), "nightly-results")
