"""The `ci` samples reach every corner pair (`properties.worlds.corners`): every pair of two conditions that
one step can hold together (two gate clauses, a clause and a model limit, two limits, a limit and
the drafter kind...) is held by an example of P2's properties or of P1's mixes that runs the code
meeting both (`properties.worlds.corner_reach`), as `properties.worlds.fixed_sample` replays the samples, and no
pair listed as unreachable is held by any example.

`python -m properties.worlds.corner_reach` prints the table (`docs/corners.md`).
"""

from __future__ import annotations

import functools

import pytest

from batched.gate import can_batch_bootstrap
from properties.worlds.corner_reach import CI_EXAMPLES, CI_RUN, Reach, excluded_but_held, measure, missing
from properties.worlds.corners import all_pairs, conditions_of, exclusions, reachable_pairs, world_values
from properties.worlds.covering_worlds import targeted_worlds
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.gate_worlds import corner_worlds, dispatch_specs
from properties.worlds.specs import WorldSpec
from properties.worlds.world import base_model, sched_for


@functools.lru_cache(maxsize=1)
def reach() -> Reach:
    return measure()


def test_every_reachable_pair_is_reached() -> None:
    lost = missing(reach())
    assert not lost, f"{len(lost)} reachable pairs no ci sample reached: " + "; ".join(" · ".join(p) for p in lost)


def test_no_excluded_pair_is_held() -> None:
    """An example that holds a pair listed as unreachable shows the exclusion is wrong."""
    wrong = excluded_but_held(reach())
    assert not wrong, "pairs listed as unreachable but held: " + "; ".join(
        f"{' · '.join(p)} ({exclusions()[p]})" for p in wrong
    )


def test_pairs_are_reachable_or_excluded() -> None:
    reachable, excluded = set(reachable_pairs()), set(exclusions())
    assert reachable | excluded == set(all_pairs()) and not reachable & excluded
    assert all(exclusions().values()), "every exclusion gives its reason"


def test_covering_worlds_hold_their_targets() -> None:
    """Each world the covering strategy builds holds exactly the values it drew."""
    for t, spec in fixed_sample(targeted_worlds(CI_RUN), CI_EXAMPLES // 2):
        got = world_values(spec)
        wrong = {k: got[k] for k, v in t.values.items() if got[k] != v}
        assert not wrong, f"targets {t.values}: the world holds {wrong} instead"


@pytest.mark.parametrize("strategy", ["dispatch_specs", "corner_worlds"])
def test_gate_conditions_agree_with_the_gate(strategy: str) -> None:
    """The condition `gate open` is what the gate answers for the world's bootstrapping rows, so the
    clause conditions, which make it up, read the world as the gate does."""
    draw = dispatch_specs(CI_RUN) if strategy == "dispatch_specs" else corner_worlds(CI_RUN).map(lambda w: w[0])
    for spec in fixed_sample(draw, CI_EXAMPLES // 4):
        assert ("gate open" in conditions_of(spec)) == opens(spec), f"conditions {sorted(conditions_of(spec))}"


def opens(spec: WorldSpec) -> bool:
    sched, _ = sched_for(spec.step)
    raw = spec.step.dflash_verify_raw_argmax
    return can_batch_bootstrap(base_model(spec.model), sched, len(spec.bootstrap), raw)
