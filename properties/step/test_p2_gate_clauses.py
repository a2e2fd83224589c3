"""P2, clause by clause: a configuration where every gate clause holds opens the gate, and violating
any single one of G1-G7 (and nothing else) closes it, for each clause in turn; through the
dispatch, the open gate runs the batched step alone and a closed one the per-sequence loop alone
(G8). A random truth table rarely lands next to the passing corner, where a clause that is
missing, too strict or off by one shows, so the violations favour the boundary values (one
sequence, a dispatch cap of 1, a stash one row short)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from batched.dispatch import step_mtp_bootstrap
from properties.behaviours import covers
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.gate_worlds import CLAUSES, corner_worlds, expected_gate, gate, passing_gate_inputs, violate
from properties.harness import run_side_by_side
from properties.impl import plain
from properties.report import format_report
from properties.shards import sharded


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


@covers("P2 gate and dispatch", "G8")
@sharded(3)
@given(data=st.data())
def test_dispatch_at_the_gate_corner(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec, clause = data.draw(corner_worlds(run), label="world")
    ran: list[bool] = []

    def dispatch(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        ran.append(step_mtp_bootstrap(model, active, sched, idxs, ladder_nd, verify_ctx, clause == "G2"))

    sbs = run_side_by_side(spec, plain(dispatch, "dispatch"), run.replays)
    ops = [c.op for c in sbs.impl.model.calls]
    assert ran == [clause is None], f"clause {clause or 'none'} violated: dispatch returned {ran}, calls {ops}"
    if clause is None:
        assert ops.count("decode_batch") == 1 and "decode" not in ops, f"gate open but calls were {ops}"
    else:
        assert "decode_batch" not in ops and ops.count("decode") == len(spec.bootstrap), (
            f"{clause} violated: expected {len(spec.bootstrap)} per-sequence decodes, calls were {ops}"
        )
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report("P2 dispatch at the gate corner", sbs, mismatches)
