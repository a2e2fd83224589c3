"""The pytest plugin of a nightly round (`-p nightly.plugin`), active in every process that runs
tests (the only one, or each xdist worker). It keeps this host's shard of the tests
(`nightly.spread`), gives each Hypothesis test this worker's share of the round's examples and the
database replay on the first worker only, and each test case (each case of a split property too)
its own seed, as the suite spreads a property's examples over its cases (`properties.run.shards`:
`share`, `case_seed`, `start_case`); it attaches each test's node id, worker and counts to its JUnit
test case (`results.PROPERTY`), and writes Hypothesis's observability records to a file per process
and round (`--nightly-observed`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, is_hypothesis_test, settings

from nightly.results import PROPERTY, SHARE_SKIP
from nightly.rounds import Plan
from nightly.spread import SHARD_BY, parse_shard, select_tests
from properties import counters
from properties.hypothesis_internals import observation_json, observe, own_settings, set_settings
from properties.run.gpu import worker_index
from properties.run.shards import GIVEN_SEED, case_seed, property_id, shard_examples, share

OBSERVED_MAX_BYTES = 256 * 2**20  # per process and round: an all-night run checks hundreds of thousands of examples
SLOT = pytest.StashKey["Slot"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nightly")
    group.addoption("--nightly-round", default=1, type=int, help="this round's number (1-based)")
    group.addoption("--nightly-plan", default=None, help="JSON file: max_examples per test for this round")
    group.addoption("--nightly-seed", default=None, type=int, help="the run's seed (workers' seeds derive)")
    group.addoption("--nightly-shard", default="0/1", help="i/N: this host's shard")
    group.addoption("--nightly-shard-by", default="tests", choices=SHARD_BY, help="what shards split")
    group.addoption("--nightly-observed", default=None, help="folder for Hypothesis's observability records")


def worker_slot(config: Any) -> tuple[str, int, int]:
    """(this process's xdist worker id, its number, the number of workers); ("main", 0, 1) outside
    xdist."""
    info = getattr(config, "workerinput", None)
    if info is None:
        return "main", 0, 1
    return info["workerid"], worker_index(info["workerid"]) or 0, max(1, int(info["workercount"]))


def replays_database(index: int, count: int) -> bool:
    """Whether worker `index` of `count` replays the example database (and runs the plain tests):
    the first worker of the host only, so a saved failure is replayed and shrunk once, not once per
    worker. A worker xdist starts in place of a crashed one wraps its number as `share` does."""
    return index % count == 0


def worker_settings(base: settings, examples: int, index: int, count: int) -> settings:
    """`base` with worker `index`'s share of `examples`, without the database replay past the first
    worker."""
    first = replays_database(index, count)
    phases = [p for p in base.phases if first or p != Phase.reuse]
    return settings(base, max_examples=share(examples, index, count), phases=phases)


@dataclass(slots=True, frozen=True)
class Slot:
    """Where this process runs tests: worker `index` of the host's `count`, on host (shard index)
    `host`, in round `round` of a run seeded with `seed` (None: Hypothesis's own random seeds)."""

    index: int = 0
    count: int = 1
    host: int = 0
    round: int = 1
    seed: int | None = None

    @property
    def given(self) -> str | None:
        """This worker's given seed in this round, of which each test case takes its own
        (`case_seed` of its node id), so no two workers, rounds, hosts or cases draw one stream;
        None without a run seed."""
        return None if self.seed is None else f"{self.seed}/{self.host}/{self.round}/{self.index}"


def share_test(fn: Any, planned: int | None, slot: Slot, shards: int = 1) -> bool:
    """Give Hypothesis test `fn` this worker's share of its examples (`planned`, else its own
    `@settings`' or the profile's `max_examples`); False, leaving it as it is, when the share is
    empty (Hypothesis refuses `max_examples=0`). A test split over `shards` cases
    (`properties.run.shards`) takes a case's part of `planned`, the plan of its property."""
    own = own_settings(fn)
    base = settings.default if own is None else own
    if shards > 1 and planned is not None:
        total = shard_examples(shards, planned)
    else:
        total = base.max_examples if own is not None or planned is None else planned
    if share(total, slot.index, slot.count) == 0:
        return False
    set_settings(fn, worker_settings(base, total, slot.index, slot.count))
    return True


def seed_case(item: pytest.Item, slot: Slot) -> None:
    """With a run seed, give test case `item` its own seed, `case_seed` of this worker's given seed
    (`Slot.given`) and its node id, in its stash (`properties.run.shards.GIVEN_SEED`): the suite's
    plugin seeds a Hypothesis test with it as the case starts, keeping the example database
    (`properties.run.shards.start_case`), and a state machine split by hand derives its seed from it."""
    if slot.given is not None:
        item.stash[GIVEN_SEED] = case_seed(slot.given, item.nodeid)


def apply_plan(items: list[pytest.Item], plan: Plan, slot: Slot) -> None:
    """Share out each Hypothesis test's examples (`share_test`, the plan's number of them for its
    property, `properties.run.shards.property_id`); skip with `SHARE_SKIP` a test left with no
    examples and, past the first worker, every test that is not a Hypothesis test. The cases of a
    split property share one function, which is shared out once."""
    skip = pytest.mark.skip(reason=SHARE_SKIP)
    runs: dict[int, bool] = {}
    for item in items:
        fn = getattr(item, "obj", None)
        fn = getattr(fn, "__func__", fn)
        if is_hypothesis_test(fn):
            if id(fn) not in runs:
                marker = item.get_closest_marker("shards")
                shards = int(marker.args[0]) if marker is not None else 1
                runs[id(fn)] = share_test(fn, plan.for_test(property_id(item.nodeid)), slot, shards)
            runs_here = runs[id(fn)]
        else:
            runs_here = replays_database(slot.index, slot.count)
        if not runs_here:
            item.add_marker(skip)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard = parse_shard(config.getoption("nightly_shard"), config.getoption("nightly_shard_by"))
    keep = set(select_tests([item.nodeid for item in items], shard))
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in keep])
        items[:] = [item for item in items if item.nodeid in keep]
    plan_file = config.getoption("nightly_plan")
    plan = Plan.from_json(Path(plan_file).read_text()) if plan_file else Plan()
    _, index, count = worker_slot(config)
    round_no, seed = config.getoption("nightly_round"), config.getoption("nightly_seed")
    config.stash[SLOT] = Slot(index, count, shard.index, round_no, seed)
    apply_plan(items, plan, config.stash[SLOT])


