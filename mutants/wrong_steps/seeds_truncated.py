"""A step that keeps 32 bits of each seed.

The fully batched step on `mutants.wrong_steps.races.low_seed_bits`, declaring its noise its own and the
correct row sampler (`vector-torch`'s): `--impl mutants.wrong_steps.seeds_truncated:step`."""

from __future__ import annotations

from batched.vector.own_noise import sample_rows_torch_generators as ROW_SAMPLER
from batched.vector.step import prepare_model, step_with_noise
from mutants.wrong_steps.races import low_seed_bits

NOISE = "own"
PER_ROW_FAST_GREEDY_CALLS = False
step = step_with_noise(low_seed_bits, "step", __doc__.splitlines()[0])
__all__ = ["NOISE", "PER_ROW_FAST_GREEDY_CALLS", "ROW_SAMPLER", "prepare_model", "step"]
