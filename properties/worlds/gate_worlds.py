"""Gate inputs and worlds for P2: truth tables of the gate (G1-G7), the passing corner with one
clause violated at its boundary, and worlds around the dispatch (G8). Each world strategy takes the
run's configuration."""

from __future__ import annotations

from hypothesis import strategies as st

from batched.gate import can_batch_bootstrap
from properties.config import RunConfig
from properties.worlds.covering_worlds import corner_targets, covering_worlds, realize
from properties.worlds.specs import ModelSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import base_model
from reference.sched_ctx import ENV_NO_BATCH_BOOTSTRAP, Levers, SchedCtx

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


# The clause a corner world violates (None: none): G1 and G7 (whose boundaries are in the mix's size)
# twice as often as the others, and none in seven worlds of sixteen, where the batched step runs at the
# limits the world reaches (`covering_worlds.corner_targets`).
CORNER_CLAUSES = st.sampled_from(
    (None, "G1", None, "G7", None, "G2", None, "G3", None, "G4", None, "G5", None, "G6", "G1", "G7")
)


@st.composite
def corner_worlds(draw: st.DrawFn, run: RunConfig) -> tuple[WorldSpec, str | None]:
    """A mix at the passing corner of the gate, or with one clause violated at its boundary (one
    sequence bootstrapping out of several, a dispatch cap of 1, a stash one row short or EP or HSS),
    its model's limits reached or not and its drafter as `properties.worlds.covering_worlds` draws them;
    and which clause (None: open)."""
    clause = draw(CORNER_CLAUSES)
    t = draw(corner_targets(blocking=clause))
    return realize(draw, t, draw(world_specs(run, min_n=2))), clause


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


def dispatch_specs(run: RunConfig) -> st.SearchStrategy[WorldSpec]:
    """Worlds for the dispatch (G8): every gate clause blocking or open, every model limit reached or
    not and either drafter kind, each drawn on its own so that every pair of them meets
    (`properties.worlds.covering_worlds`, `docs/corners.md`)."""
    return covering_worlds(run)
