"""The seed's literal dispatch (`batched.dispatch.step_mtp_bootstrap`, the suite's own code: the gate
and the literal batched step): batched when the gate holds, the per-sequence loop otherwise (G8), on
the dispatch worlds and at the gate's passing corner, the world left as the reference leaves it. P2
(`properties/step/test_p2_gate*.py`) holds the same dispatch with the implementation under test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batched.dispatch import step_mtp_bootstrap
from properties.behaviours import covers
from properties.config import RunConfig
from properties.impl import load
from properties.run.shards import sharded
from properties.step.dispatch_check import check_dispatch, gate_of
from properties.worlds.gate_worlds import corner_worlds, dispatch_specs
from properties.worlds.specs import WorldSpec

pytestmark = pytest.mark.self_test
LITERAL = load("literal")  # the seed's literal batched step, whatever --impl names


@covers("P2 gate and dispatch", "G8")
@sharded(2)
@given(data=st.data())
def test_literal_dispatch_follows_gate(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(dispatch_specs(run), label="spec")
    raw, gate = gate_of(spec)
    check_dispatch("literal dispatch", run, spec, step_mtp_bootstrap, LITERAL, raw, gate, f"gate {gate}")


@covers("P2 gate and dispatch", "G8")
@sharded(3)
@given(data=st.data())
def test_literal_dispatch_at_the_gate_corner(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec, clause = data.draw(corner_worlds(run), label="world")
    why, raw, open_gate = f"clause {clause or 'none'} violated", clause == "G2", clause is None
    check_dispatch("literal dispatch at the gate corner", run, spec, step_mtp_bootstrap, LITERAL, raw, open_gate, why)
