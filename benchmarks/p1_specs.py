"""A fixed list of P1 examples: `WorldSpec`s drawn from `properties.strategies.world_specs`.

The draw is deterministic: Hypothesis runs a collecting function under `derandomize=True` (its seed
is a hash of that function, so the same Hypothesis version and strategies give the same list), with
the generate phase only and no example database. The list is what the P1 property itself meets
under a derandomized profile, and it follows the strategies whenever they change.
"""

from __future__ import annotations

import functools

from properties.config import RunConfig
from properties.fixed_sample import fixed_sample
from properties.specs import WorldSpec
from properties.strategies import world_specs

P1_EXAMPLES = 50
P1_MAX_N = 8
CPU_EXACT_DTYPES = ("float64", "float32")


def p1_run_config() -> RunConfig:
    """The run configuration of the throughput measurement: CPU and exact numerics at mixes of up to
    8, whatever device the session runs on."""
    return RunConfig("cpu", "exact", CPU_EXACT_DTYPES, P1_MAX_N)


@functools.lru_cache(maxsize=4)
def p1_specs(count: int = P1_EXAMPLES) -> tuple[WorldSpec, ...]:
    """`count` specs drawn from `world_specs(p1_run_config())`, the same on every call and run."""
    return tuple(fixed_sample(world_specs(p1_run_config()), count))
