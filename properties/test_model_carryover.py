"""What an implementation's model carries from one step to the next must never change a result.

The fully batched step's model keeps state between calls, as serving engines do: captured graphs and
their static inputs, the block tables on the device (`batched.table_mirror`), the last decode's
verdicts, a propose launched ahead. Real engines get exactly this wrong: a persistent buffer not
rewritten when a slot changes hands, a table edited in place that looks unchanged.

One model runs the step on world A, then takes world B's caches and sequences (`World.clone(into=)`,
as the benchmarks reuse one model) and runs B. World B is A with other cache contents and other
block ids (another cache seed: the same slots with tables as long, other blocks), its sequences'
slots rotated among them half of the time. A fresh model runs B alone. Both runs of B must leave
every sequence field and every buffer bit-equal."""

from __future__ import annotations

from dataclasses import replace

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.compare import seq_fields, values_equal
from properties.impl import load
from properties.run_config import current
from properties.specs import WorldSpec
from properties.strategies import world_specs
from properties.world import World, build_world

RUN = current()


@st.composite
def world_pairs(draw: st.DrawFn) -> tuple[WorldSpec, WorldSpec]:
    """World A, and world B: A's sequences with other caches and block ids, slots rotated or not."""
    a = replace(draw(world_specs(RUN)), faults=())
    seqs = a.seqs
    if draw(st.booleans()) and len(seqs) >= 2:  # each slot handed to the next sequence
        slots = [s.slot_idx for s in seqs]
        seqs = tuple(replace(s, slot_idx=slots[(i + 1) % len(seqs)]) for i, s in enumerate(seqs))
    seed = a.cache_seed + draw(st.integers(1, 2**30))  # another seed: other caches and block ids
    return a, replace(a, seqs=seqs, cache_seed=seed)


def run_step(world: World) -> None:
    load().step(world.model, world.active, world.sched, world.idxs, world.ladder_nd, world.verify_ctx)
    if world.model.device.type == "cuda":
        torch.cuda.synchronize()


@given(pair=world_pairs())
def test_a_model_that_ran_another_world_runs_this_one_alike(pair: tuple[WorldSpec, WorldSpec]) -> None:
    spec_a, spec_b = pair
    impl = load()
    first = build_world(spec_a)
    first.model = impl.prepare_model(first.model)
    run_step(first)
    reused = build_world(spec_b).clone(into=first.model)  # B's caches and sequences in A's model
    run_step(reused)
    fresh = build_world(spec_b)
    fresh.model = impl.prepare_model(fresh.model)
    run_step(fresh)
    for i, (got, want) in enumerate(zip(reused.active, fresh.active, strict=True)):
        g, w = seq_fields(got), seq_fields(want)
        bad = [k for k in g if not values_equal(g[k], w[k])]
        assert not bad, f"sequence {i} (slot {want.seq.slot_idx}): {bad} differ after a model ran another world"
    differ = reused.model.diff_state(fresh.model)
    assert not differ, f"buffers differ after a model ran another world: {differ}"
