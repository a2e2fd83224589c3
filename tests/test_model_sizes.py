"""Model sizes (`--model`): the small test model by default, a serving-sized one on request."""

from __future__ import annotations

import pytest

from properties.fixed_sample import fixed_sample
from properties.run_config import ENV_MODEL, RunConfig, current
from properties.strategies import world_specs


def test_the_default_is_the_small_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_MODEL, raising=False)
    assert current().model == "small"
    for spec in fixed_sample(world_specs(RunConfig("cpu", "exact", ("float64",), 4)), 5):
        assert (spec.model.hidden, spec.model.n_heads) == (32, 2) and spec.model.vocab_size in (512, 600)


def test_the_serving_model_has_a_serving_width_and_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "serving")
    run = current()
    assert run.model == "serving"
    for spec in fixed_sample(world_specs(run), 5):
        assert (spec.model.hidden, spec.model.n_heads, spec.model.vocab_size) == (1024, 8, 129280)


def test_an_unknown_model_size_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "huge")
    with pytest.raises(ValueError, match=ENV_MODEL):
        current()
