"""Seed invariance of the declared row sampler: a seeded request's token does not depend on its batch.
Alone, at another row, beside other requests, in a batch of another size: the same token, exactly.

The fast path of `test_step_invariance` for an implementation that declares its step's sampler
(`Impl.sampler`; its step's tokens are held to it, `properties.sides.own_noise`), on rows with
exact ties within and across rows; skipped for one that declares none. The reference's own sampler
is held to the same claim by the suite's self test (`properties/self_tests/test_reference_sampler.py`).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.strategies import world_specs
from properties.worlds.world import build_world
from reference.row_request import RowRequest, RowSampler, request_for
from reference.sampling import SamplingError


def rows_for(world_seed: int, m: int, vocab: int, device: str) -> torch.Tensor:
    """[m, V] logits on a grid of 1/4 (exact ties within and across rows), some rows repeated."""
    g = torch.Generator().manual_seed(world_seed)
    rows = torch.round(torch.randn(m, vocab, generator=g, dtype=torch.float64) * 8) / 4
    if m > 1:
        rows[m - 1] = rows[0]  # two requests on one row: their tokens may differ only by their seeds
    return rows.to(torch.float32).to(device)


def tokens(sampler: RowSampler, rows: torch.Tensor, reqs: list[RowRequest]) -> list[int | str]:
    """Each row's token, or its refusal's text (refusals must be batch-invariant too)."""
    return [str(t) if isinstance(t, SamplingError) else int(t) for t in sampler(rows, reqs)]


@given(data=st.data())
def test_a_seeded_token_does_not_depend_on_its_batch(run: RunConfig, data: st.DataObject) -> None:
    sampler = run.impl.sampler
    if sampler is None:
        pytest.skip("no declared row sampler: the step's own draws are test_step_invariance's")
    check_batch_invariance(sampler, run, data)


def check_batch_invariance(sampler: RowSampler, run: RunConfig, data: st.DataObject) -> None:
    """One example of the property on `sampler`; AssertionError naming the request that moved."""
    spec = data.draw(world_specs(run, min_n=2), label="spec")
    world = build_world(spec, spec.model.ref_device)
    floor, sampling = world.sched.watchdog.min_reasoning_floor, world.verify_ctx.sampling
    reqs = [request_for(a, floor, sampling) for a in world.active]
    rows = rows_for(
        data.draw(st.integers(0, 2**31 - 1), label="rows seed"),
        len(reqs),
        world.model.cfg.vocab_size,
        spec.model.device,
    )
    batch = tokens(sampler, rows, reqs)
    order = data.draw(st.permutations(range(len(reqs))), label="order")
    extra = data.draw(st.integers(1, len(reqs)), label="extra rows")
    for i, req in enumerate(reqs):
        alone = tokens(sampler, rows[i : i + 1], [req])[0]
        assert alone == batch[i], (
            f"request {i} (seed {req.seed}, position {req.position}): {batch[i]} in the batch, {alone} alone"
        )
    moved = tokens(sampler, rows[list(order)], [reqs[j] for j in order])
    for new, old in enumerate(order):
        assert moved[new] == batch[old], (
            f"request {old} (seed {reqs[old].seed}): {batch[old]} at row {old}, {moved[new]} at row {new} ({order})"
        )
    grown = tokens(sampler, torch.cat([rows[-extra:], rows]), reqs[-extra:] + reqs)
    assert grown[extra:] == batch, f"a batch grown by {extra} rows in front: {grown[extra:]} instead of {batch}"
