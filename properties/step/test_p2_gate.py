"""P2: the dispatch runs the implementation under test when the gate holds and the per-sequence loop
otherwise (G8): the seed's dispatch with the implementation's step as its batched step, on worlds
where every gate clause blocks or holds and every model limit is reached or not
(`properties.worlds.gate_worlds.dispatch_specs`); the world it leaves must equal the reference's.

The gate itself (G1-G7) is the suite's own code, checked with the literal dispatch in
`properties/self_tests/`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.step.dispatch_check import check_dispatch, gate_of, implementation_dispatch
from properties.worlds.gate_worlds import dispatch_specs
from properties.worlds.specs import WorldSpec


@covers("P2 gate and dispatch", "G8")
@sharded(2)
@given(data=st.data())
def test_dispatch_follows_gate(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(dispatch_specs(run), label="spec")
    raw, gate = gate_of(spec)
    impl = run.impl
    check_dispatch("P2 dispatch", run, spec, implementation_dispatch(impl), impl, raw, gate, f"gate {gate}")
