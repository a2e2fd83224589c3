"""The main job's workers: one per core on the CPU unless told otherwise; 0 or 1 runs in-process."""

from __future__ import annotations

import os

from properties.verify import workers


def test_auto_is_one_worker_per_core_on_the_cpu_and_a_count_is_taken_as_given() -> None:
    assert workers("auto", "cpu") == (os.cpu_count() or 1)
    assert workers("3", "cpu") == 3 and workers("0", "cuda") == 0
