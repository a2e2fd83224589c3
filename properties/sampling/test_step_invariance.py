"""Seed invariance of the step's own draws: a seeded request's token does not depend on its batch.

The step runs on a draw world (`properties.sampling.draw_worlds`: copies of sampled sequences, each
with its seed and output position, and twins that repeat a copy at another batch row), then on the
same copies arranged otherwise, each once:
- `layout`: the copies in other slots, so at other rows of the batch (B1 orders rows by SSM slot);
- `alone`: the world's own sequences out of the batch, which shrinks and shifts it;
- `order`: the copies before the world's own sequences in the active list;
- `group cap`: the same world on a model of another propose group cap.
Every copy must draw the same token in every arrangement, and every twin its base's, wherever the
row the step decoded for it has the same bits (always, in exact numerics: every kernel is batch
invariant there; in fast numerics only comparable rows are compared, and the report counts them).
A sampler that draws from a generator shared by the batch, keyed by row, or by the batch's first
request, fails.
"""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.config import RunConfig
from properties.impl import Impl
from properties.sampling.draw_checks import Distributions, support_faults, twin_faults
from properties.sampling.draw_specs import draw_specs
from properties.sampling.draw_worlds import base_world
from properties.sampling.step_draws import Arrangement, Draw, plan_call, run_call
from properties.worlds.specs import WorldSpec, compact

TRIPLES = 2  # triples of copies per source: 14 copies a world at most
GROUP_CAPS = st.sampled_from((1, 2, 3, 8))
SEEDS = st.integers(0, 2**63 - 1)


def examples() -> int:
    """This property's examples under the loaded profile (each runs five steps)."""
    return max(3, settings().max_examples // 4)


def differences(base: list[Draw], other: list[Draw], what: str) -> tuple[list[str], int]:
    """Copies whose token differs between two arrangements on the same row bits, and how many were
    comparable."""
    out: list[str] = []
    compared = 0
    for a, b in zip(base, other, strict=True):
        if not a.row_key or a.row_key != b.row_key:
            continue
        compared += 1
        if a.token != b.token:
            c = a.copy
            out.append(
                f"{what}: copy of seq[{c.source}] (seed {c.seed}, shift {c.shift}) drew {a.token} in slot {a.slot} "
                f"and {b.token} in slot {b.slot}, on the same row bits"
            )
    return out, compared


def arrangements(data: st.DataObject, spec: WorldSpec, copies: int) -> dict[str, Arrangement]:
    """The arrangements of the module docstring but the group cap's."""
    layout = tuple(data.draw(st.permutations(range(copies)), label="layout"))
    return {"layout": Arrangement(layout=layout), "alone": Arrangement(own=()), "order": Arrangement(copies_first=True)}


def check(impl: Impl, spec: WorldSpec, sources: tuple[int, ...], seed: int, data: st.DataObject) -> list[str]:
    """Every arrangement against the first; the lines of a report (empty: none differs)."""
    copies, roles = plan_call(sources, TRIPLES, random.Random(seed))
    base = base_world(spec, len(copies))
    first, error = run_call(impl, base, copies, roles, 0)
    if error is not None:
        return [f"the step raised: {error}"]
    found, compared = twin_faults(first)
    found += support_faults(first, Distributions())[:4]  # a step that draws nothing compares equal to itself
    runs = {name: (base, a) for name, a in arrangements(data, spec, len(copies)).items()}
    cap = data.draw(GROUP_CAPS.filter(lambda c: c != spec.model.group_cap), label="group cap")
    capped = dataclasses.replace(spec, model=dataclasses.replace(spec.model, group_cap=cap))
    runs[f"group cap {cap}"] = (base_world(capped, len(copies)), Arrangement())
    for k, (name, (world, arrangement)) in enumerate(runs.items(), start=1):
        other, error = run_call(impl, world, copies, roles, k, arrangement)
        if error is not None:
            return [f"{name}: the step raised: {error}"]
        more, n = differences(first, other, name)
        found += more
        compared += n
    if found:
        found.append(f"({compared} comparisons on equal row bits)")
    return found


@covers("P10 own draws", "B8")
@settings(max_examples=examples())
@given(data=st.data())
def test_the_steps_own_draws_do_not_depend_on_the_batch(run: RunConfig, data: st.DataObject) -> None:
    spec, sources = data.draw(draw_specs(run), label="world")
    seed = data.draw(SEEDS, label="draw seed")
    found = check(run.impl, spec, sources, seed, data)
    assert not found, "\n".join(
        [f"seed invariance of the step's own draws ({run.impl.name}):", *(f"  {x}" for x in found[:12])]
        + ["", f"sources {list(sources)}, copies' seed {seed}; mix (non-default fields; * = bootstrapped):"]
        + ["  " + x for x in compact(spec).splitlines()]
    )
