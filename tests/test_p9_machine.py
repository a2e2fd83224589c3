"""P9's state machine has no run of its own: the class fails at once without one, and `machine(run)`
makes the class of that run (so no test or tool checks another run's implementation than the one
it was given)."""

from __future__ import annotations

import dataclasses

import pytest

from properties.config import RunConfig
from properties.generations import test_p9_generations as p9


def test_a_machine_without_its_run_fails_loudly() -> None:
    assert "run" not in vars(p9.P9Generations), "P9Generations must not carry a default RunConfig"
    with pytest.raises(TypeError, match="machine\\(run\\)"):
        p9.P9Generations()


def test_machine_carries_the_run_it_is_given() -> None:
    run = dataclasses.replace(RunConfig(), impl_name="vector", max_n=5)
    cls = p9.machine(run)
    assert cls.run is run and cls().run.impl_name == "vector"
