"""The gate (G1-G7, `batched.gate.can_batch_bootstrap`, the suite's own code): exactly the
conjunction of the design's clauses on random inputs (the environment switch clears its lever), and
at the passing corner each clause alone closes it. A random truth table rarely lands next to the
passing corner, where a clause that is missing, too strict or off by one shows, so the violations
favour the boundary values (one sequence, a dispatch cap of 1, a stash one row short)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.worlds.gate_worlds import CLAUSES, expected_gate, gate, gate_inputs, passing_gate_inputs, violate

pytestmark = pytest.mark.self_test


@covers("P2 gate and dispatch", "G1", "G2", "G3", "G4", "G5", "G6", "G7")
@given(g=gate_inputs())
def test_gate_truth_table(g: dict) -> None:
    got = gate(g)
    assert got == expected_gate(g), f"gate inputs {g}: expected {expected_gate(g)}, got {got}"


@covers("P2 gate and dispatch", "G1", "G2", "G3", "G4", "G5", "G6", "G7")
@given(data=st.data())
def test_gate_each_clause_alone(data: st.DataObject) -> None:
    base = data.draw(passing_gate_inputs(), label="passing")
    assert expected_gate(base), f"inputs {base} should pass every clause"
    assert gate(base), f"every clause holds for {base}: the gate said False"
    for clause in CLAUSES:
        g = data.draw(violate(base, clause), label=clause)
        assert not expected_gate(g), f"inputs {g} do not violate clause {clause}"
        assert not gate(g), f"only {clause} violated by {g}: the gate said True"
