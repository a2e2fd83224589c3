"""P2: the gate is exactly the conjunction G1-G7, the environment switch clears its lever, and the
dispatch runs the batched step when the gate holds and the per-sequence loop otherwise (G8)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from batched.dispatch import step_mtp_bootstrap
from batched.gate import can_batch_bootstrap
from properties.behaviours import covers
from properties.compare import check_equivalence
from properties.harness import run_side_by_side
from properties.impl import plain
from properties.report import format_report
from properties.run_config import current
from properties.specs import ModelSpec, StepSpec, WorldSpec
from properties.strategies import world_specs
from properties.world import base_model, sched_for
from reference.sched_ctx import ENV_NO_BATCH_BOOTSTRAP, Levers, SchedCtx

RUN = current()


@st.composite
def gate_inputs(draw: st.DrawFn) -> dict:
    return {
        "n": draw(st.integers(0, 6)),
        "raw_argmax": draw(st.booleans()),
        "lever": draw(st.booleans()),
        "env_no": draw(st.booleans()),
        "max_seqs": draw(st.integers(0, 4)),
        "unified": draw(st.booleans()),
        "serial": draw(st.booleans()),
        "gamma": draw(st.sampled_from((None, 4))),
        "fp32": draw(st.booleans()),
        "stash": draw(st.sampled_from((0, 1, 3, 8))),
        "ep": draw(st.booleans()),
        "hss": draw(st.booleans()),
    }


def expected_gate(g: dict) -> bool:
    """G1-G7 in the design's words."""
    return (
        g["n"] >= 2  # G1
        and not g["raw_argmax"]  # G2
        and g["lever"]
        and not g["env_no"]  # G3
        and g["max_seqs"] > 1  # G4
        and not (g["gamma"] is not None and (g["unified"] or g["serial"]))  # G5
        and not g["fp32"]  # G6
        and g["stash"] >= g["n"]
        and not g["ep"]
        and not g["hss"]  # G7
    )


def gate(g: dict) -> bool:
    """`can_batch_bootstrap` on the model and levers `g` describes."""
    model = base_model(
        ModelSpec(dflash_gamma=g["gamma"], logits_fp32=g["fp32"], stash_capacity=g["stash"], ep=g["ep"], hss=g["hss"])
    )
    env = {ENV_NO_BATCH_BOOTSTRAP: "1"} if g["env_no"] else {}
    levers = Levers.from_env(
        env,
        mtp_batch_bootstrap=g["lever"],
        mtp_max_seqs=g["max_seqs"],
        dflash_unified_ctx=g["unified"],
        dflash_serial_append=g["serial"],
    )
    return can_batch_bootstrap(model, SchedCtx(levers=levers), g["n"], g["raw_argmax"])


@covers("P2 gate and dispatch", "G1", "G2", "G3", "G4", "G5", "G6", "G7")
@given(g=gate_inputs())
def test_gate_truth_table(g: dict) -> None:
    got = gate(g)
    assert got == expected_gate(g), f"gate inputs {g}: expected {expected_gate(g)}, got {got}"


@st.composite
def dispatch_specs(draw: st.DrawFn) -> WorldSpec:
    spec = draw(world_specs(RUN, min_n=1))
    step = draw(
        st.builds(
            StepSpec,
            mtp_batch_bootstrap=st.booleans(),
            mtp_max_seqs=st.sampled_from((8, 1)),
            dflash_verify_raw_argmax=st.booleans(),
            ladder_nd=st.just(spec.step.ladder_nd),
        )
    )
    model = replace(spec.model, logits_fp32=draw(st.booleans()), stash_capacity=draw(st.sampled_from((64, 1))))
    return replace(spec, step=step, model=model)


@covers("P2 gate and dispatch", "G8")
@given(spec=dispatch_specs())
def test_dispatch_follows_gate(spec: WorldSpec) -> None:
    raw = spec.step.dflash_verify_raw_argmax
    sched, _ = sched_for(spec.step)
    gate = can_batch_bootstrap(base_model(spec.model), sched, len(spec.bootstrap), raw)

    def dispatch(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        ran = step_mtp_bootstrap(model, active, sched, idxs, ladder_nd, verify_ctx, raw)
        assert ran == gate, f"dispatch returned batched={ran}, gate says {gate}"

    sbs = run_side_by_side(spec, plain(dispatch, "dispatch"))
    ops = [c.op for c in sbs.impl.model.calls]
    if gate:
        assert ops.count("decode_batch") == 1 and "decode" not in ops, f"gate true but calls were {ops}"
    else:
        assert "decode_batch" not in ops and ops.count("decode") == len(spec.bootstrap), (
            f"gate false: expected {len(spec.bootstrap)} per-sequence decodes, calls were {ops}"
        )
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report("P2 dispatch", sbs, mismatches)
