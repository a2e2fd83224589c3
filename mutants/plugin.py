"""A pytest plugin for mutant runs (`-p mutants.plugin`): counts the examples each test ran, notes
the example at which a test first failed, and writes one JSON row per test to the path of
`--mutants-result`, together with the file the batched step was imported from (so a run
that tested the wrong copy of the project cannot pass for a survivor); `--mutants-first` runs one
test before the rest."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis.errors import HypothesisException

CHECKED_MODULE = "batched.step"


@dataclass(slots=True)
class TestRow:
    """One test's outcome: examples run, the 1-based example that first failed (None when none
    did), a one-line reason, and seconds."""

    nodeid: str
    outcome: str
    examples: int
    failing_example: int | None
    reason: str
    seconds: float


class ExampleCounter:
    """Wraps each Hypothesis test's inner function (`test.hypothesis.inner_test`) to count calls,
    without changing which examples it draws; with `seed`, every Hypothesis test runs from that
    seed (`hypothesis.seed`), which a derandomized profile would otherwise ignore."""

    def __init__(self, path: Path, seed: int | None = None) -> None:
        self.path = path
        self.seed = seed
        self.current = ""
        self.examples: Counter[str] = Counter()
        self.first_failure: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.rows: list[TestRow] = []

    def wrap(self, fn: Any) -> bool:
        """Count the examples of Hypothesis test `fn` (once per function) under `self.current`;
        False when `fn` is not a Hypothesis test."""
        hyp = getattr(fn, "hypothesis", None)
        if hyp is None or not hasattr(hyp, "inner_test"):
            return False
        if self.seed is not None:
            hypothesis.seed(self.seed)(fn)
        if getattr(hyp.inner_test, "_mutants_counted", False):
            return True
        inner = hyp.inner_test

        # `functools.wraps` keeps the source, signature and digest Hypothesis derandomizes from, so
        # the counted test draws exactly the examples the plain one does.
        @functools.wraps(inner)
        def counted(*args: Any, **kwargs: Any) -> Any:
            test = self.current
            self.examples[test] += 1
            try:
                return inner(*args, **kwargs)
            except HypothesisException:
                raise
            except Exception:
                self.first_failure.setdefault(test, self.examples[test])
                raise

        counted._mutants_counted = True  # type: ignore[attr-defined]
        hyp.inner_test = counted
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Start the clock and the count for `item`."""
        self.current = item.nodeid
        self.started[item.nodeid] = time.perf_counter()
        fn = getattr(item, "obj", None)
        if fn is not None and not self.wrap(fn):
            self.examples[item.nodeid] = 1  # a plain test is one example

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One row per test: its call outcome, or a failure in set-up or tear-down."""
        if report.when == "call" or report.outcome == "failed":
            nodeid = report.nodeid
            failed = report.outcome == "failed"
            reason = ""
            if failed:
                crash = getattr(report.longrepr, "reprcrash", None)
                reason = (crash.message if crash is not None else str(report.longrepr)).strip().splitlines()[0][:240]
            first = self.first_failure.get(nodeid)
            if failed and first is None:
                first = max(self.examples[nodeid], 1)
            seconds = round(time.perf_counter() - self.started.get(nodeid, time.perf_counter()), 3)
            self.rows.append(TestRow(nodeid, report.outcome, self.examples[nodeid], first if failed else None, reason,
                                     seconds))  # fmt: skip

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the rows and the file `batched.step` came from."""
        loaded = getattr(sys.modules.get(CHECKED_MODULE), "__file__", None)
        tests = [asdict(r) for r in self.rows]
        payload = {"step_module_file": loaded, "rootdir": str(session.config.rootpath), "tests": tests}
        self.path.write_text(json.dumps(payload, indent=1) + "\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mutants", "the mutation runner's counting plugin")
    group.addoption("--mutants-result", default=None, metavar="PATH", help="write each test's outcome here as JSON")
    group.addoption("--mutants-seed", type=int, default=None, help="a Hypothesis seed for every test")
    group.addoption("--mutants-first", default=None, metavar="NODEID",
                    help="run this test (a case of a parametrized test too) before every other")  # fmt: skip


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--mutants-first`'s test to the front: the runner names the whole function of a last killer
    first (`mutants.order`), and pytest keeps a function's cases together, so a case that killed last
    time would otherwise wait behind its function's earlier cases (a P9 case behind four others)."""
    first = config.getoption("mutants_first")
    at = next((i for i, item in enumerate(items) if item.nodeid == first), None)
    if at is not None:
        items.insert(0, items.pop(at))


def pytest_configure(config: pytest.Config) -> None:
    """Register the counter when the runner asked for results (`--mutants-result`)."""
    path = config.getoption("mutants_result")
    if path:
        counter = ExampleCounter(Path(path), config.getoption("mutants_seed"))
        config.pluginmanager.register(counter, "mtp-mutants-counter")
