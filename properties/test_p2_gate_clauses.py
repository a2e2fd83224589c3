"""P2, clause by clause: a configuration where every gate clause holds opens the gate, and violating
any single one of G1-G7 (and nothing else) closes it, for each clause in turn; through the
dispatch, the open gate runs the batched step alone and a closed one the per-sequence loop alone
(G8). A random truth table rarely lands next to the passing corner, where a clause that is
missing, too strict or off by one shows, so the violations favour the boundary values (one
sequence, a dispatch cap of 1, a stash one row short)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from batched.dispatch import step_mtp_bootstrap
from properties.behaviours import covers
from properties.compare import check_equivalence
from properties.harness import run_side_by_side
from properties.impl import plain
from properties.report import format_report
from properties.run_config import current
from properties.specs import WorldSpec
from properties.strategies import world_specs
from properties.test_p2_gate import expected_gate, gate

RUN = current()
CLAUSES = ("G1", "G2", "G3", "G4", "G5", "G6", "G7")


@st.composite
def passing_gate_inputs(draw: st.DrawFn) -> dict:
    """Gate inputs (the keys `expected_gate` reads) for which every clause holds, often at the
    boundary (two sequences, a dispatch cap of 2, a stash of exactly n rows)."""
    n = draw(st.sampled_from((2, 2, 3, 4, 6)))
    gamma = draw(st.sampled_from((None, 4)))
    unified, serial = draw(st.sampled_from(((True, False), (False, True), (True, True), (False, False))))
    return {
        "n": n,
        "raw_argmax": False,
        "lever": True,
        "env_no": False,
        "max_seqs": draw(st.sampled_from((2, 2, 8))),
        "unified": unified and gamma is None,
        "serial": serial and gamma is None,
        "gamma": gamma,
        "fp32": False,
        "stash": draw(st.sampled_from((n, n, 8))),
        "ep": False,
        "hss": False,
    }


@st.composite
def violate(draw: st.DrawFn, g: dict, clause: str) -> dict:
    """`g` with exactly the gate clause `clause` made false, mostly at its boundary."""
    g = dict(g)
    if clause == "G1":
        g["n"] = draw(st.sampled_from((1, 1, 0)))
    elif clause == "G2":
        g["raw_argmax"] = True
    elif clause == "G3":
        g["lever"], g["env_no"] = draw(st.sampled_from(((False, False), (True, True), (False, True))))
    elif clause == "G4":
        g["max_seqs"] = draw(st.sampled_from((1, 1, 0)))
    elif clause == "G5":
        g["gamma"] = 4
        g["unified"], g["serial"] = draw(st.sampled_from(((True, False), (False, True), (True, True))))
    elif clause == "G6":
        g["fp32"] = True
    elif clause == "G7":
        g.update(draw(st.sampled_from(({"stash": g["n"] - 1}, {"stash": g["n"] - 1}, {"ep": True}, {"hss": True}))))
    return g


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


@st.composite
def corner_worlds(draw: st.DrawFn) -> tuple[WorldSpec, str | None]:
    """A mix at the passing corner of the gate (every sequence bootstraps, levers on, a stash of
    exactly n rows), or with one clause violated at its boundary (one sequence bootstrapping out of
    several, a stash one row short of the bootstrapping ones); and which clause (None: open)."""
    spec = draw(world_specs(RUN, min_n=2))
    clause = draw(st.sampled_from((None, "G1", None, "G7", "G1", "G2", "G3", "G4", "G6", "G7")))
    boot = tuple(range(len(spec.seqs)))[: 1 if clause == "G1" else None]
    step = replace(
        spec.step,
        mtp_batch_bootstrap=clause != "G3",
        mtp_max_seqs=1 if clause == "G4" else 2,
        dflash_verify_raw_argmax=clause == "G2",
    )
    model = replace(
        spec.model,
        dflash_gamma=None,
        logits_fp32=clause == "G6",
        stash_capacity=len(boot) - 1 if clause == "G7" else len(spec.seqs),
        meta_stride=64,
    )
    return replace(spec, bootstrap=boot, step=step, model=model), clause


@covers("P2 gate and dispatch", "G8")
@given(world=corner_worlds())
def test_dispatch_at_the_gate_corner(world: tuple[WorldSpec, str | None]) -> None:
    spec, clause = world
    ran: list[bool] = []

    def dispatch(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        ran.append(step_mtp_bootstrap(model, active, sched, idxs, ladder_nd, verify_ctx, clause == "G2"))

    sbs = run_side_by_side(spec, plain(dispatch, "dispatch"))
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
