"""Spreading a round: every worker's share of a test's examples, its seeds, who replays the
database, and each host's shard of the tests (`nightly.plugin` on `properties.run.shards`,
`nightly.spread`)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from nightly.plugin import Slot, apply_plan, replays_database, seed_case, worker_settings, worker_slot
from nightly.rounds import Plan
from nightly.spread import Shard, parse_shard, select_tests
from properties.hypothesis_internals import own_settings, seed_of
from properties.run import shards
from properties.run.shards import GIVEN_SEED, case_seed, shard_examples, shard_ids, sharded, share, start_case

NODEIDS = [f"properties/test_p{i}.py::test_{c}" for i in range(1, 9) for c in "ab"]
OPTIONS = SimpleNamespace(getoption=lambda name, default=None: default)  # a pytest config of no options


@pytest.fixture(autouse=True)
def running(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed of the case running now, as the tests leave it, kept from the tests that follow."""
    monkeypatch.setattr(shards, "RUNNING", shards.Running())


def worker_seed(run_seed: int, host: int, round_no: int, index: int, nodeid: str) -> int:
    """The seed of test case `nodeid` on worker `index` of `host` in round `round_no` of a run."""
    return case_seed(Slot(index, 16, host, round_no, run_seed).given, nodeid)


@pytest.mark.parametrize(("total", "count"), [(0, 3), (1, 16), (10, 3), (48, 16), (1000, 7)])
def test_shares_add_up_and_differ_by_at_most_one(total: int, count: int) -> None:
    parts = [share(total, k, count) for k in range(count)]
    assert sum(parts) == total and max(parts) - min(parts) <= 1
    assert share(total, count + 1, count) == parts[1], "a replacement worker takes the share its number wraps to"


def test_every_worker_round_host_and_test_draws_its_own_stream() -> None:
    seeds = {worker_seed(7, h, r, k, t) for h in (0, 1) for r in (1, 2) for k in range(16) for t in ("a", "b")}
    assert len(seeds) == 2 * 2 * 16 * 2 and all(0 <= s < 2**64 for s in seeds)
    assert worker_seed(7, 0, 1, 3, "a") == worker_seed(7, 0, 1, 3, "a"), "a run seed gives the same streams"
    assert Slot().given is None, "no run seed: Hypothesis's own random seeds"


def test_the_slot_comes_from_xdist_and_is_the_only_one_outside_it() -> None:
    assert worker_slot(SimpleNamespace()) == ("main", 0, 1)
    assert worker_slot(SimpleNamespace(workerinput={"workerid": "gw5", "workercount": 16})) == ("gw5", 5, 16)


def test_only_the_first_worker_replays_the_database() -> None:
    assert replays_database(0, 16) and not replays_database(5, 16) and replays_database(16, 16)
    base = settings(max_examples=100, phases=list(Phase))
    first, other = worker_settings(base, 100, 0, 16), worker_settings(base, 100, 5, 16)
    assert set(first.phases) == set(Phase) and set(other.phases) == set(Phase) - {Phase.reuse}
    assert (first.max_examples, other.max_examples) == (7, 6)


def fake_items(*tests: tuple[str, object]) -> list[SimpleNamespace]:
    """Pytest items of the (node id, function) pairs `tests`, their markers the functions' own."""
    items = [
        SimpleNamespace(obj=fn, nodeid=nodeid, marks=list(getattr(fn, "pytestmark", [])), stash={}, config=OPTIONS)
        for nodeid, fn in tests
    ]
    for item in items:
        item.add_marker = item.marks.append
        item.get_closest_marker = lambda name, item=item: next((m for m in item.marks if m.name == name), None)
    return items


def planned(examples: int, slot: Slot) -> list[SimpleNamespace]:
    """A Hypothesis test and a plain one as pytest items, after `apply_plan` and, as each starts,
    `seed_case` and the suite's `start_case`."""

    @given(st.integers())
    def prop(x: int) -> None:
        pass

    items = fake_items(("m::prop", prop), ("m::plain", lambda: None))
    apply_plan(items, Plan(default=examples), slot)  # type: ignore[arg-type]
    for item in items:
        seed_case(item, slot)  # type: ignore[arg-type]
        start_case(item)  # type: ignore[arg-type]
    return items


