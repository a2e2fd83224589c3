"""The host probe's summary: which rounds ran on a slowed host, and the others' median."""

from __future__ import annotations

import pytest

from benchmarks.host_probe import SLOWED, host_probe_s, host_speed


def test_the_probe_times_real_work() -> None:
    assert 0 < host_probe_s() < 0.1


def test_rounds_with_slow_probes_are_counted_and_left_out_of_the_steady_median() -> None:
    speed = host_speed([1.0, 1.0, 3.0, 5.0], [1.0, SLOWED, SLOWED * 1.01, 2.0])
    assert (speed.rounds, speed.slowed, speed.steady_median_s) == (4, 2, 1.0)


def test_a_steady_host_leaves_every_round_in() -> None:
    assert host_speed([1.0, 2.0, 6.0], [1.0, 1.0, 1.0]).steady_median_s == 2.0


def test_unpaired_lists_are_refused() -> None:
    with pytest.raises(ValueError, match="3 round times against 2 host probes"):
        host_speed([1.0, 2.0, 3.0], [1.0, 1.0])
