"""P2 at the gate's passing corner: through the seed's dispatch with the implementation under test as
its batched step, a world where every gate clause holds runs the implementation alone, and one where
a single clause of G1-G7 is violated at its boundary (one sequence, a dispatch cap of 1, a stash one
row short) runs the per-sequence loop alone (G8); either way the world must equal the reference's.
`properties.worlds.gate_worlds.corner_worlds` opens the gate in seven worlds of sixteen, so that a wrong
implementation meets the worlds it must bootstrap.

The gate's clauses alone (G1-G7) are the suite's own code, checked in `properties/self_tests/`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.step.dispatch_check import check_dispatch, implementation_dispatch
from properties.worlds.gate_worlds import corner_worlds


@covers("P2 gate and dispatch", "G8")
@sharded(3)
@given(data=st.data())
def test_dispatch_at_the_gate_corner(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec, clause = data.draw(corner_worlds(run), label="world")
    impl, raw, open_gate = run.impl, clause == "G2", clause is None
    dispatch, why = implementation_dispatch(impl), f"clause {clause or 'none'} violated"
    check_dispatch("P2 dispatch at the gate corner", run, spec, dispatch, impl, raw, open_gate, why)
