"""Spreading a test's examples over the workers of a host: shares, seeds, who replays the database,
and the settings each worker's copy of a test runs with."""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

from nightly.plugin import worker_settings
from nightly.spread import replays_database, share, worker_seed, worker_slot


@pytest.mark.parametrize(("total", "count"), [(0, 3), (1, 16), (10, 3), (48, 16), (1000, 7)])
def test_shares_add_up_and_differ_by_at_most_one(total: int, count: int) -> None:
    parts = [share(total, k, count) for k in range(count)]
    assert sum(parts) == total and max(parts) - min(parts) <= 1


def test_a_replacement_worker_takes_the_share_its_number_wraps_to() -> None:
    assert share(10, 4, 3) == share(10, 1, 3)


def test_every_worker_round_host_and_test_draws_its_own_stream() -> None:
    seeds = {worker_seed(7, h, r, k, t) for h in (0, 1) for r in (1, 2) for k in range(16) for t in ("a", "b")}
    assert len(seeds) == 2 * 2 * 16 * 2
    assert worker_seed(7, 0, 1, 3, "a") == worker_seed(7, 0, 1, 3, "a"), "a run seed gives the same streams"
    assert all(0 <= s < 2**64 for s in seeds)


def test_the_slot_comes_from_xdist_and_is_the_only_one_outside_it() -> None:
    assert worker_slot({}) == (0, 1)
    assert worker_slot({"PYTEST_XDIST_WORKER": "gw5", "PYTEST_XDIST_WORKER_COUNT": "16"}) == (5, 16)


def test_only_the_first_worker_replays_the_database() -> None:
    assert replays_database(0, 16) and not replays_database(5, 16) and replays_database(16, 16)
    base = settings(max_examples=100, phases=list(Phase))
    first, other = worker_settings(base, 100, 0, 16), worker_settings(base, 100, 5, 16)
    assert Phase.reuse in first.phases and Phase.reuse not in other.phases
    assert (first.max_examples, other.max_examples) == (7, 6)
    assert set(other.phases) == set(Phase) - {Phase.reuse}