def test_each_worker_runs_its_share_from_its_own_seed_and_the_first_runs_the_plain_tests() -> None:
    prop, plain = planned(3, Slot(index=0, count=2, host=1, round=2, seed=7))
    assert (prop.marks, plain.marks) == ([], [])
    assert own_settings(prop.obj).max_examples == 2
    assert seed_of(prop.obj) == worker_seed(7, 1, 2, 0, "m::prop")
    assert prop.stash[GIVEN_SEED] == seed_of(prop.obj)
    assert plain.stash[GIVEN_SEED] == worker_seed(7, 1, 2, 0, "m::plain"), "for a state machine split by hand"
    prop, plain = planned(1, Slot(index=1, count=2))
    assert len(prop.marks) == len(plain.marks) == 1, "no examples left for the second worker, nor plain tests"
    prop, _ = planned(0, Slot())
    assert len(prop.marks) == 1, "a plan of no examples runs none"


def test_parse_shard_accepts_i_of_n_and_refuses_the_rest() -> None:
    assert parse_shard(" 2 / 4 ", "seeds") == Shard(2, 4, "seeds")
    for bad in ("4/4", "1/0", "-1/3", "1", "a/b"):
        with pytest.raises(ValueError, match="expected i/N"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="shard-by"):
        parse_shard("0/2", "hosts")


@pytest.mark.parametrize("count", [1, 2, 3, 5, 16, 40])
def test_test_shards_are_disjoint_even_and_cover_every_test(count: int) -> None:
    shards = [select_tests(NODEIDS, Shard(i, count)) for i in range(count)]
    flat = [n for s in shards for n in s]
    assert sorted(flat) == sorted(NODEIDS) and len(set(flat)) == len(flat)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    assert shards[0] == [n for n in NODEIDS if n in shards[0]], "the given order is kept"
    assert set(select_tests(list(reversed(NODEIDS)), Shard(0, count))) == set(shards[0]), "and does not matter"


def test_seed_shards_run_every_test() -> None:
    assert all(select_tests(NODEIDS, Shard(i, 4, "seeds")) == NODEIDS for i in range(4))


def test_a_split_propertys_cases_run_on_one_host() -> None:
    split = [f"properties/test_p9.py::test_p9[{k}]" for k in shard_ids(6)]
    shards_of = [select_tests(NODEIDS + split, Shard(i, 5)) for i in range(5)]
    assert [len(set(split) & set(s)) for s in shards_of].count(len(split)) == 1, "all on one host"
    assert all(len(set(split) & set(s)) in (0, len(split)) for s in shards_of), "none on another"
    assert sorted(n for s in shards_of for n in s) == sorted(NODEIDS + split)


def test_a_split_property_takes_its_propertys_plan_dealt_over_its_cases() -> None:
    @sharded(3)
    @given(x=st.integers())
    def prop(shard: int, x: int) -> None:
        pass

    items = fake_items(*((f"m.py::prop[{k}]", prop) for k in shard_ids(3)))
    apply_plan(items, Plan(default=1, tests={"m.py::prop": 30}), Slot())  # type: ignore[arg-type]
    assert own_settings(prop).max_examples == shard_examples(3, 30) == 11


def drawn_by_cases(run_seed: int) -> list[list[bytes]]:
    """The examples each of the three cases of a split property draws in a round of one worker with
    `run_seed`, each case seeded as it starts (`seed_case`), as the nightly's pytest hooks do."""

    @sharded(3)
    @given(x=st.binary(min_size=16, max_size=16))
    def prop(shard: int, x: bytes, out: list[bytes]) -> None:
        out.append(x)

    slot = Slot(seed=run_seed)
    items = fake_items(*((f"m.py::prop[{k}]", prop) for k in shard_ids(3)))
    apply_plan(items, Plan(default=12), slot)  # type: ignore[arg-type]
    database = own_settings(prop).database
    drawn: list[list[bytes]] = []
    for shard, item in enumerate(items):
        seed_case(item, slot)  # type: ignore[arg-type]
        start_case(item)  # type: ignore[arg-type]
        drawn.append([])
        item.obj(shard=shard, out=drawn[-1])
        assert own_settings(prop).database is database, "the workers' database is kept"
    return drawn


def test_each_case_of_a_split_property_draws_its_own_stream_and_the_same_again(tmp_path: Path) -> None:
    previous = settings.get_current_profile_name()
    settings.register_profile("nightly-spread-cases", database=DirectoryBasedExampleDatabase(tmp_path))
    settings.load_profile("nightly-spread-cases")
    try:
        first, again, other = drawn_by_cases(7), drawn_by_cases(7), drawn_by_cases(8)
    finally:
        settings.load_profile(previous)
    assert [len(d) for d in first] == [5, 5, 5], "each case its part of the plan (one more past the first)"
    for a, b in combinations(range(3), 2):
        shared = set(first[a]) & set(first[b])
        assert shared <= {bytes(16)}, f"cases {a} and {b} drew {len(shared)} same examples beyond the simplest"
    assert first == again, "a run seed gives the same streams again"
    assert first != other, "another run seed, other streams"
