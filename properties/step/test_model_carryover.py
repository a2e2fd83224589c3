"""What an implementation's model carries from one step to the next must never change a result.

The fully batched step's model keeps state between calls, as serving engines do: captured graphs and
their static inputs, the block tables on the device (`batched.vector.table_mirror`), the last decode's
verdicts, a propose launched ahead. Real engines get exactly this wrong: a persistent buffer not
rewritten when a slot changes hands, a table edited in place that looks unchanged.

One model runs the step on world A, then takes world B's caches and sequences (`World.clone(into=)`,
as the benchmarks reuse one model) and runs B. World B is A with other cache contents and other
block ids (another cache seed: the same slots with tables as long, other blocks), its sequences'
slots rotated among them half of the time. A fresh model runs B alone. Both runs of B must leave
every sequence field and every buffer bit-equal, and B run side by side with the reference on a
fresh model must leave the world as the reference does (so that a step that does nothing, alike on
both models, does not pass)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.checks.compare import check_equivalence, seq_fields, values_equal
from properties.config import RunConfig
from properties.impl import Impl
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.worlds.aimed_worlds import world_pairs
from properties.worlds.world import World, build_world


def run_step(impl: Impl, world: World) -> None:
    impl.step(world.model, world.active, world.sched, world.idxs, world.ladder_nd, world.verify_ctx)
    if world.model.device.type == "cuda":
        torch.cuda.synchronize()


@sharded(2)
@given(data=st.data())
def test_a_model_that_ran_another_world_runs_this_one_alike(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec_a, spec_b = data.draw(world_pairs(run), label="pair")
    checked_side_by_side("model carryover: world B on a fresh model", run, spec_b, check_equivalence)
    impl = run.impl
    first = build_world(spec_a)
    first.model = impl.prepare_model(first.model)
    run_step(impl, first)
    reused = build_world(spec_b).clone(into=first.model)  # B's caches and sequences in A's model
    run_step(impl, reused)
    fresh = build_world(spec_b)
    fresh.model = impl.prepare_model(fresh.model)
    run_step(impl, fresh)
    for i, (got, want) in enumerate(zip(reused.active, fresh.active, strict=True)):
        g, w = seq_fields(got), seq_fields(want)
        bad = [k for k in g if not values_equal(g[k], w[k])]
        assert not bad, f"sequence {i} (slot {want.seq.slot_idx}): {bad} differ after a model ran another world"
    differ = reused.model.diff_state(fresh.model)
    assert not differ, f"buffers differ after a model ran another world: {differ}"
