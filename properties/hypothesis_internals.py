"""The Hypothesis internals the suite and its runners use, in one place: each is here because
Hypothesis has no public API for what it does. Hypothesis is pinned exactly in `pyproject.toml`
for them, and `tests/test_hypothesis_internals.py` fails when the installed version is another,
naming each internal in `INTERNALS` to re-check against the new version's source before the pin
moves.

Observability (`add_observability_callback`, `remove_observability_callback`,
`OBSERVABILITY_COLLECT_COVERAGE`) is documented only on Hypothesis's low-level reference page, which
is outside its deprecation policy ("we might make breaking changes in minor or patch releases"); the
others are private. Everything else the suite takes from Hypothesis is its public API
(`hypothesis.seed`, `settings`, `is_hypothesis_test`, `test.hypothesis.inner_test`, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import settings
from hypothesis.internal import observability
from hypothesis.internal.conjecture.providers import HypothesisProvider
from hypothesis.strategies._internal.utils import to_jsonable

# Each internal this module uses, and what it is used for.
INTERNALS: dict[str, str] = {
    "hypothesis.internal.observability.add_observability_callback": "count examples, write the nightly's records",
    "hypothesis.internal.observability.remove_observability_callback": "stop counting at the end of a session",
    "hypothesis.internal.observability.OBSERVABILITY_COLLECT_COVERAGE": "observe without line coverage (slow)",
    "hypothesis.strategies._internal.utils.to_jsonable": "an observation as Hypothesis's own files write it",
    "hypothesis.internal.conjecture.providers.HypothesisProvider._maybe_draw_constant": (
        "a fixed sample free of the constants Hypothesis harvests from the modules imported so far"
    ),
    "test._hypothesis_internal_use_settings": "a worker's share of a test's examples, after its @settings",
    "test._hypothesis_internal_settings_applied": "whether a test has an @settings of its own",
    "test._hypothesis_internal_use_seed": "a seed that keeps the example database (@seed turns it off)",
}

Callback = Callable[..., None]


def observe(callback: Callback, *, all_threads: bool = False) -> None:
    """Call `callback` with every observability record from now on (with `all_threads`, records of
    every thread, the thread id as a second argument), without Hypothesis's line coverage."""
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    observability.add_observability_callback(callback, all_threads=all_threads)


def stop_observing(callback: Callback) -> None:
    """No more records for `callback` (nothing happens when it gets none)."""
    observability.remove_observability_callback(callback)


def observation_json(observation: Any) -> Any:
    """`observation` as Hypothesis's own observability files write it (JSON-serialisable)."""
    return to_jsonable(observation, avoid_realization=False)


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Within: Hypothesis draws none of the constants it mixes into its draws from the modules
    imported so far (so which modules a session imported does not change a derandomized draw)."""
    with mock.patch.object(HypothesisProvider, "_maybe_draw_constant", lambda *_a, **_k: None):
        yield


def own_settings(test: Any) -> settings | None:
    """The settings of Hypothesis test `test`'s own `@settings` (the latest given to it by
    `set_settings` too); None when it has none, and runs under the loaded profile."""
    applied = getattr(test, "_hypothesis_internal_settings_applied", False)
    return test._hypothesis_internal_use_settings if applied else None


def set_settings(test: Any, new: settings) -> None:
    """Run Hypothesis test `test` under `new` from now on, over any `@settings` of its own."""
    test._hypothesis_internal_use_settings = new
    test._hypothesis_internal_settings_applied = True


def seed_keeping_database(test: Any, seed: int) -> None:
    """Seed Hypothesis test (or state machine) `test` with `seed` for its next runs, as
    `hypothesis.seed` does, keeping its example database (`hypothesis.seed`, like
    `--hypothesis-seed`, turns it off)."""
    test._hypothesis_internal_use_seed = seed


def seed_of(test: Any) -> object:
    """The seed `test` runs from (`hypothesis.seed` or `seed_keeping_database`); None when none."""
    return getattr(test, "_hypothesis_internal_use_seed", None)
