"""A step that cuts at the request's temperature but draws at temperature 1.

The fully batched step on `mutants.wrong_steps.races.unit_temperature`, declaring its noise its own and the
correct row sampler (`vector-torch`'s): `--impl mutants.wrong_steps.temperature_one:step`."""

from __future__ import annotations

from batched.vector.own_noise import sample_rows_torch_generators as ROW_SAMPLER
from batched.vector.step import prepare_model, step_with_noise
from mutants.wrong_steps.races import unit_temperature

NOISE = "own"
PER_ROW_FAST_GREEDY_CALLS = False
step = step_with_noise(unit_temperature, "step", __doc__.splitlines()[0])
__all__ = ["NOISE", "PER_ROW_FAST_GREEDY_CALLS", "ROW_SAMPLER", "prepare_model", "step"]
