"""A fixed list of P1 examples: `WorldSpec`s drawn from `properties.strategies.world_specs`.

The draw is deterministic: Hypothesis runs a collecting function under `derandomize=True` (its seed
is a hash of that function, so the same Hypothesis version and strategies give the same list), with
the generate phase only and no example database. The list is what the P1 property itself meets
under a derandomized profile, and it follows the strategies whenever they change.
"""

from __future__ import annotations

import functools
import os

from properties.fixed_sample import fixed_sample
from properties.run_config import ENV_MAX_N, RunConfig
from properties.specs import WorldSpec
from properties.strategies import world_specs

P1_EXAMPLES = 50
P1_MAX_N = 8
CPU_EXACT_DTYPES = ("float64", "float32")


def p1_run_config() -> RunConfig:
    """The run configuration of the throughput measurement: CPU and exact numerics whatever device
    the session runs on, the run's largest mix (`MTP_VERIFY_MAX_N`) capped at 8."""
    max_n = int(os.environ.get(ENV_MAX_N) or P1_MAX_N)
    if max_n < 1:
        raise ValueError(f"{ENV_MAX_N}={max_n}: expected a positive integer")
    return RunConfig("cpu", "exact", CPU_EXACT_DTYPES, min(max_n, P1_MAX_N))


@functools.lru_cache(maxsize=4)
def p1_specs(count: int = P1_EXAMPLES) -> tuple[WorldSpec, ...]:
    """`count` specs drawn from `world_specs(p1_run_config())`, the same on every call and run."""
    return tuple(fixed_sample(world_specs(p1_run_config()), count))
