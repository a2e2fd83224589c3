"""P2, clause by clause: from a configuration where every gate clause holds, violating any single one
of G1-G7 (and nothing else) closes the gate. A random truth table rarely lands next to the passing
corner, where a clause that is missing or off by one shows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from batched.gate import can_batch_bootstrap
from properties.behaviours import covers
from properties.specs import ModelSpec
from properties.test_p2_gate import expected_gate
from properties.world import base_model
from reference.sched_ctx import ENV_NO_BATCH_BOOTSTRAP, Levers, SchedCtx

CLAUSES = (None, "G1", "G2", "G3", "G4", "G5", "G6", "G7")


@st.composite
def passing_gate_inputs(draw: st.DrawFn) -> dict:
    """Gate inputs (the keys `expected_gate` reads) for which every clause holds."""
    n = draw(st.integers(2, 6))
    gamma = draw(st.sampled_from((None, 4)))
    dflash_modes = gamma is None
    return {
        "n": n,
        "raw_argmax": False,
        "lever": True,
        "env_no": False,
        "max_seqs": draw(st.integers(2, 8)),
        "unified": dflash_modes and draw(st.booleans()),
        "serial": dflash_modes and draw(st.booleans()),
        "gamma": gamma,
        "fp32": False,
        "stash": draw(st.integers(n, 8)),
        "ep": False,
        "hss": False,
    }


@st.composite
def violate(draw: st.DrawFn, g: dict, clause: str | None) -> dict:
    """`g` with exactly the gate clause `clause` made false (unchanged for None)."""
    g = dict(g)
    if clause == "G1":
        g["n"] = draw(st.integers(0, 1))
    elif clause == "G2":
        g["raw_argmax"] = True
    elif clause == "G3":
        g["lever"], g["env_no"] = draw(st.sampled_from(((False, False), (True, True), (False, True))))
    elif clause == "G4":
        g["max_seqs"] = draw(st.integers(0, 1))
    elif clause == "G5":
        g["gamma"] = 4
        g["unified"], g["serial"] = draw(st.sampled_from(((True, False), (False, True), (True, True))))
    elif clause == "G6":
        g["fp32"] = True
    elif clause == "G7":
        g.update(draw(st.sampled_from(({"stash": g["n"] - 1}, {"stash": 0}, {"ep": True}, {"hss": True}))))
    return g


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
@given(data=st.data(), clause=st.sampled_from(CLAUSES))
def test_gate_each_clause_alone(data: st.DataObject, clause: str | None) -> None:
    g = data.draw(violate(data.draw(passing_gate_inputs(), label="passing"), clause), label="inputs")
    assert expected_gate(g) == (clause is None), f"inputs {g} do not isolate clause {clause}"
    got = gate(g)
    assert got == (clause is None), f"only {clause or 'no clause'} violated by {g}: the gate said {got}"
