"""The suite's pytest plugin (its `pytest11` entry point, so `pip install` is all an engine's
repository needs): the options, the Hypothesis profiles, the run's configuration as the `run`
fixture, the near-tie budget, GPU pinning under pytest-xdist, and the skip of GPU-only tests
where no GPU is visible.

Options (each also `MTP_VERIFY_<OPTION>` in the environment; `properties.config` reads both):
`--device`, `--numerics`, `--dtype`, `--max-n`, `--model`, `--reference-device`, `--impl`,
`--forced-budget`, `--replays`, `--threads`, and for the example database `--example-db` (a
directory or a `redis://` URL) and `--example-db-dir` (this host's copy).

Profiles: `dev` (quick, random; the default), `ci` (deterministic, bounded, no database; the
default where `CI` is set: it replaces Hypothesis's own `ci` on purpose, with `print_blob`),
`nightly` (random, many examples, the example database), `gpu` (nightly-sized), `mutants` (`ci`
with 60 examples and no shrinking, for the mutation runner), `power` (`ci` without shrinking: the
same examples, so a failure at the same example, for `python -m mutants.power`), `quick` (`ci` with
4 examples a property and no shrinking: a smoke run of every test, e.g. an installation's check,
`tests/test_plugin_install.py`). `dev` runs replay what the nightly database holds without writing
to it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, Verbosity, settings

from properties import counters
from properties.checks.forced_budget import over_budget
from properties.config import OPTION_TABLE, OPTIONS, RunConfig, option_or_env
from properties.run.databases import developer_database, nightly_database
from properties.run.gpu import pinned_device
from properties.run.shard_budget import COUNTS_PROPERTY as BUDGET_COUNTS
from properties.run.shard_budget import ShardBudget
from properties.run.shards import property_of, start_case

RUN_KEY = pytest.StashKey[RunConfig]()
SLOW_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
QUICK_EXAMPLES = 4  # the `quick` profile's examples a property: a smoke run of every test
# The plugin's own options besides the suite's (`properties.config.OPTION_TABLE`): the example database.
DATABASE_HELP = {
    "example_db": "the nightly example database: a directory or a redis:// URL (default .hypothesis/nightly)",
    "example_db_dir": "this host's copy of a Redis example database (default .hypothesis/nightly)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suite's options, from the table every command reads (`properties.config.OPTION_TABLE`: flag,
    choices, type and help, each None where not given so that the environment applies), as `mtp_<name>`,
    then the example database's."""
    group = parser.getgroup("mtp-verify", "the batched MTP bootstrap verification")
    for opt in OPTION_TABLE:
        group.addoption(opt.flag, dest=f"mtp_{opt.name}", **opt.arguments())
    for name, help_ in DATABASE_HELP.items():
        group.addoption(f"--{name.replace('_', '-')}", dest=f"mtp_{name}", default=None, help=help_)


def register_profiles(config: pytest.Config) -> None:
    """The suite's profiles (module docstring), their databases from the options or environment."""
    given = {name: config.getoption(f"mtp_{name}") for name in ("example_db", "example_db_dir")}
    local = Path(option_or_env("example_db_dir", given, os.environ) or Path(".hypothesis") / "nightly")
    nightly_db = nightly_database(option_or_env("example_db", given, os.environ), local)
    settings.register_profile(
        "dev",
        max_examples=30,
        deadline=None,
        database=developer_database(Path(".hypothesis") / "examples", nightly_db),
        suppress_health_check=SLOW_CHECKS,
    )
    settings.register_profile(
        "ci",
        max_examples=100,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=SLOW_CHECKS,
    )
    settings.register_profile(
        "nightly",
        max_examples=2000,
        deadline=None,
        database=nightly_db,
        print_blob=True,
        verbosity=Verbosity.normal,
        phases=list(Phase),
        suppress_health_check=SLOW_CHECKS,
    )
    settings.register_profile("gpu", parent=settings.get_profile("nightly"), max_examples=5000)
    settings.register_profile(
        "mutants",
        parent=settings.get_profile("ci"),
        max_examples=60,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )
    settings.register_profile(
        "power", parent=settings.get_profile("ci"), phases=[p for p in Phase if p not in (Phase.shrink, Phase.explain)]
    )
    settings.register_profile(
        "quick",
        parent=settings.get_profile("ci"),
        max_examples=QUICK_EXAMPLES,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Build the run's configuration once, register the profiles (before Hypothesis's own plugin
    loads the one `--hypothesis-profile` names) and load the default one where none is named."""
    register_profiles(config)
    if not config.getoption("hypothesis_profile", None):
        settings.load_profile(option_or_env("profile", {}, os.environ) or ("ci" if os.environ.get("CI") else "dev"))
    run = RunConfig.build({name: config.getoption(f"mtp_{name}") for name in OPTIONS}, os.environ)
    run.impl  # noqa: B018  fail early, with a clear message, on a bad --impl
    config.stash[RUN_KEY] = pinned(run)
    if not hasattr(config, "workerinput"):  # the process that reports: the only one, or xdist's controller
        config.pluginmanager.register(ShardBudget(run.forced_budget), "mtp-verify-shard-budget")
    torch.set_num_threads(run.threads)
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")
    config.addinivalue_line("markers", "slow: long-running; skipped under the ci profile unless asked for")
    config.addinivalue_line("markers", "shards(n): a property's examples split over n cases (properties.run.shards)")
    config.addinivalue_line(
        "markers", "forces_decisions: forces decisions on purpose (exempt from the near-tie budget)"
    )
    config.addinivalue_line(
        "markers", "self_test: checks the suite's own spec or parts, whatever --impl names (properties/self_tests/)"
    )


def pinned(run: RunConfig) -> RunConfig:
    """Under pytest-xdist with `cuda` asked for and GPUs visible, the configuration of this worker,
    on a GPU of its own (`properties.run.gpu.pinned_device`)."""
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device = pinned_device(
        run.device, os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_TESTRUNUID"), n_gpus
    )
    if device is None:
        return run
    torch.cuda.set_device(device)
    return run.with_device(device)


@pytest.fixture(scope="session")
def run(request: pytest.FixtureRequest) -> RunConfig:
    """This run's configuration (`properties.config.RunConfig`)."""
    return request.config.stash[RUN_KEY]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not a name or parameter id saying "gpu"
            item.add_marker(skip)


@pytest.hookimpl
def pytest_runtest_setup(item: pytest.Item) -> None:
    counters.current_test = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """The near-tie budget: a test whose side-by-side runs forced more than the budget's share of
    the reference's decisions fails (`properties.checks.forced_budget`); a shard case carries its
    counts to the reporting process instead, which holds them with its property's other cases
    (`properties.run.shard_budget`)."""
    report = yield
    if report.when != "call" or item.get_closest_marker("forces_decisions") is not None:
        return report
    forced, decisions = counters.near_ties[item.nodeid], counters.decisions[item.nodeid]
    if property_of(item.nodeid) is not None:  # a shard case: held with its property's other cases
        report.user_properties.append((BUDGET_COUNTS, json.dumps([forced, decisions])))
        return report
    why = over_budget(forced, decisions, item.config.stash[RUN_KEY].forced_budget)
    if report.passed and why is not None:
        report.outcome = "failed"
        report.longrepr = why
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Each case its seed: a runner's (the nightly's), or under `--hypothesis-seed` a split property's
    case its own (`properties.run.shards.start_case`)."""
    start_case(item)
