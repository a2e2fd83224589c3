"""The row classes of the fully batched step (`batched.vector.sample`) classify every row exactly as the
per-row functions do: EOS hold and batched-argmax eligibility (B4, B5)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from batched.step import greedy_eligible
from batched.vector.sample import row_classes
from properties.config import RunConfig
from properties.worlds.specs import StepSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import build_world, sched_for
from reference.eos_hold import presample_hold_for
from reference.penalties import PositionKind, penalty_params_for


@given(data=st.data(), lever=st.booleans(), fast=st.booleans(), force=st.booleans())
def test_classes_are_the_per_row_functions(
    run: RunConfig, data: st.DataObject, lever: bool, fast: bool, force: bool
) -> None:
    spec: WorldSpec = data.draw(world_specs(run), label="spec")
    w = build_world(spec)
    w.sched.levers.mtp_boot_argmax = lever
    sampling = replace(w.verify_ctx.sampling, fast_greedy_grammar=fast, force_temp_zero=force)
    ctx = replace(w.verify_ctx, sampling=sampling)
    floor = w.sched.watchdog.min_reasoning_floor
    held, greedy = row_classes(w.active, floor, w.sched, ctx)
    assert held == [presample_hold_for(a, len(a.output_tokens)).any() for a in w.active]
    pens = [penalty_params_for(a, PositionKind.VERIFY, floor) for a in w.active]
    assert greedy == [greedy_eligible(a, p, w.sched, ctx) for a, p in zip(w.active, pens, strict=True)]


def test_an_empty_batch_has_no_classes() -> None:
    sched, ctx = sched_for(StepSpec())
    assert row_classes([], 0, sched, ctx) == ([], [])
