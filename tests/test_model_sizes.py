"""Model sizes (`--model`): the small test model by default, a serving-sized one on request."""

from __future__ import annotations

import pytest

from properties.config import RunConfig
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.strategies import world_specs


def test_the_default_is_the_small_model() -> None:
    assert RunConfig.build({}, {}).model == "small"
    for spec in fixed_sample(world_specs(RunConfig("cpu", "exact", ("float64",), 4)), 5):
        assert (spec.model.hidden, spec.model.n_heads) == (32, 2) and spec.model.vocab_size in (512, 601)


@pytest.mark.parametrize("source", ["option", "environment"])
def test_the_serving_model_has_a_serving_width_and_vocabulary(source: str) -> None:
    options, env = ({"model": "serving"}, {}) if source == "option" else ({}, {"MTP_VERIFY_MODEL": "serving"})
    run = RunConfig.build(options, env)
    assert run.model == "serving"
    for spec in fixed_sample(world_specs(run), 5):
        assert (spec.model.hidden, spec.model.n_heads, spec.model.vocab_size) == (1024, 8, 129280)


def test_an_unknown_model_size_is_named() -> None:
    with pytest.raises(ValueError, match="MTP_VERIFY_MODEL"):
        RunConfig.build({}, {"MTP_VERIFY_MODEL": "huge"})