def pytest_runtest_setup(item: pytest.Item) -> None:
    seed_case(item, item.config.stash.get(SLOT, Slot()))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # On the item before its teardown report is made: pytest's JUnit XML writes that report's properties.
    record = {"nodeid": item.nodeid, "worker": worker_slot(item.config)[0], "counts": counters.snapshot(item.nodeid)}
    item.user_properties.append((PROPERTY, json.dumps(record)))


@dataclass(slots=True)
class ObservationFile:
    """An observability callback that appends each observation to `path` as Hypothesis's own file
    output does (its serializer, a line each), opening and closing the file each time so a killed
    process loses nothing delivered. A passing test case's `representation` is left empty (its
    `arguments` hold the same example); past `OBSERVED_MAX_BYTES` only failing test cases and info
    records are written, after a record saying so."""

    path: Path
    written: int = 0

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
        self.written += len(line)

    def __call__(self, observation: Any, thread_id: int) -> None:
        passing = observation.type == "test_case" and observation.status != "failed"
        if passing and self.written > OBSERVED_MAX_BYTES:
            return
        record = observation_json(observation)
        if passing:
            record["representation"] = ""
        self.write(record)
        if passing and self.written > OBSERVED_MAX_BYTES:
            self.write({"type": "info", "title": "nightly", "content": "passing test cases are no longer written"})


def pytest_configure(config: pytest.Config) -> None:
    folder = config.getoption("nightly_observed")
    if folder:
        worker = worker_slot(config)[0]
        path = Path(folder) / f"round-{config.getoption('nightly_round'):03d}-{worker}-{os.getpid()}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        observe(ObservationFile(path), all_threads=True)
