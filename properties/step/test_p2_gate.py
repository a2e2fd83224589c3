"""P2: the gate is exactly the conjunction G1-G7, the environment switch clears its lever, and the
dispatch runs the batched step when the gate holds and the per-sequence loop otherwise (G8)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from batched.dispatch import step_mtp_bootstrap
from batched.gate import can_batch_bootstrap
from properties.behaviours import covers
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.gate_worlds import dispatch_specs, expected_gate, gate, gate_inputs
from properties.harness import run_side_by_side
from properties.impl import plain
from properties.report import format_report
from properties.shards import sharded
from properties.specs import WorldSpec
from properties.world import base_model, sched_for


@covers("P2 gate and dispatch", "G1", "G2", "G3", "G4", "G5", "G6", "G7")
@given(g=gate_inputs())
def test_gate_truth_table(g: dict) -> None:
    got = gate(g)
    assert got == expected_gate(g), f"gate inputs {g}: expected {expected_gate(g)}, got {got}"


@covers("P2 gate and dispatch", "G8")
@sharded(2)
@given(data=st.data())
def test_dispatch_follows_gate(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(dispatch_specs(run), label="spec")
    raw = spec.step.dflash_verify_raw_argmax
    sched, _ = sched_for(spec.step)
    gate = can_batch_bootstrap(base_model(spec.model), sched, len(spec.bootstrap), raw)

    def dispatch(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        ran = step_mtp_bootstrap(model, active, sched, idxs, ladder_nd, verify_ctx, raw)
        assert ran == gate, f"dispatch returned batched={ran}, gate says {gate}"

    sbs = run_side_by_side(spec, plain(dispatch, "dispatch"), run.replays)
    ops = [c.op for c in sbs.impl.model.calls]
    if gate:
        assert ops.count("decode_batch") == 1 and "decode" not in ops, f"gate true but calls were {ops}"
    else:
        assert "decode_batch" not in ops and ops.count("decode") == len(spec.bootstrap), (
            f"gate false: expected {len(spec.bootstrap)} per-sequence decodes, calls were {ops}"
        )
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report("P2 dispatch", sbs, mismatches)
