"""Worlds that cover the corner pairs of `properties.worlds.corners`: a strategy draws a value for every
variable there (each gate clause, each model limit, the drafter kind), then builds a world that holds
exactly those values out of a mix `world_specs` drew. P2's two world properties draw them
(`properties.worlds.gate_worlds`): the dispatch worlds with the clauses drawn free, the gate-corner worlds
with one clause blocking or none.

Every variable is drawn on its own, so any two values that can hold together meet in about one world
in six or more. Hypothesis makes most examples of a run out of earlier ones (it copies parts of an
example into another), so a `ci` run of a hundred examples holds only about twenty distinct draws of
the values: a rarer pair would be left to chance (`docs/corners.md`). Limits are set exactly at the limit or
one step past it, and "under" one step under it or with room to spare: the boundaries are where an
off-by-one shows. Values shrink to the plain side (clauses open, limits under, an MTP drafter), so a
failing world shrinks toward the open gate in a plain model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.corners import CLAUSES, VARIABLES, meta_stride
from properties.worlds.draws import BOOLS, ints
from properties.worlds.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import MAX_DRAFTS, draft_table_len
from reference.spec_step import GRAMMAR_MAX_DRAFTS

LIMITS = tuple(v.name for v in VARIABLES if v.name not in (*CLAUSES, "gate", "drafter"))
DFLASH_GAMMA = 4
# (unified-ctx, serial-append): the serving default first.
DFLASH_MODES = st.sampled_from(((True, False), (False, False), (False, True), (True, True)))
BLOCKING_MODES = st.sampled_from(((True, False), (False, True), (True, True)))
EP_HSS = st.sampled_from(((True, False), (False, True), (True, True)))
MAX_SEQS_OPEN = st.sampled_from((8, 2))  # 2: the smallest cap that lets a batch through
MAX_SEQS_BLOCKED = st.sampled_from((1, 0))
AT_OR_PAST = st.sampled_from((0, 1))  # how far past a limit: exactly at it, or one short of room
ANY_CLAUSES = "any"
# True two times in three (shrinking to False): the gate closed, each clause of a closed gate
# blocking, a DFlash drafter, G5 blocking it where the gate is closed. The worlds of `corner_worlds`
# and P1's mixes hold the open side of every clause with every limit; the blocking side is left to
# these.
TWO_IN_3 = st.sampled_from((False, True, True))


@dataclass(slots=True, frozen=True)
class Targets:
    """The value each variable of `properties.worlds.corners` takes (True: at its corner)."""

    values: dict[str, bool]

    def __getitem__(self, name: str) -> bool:
        return self.values[name]


@st.composite
def corner_targets(draw: st.DrawFn, blocking: str | None = ANY_CLAUSES) -> Targets:
    """A value for each variable; `blocking` names the one clause that blocks (None: none) instead of
    drawing the clauses. G5 blocking takes a DFlash drafter.

    Drawn, the gate is open (every clause open) in a third of the worlds, where the batched step
    runs at the limits drawn; elsewhere each clause blocks two times in three, so about four worlds in
    nine. The drafter is a DFlash one two times in three (one in two with `blocking`), every limit is
    reached one time in two."""
    if blocking == ANY_CLAUSES:
        closed = draw(TWO_IN_3)
        values = {c: closed and draw(TWO_IN_3) for c in CLAUSES if c != "G5"}
        values["drafter"] = draw(TWO_IN_3)
        values["G5"] = closed and values["drafter"] and draw(TWO_IN_3)
    else:
        values = {c: c == blocking for c in CLAUSES}
        values["drafter"] = values["G5"] or draw(BOOLS)
    values.update({name: draw(BOOLS) for name in LIMITS})
    values["gate"] = any(values[c] for c in CLAUSES)
    return Targets(values)


@st.composite
def targeted_worlds(draw: st.DrawFn, run: RunConfig) -> tuple[Targets, WorldSpec]:
    """Values `corner_targets` drew, and a world that holds them (`realize`)."""
    t = draw(corner_targets())
    return t, realize(draw, t, draw(world_specs(run, min_n=1 if t["G1"] else 2)))


def covering_worlds(run: RunConfig) -> st.SearchStrategy[WorldSpec]:
    """Worlds that hold the values `corner_targets` draws."""
    return targeted_worlds(run).map(lambda tw: tw[1])


def realize(draw: st.DrawFn, t: Targets, spec: WorldSpec) -> WorldSpec:
    """`spec` made to hold the values `t`: which rows bootstrap (G1: the first one only; else two or
    more), the levers (G2-G5), the model's envelope (G5-G7, the stash), group cap, batched drafter,
    ladder, rows' draft room and meta stride; no fault plan. `spec` has two sequences or more unless
    G1 blocks."""
    if t["G1"]:
        boot = spec.bootstrap[:1]
    else:
        boot = spec.bootstrap if len(spec.bootstrap) >= 2 else tuple(range(len(spec.seqs)))
    n = len(boot)
    step = levers(draw, t, spec.step)
    ladder = verify_ladder(draw, t, step.ladder_nd)
    seqs = row_draft_rooms(draw, t["row_drafts"], spec.seqs, boot, ladder)
    spec = replace(spec, seqs=seqs, bootstrap=boot, step=replace(step, ladder_nd=ladder), faults=())
    model = envelope(draw, t, spec.model, n)
    batched = ladder - draw(AT_OR_PAST) if t["batched_drafts"] else draw(ints(ladder + 1, MAX_DRAFTS))
    model = replace(
        model,
        group_cap=n - draw(AT_OR_PAST) if t["group"] else under(draw, n, 8),
        max_batched_drafts=max(batched, 0),
        meta_stride=stride(draw, t["stride"], replace(spec, model=model)),
    )
    return replace(spec, model=model)


def under(draw: st.DrawFn, n: int, spare: int) -> int:
    """A limit that `n` does not reach: n + 1, or `spare` where that is more, one time in two."""
    return max(n + 1, spare) if draw(BOOLS) else n + 1


def verify_ladder(draw: st.DrawFn, t: Targets, drawn: int) -> int:
    """The ladder: its verify width (ladder + 1) exactly `MAX_DRAFTS`, or one past it (a ladder of
    `MAX_DRAFTS`, which leaves no batched drafter cap under it), when reached; else the drawn ladder,
    at most two under `MAX_DRAFTS`."""
    if not t["verify_width"]:
        return min(drawn, MAX_DRAFTS - 2)
    past = draw(AT_OR_PAST) and t["batched_drafts"]
    return MAX_DRAFTS if past else MAX_DRAFTS - 1


def levers(draw: st.DrawFn, t: Targets, step: StepSpec) -> StepSpec:
    """The step's levers for G2-G5: raw-argmax verify, the lever, the dispatch cap, the DFlash modes
    (both off for a DFlash drafter that G5 lets through)."""
    if t["G5"]:
        unified, serial = draw(BLOCKING_MODES)
    else:
        unified, serial = (False, False) if t["drafter"] else draw(DFLASH_MODES)
    return replace(
        step,
        dflash_verify_raw_argmax=t["G2"],
        mtp_batch_bootstrap=not t["G3"],
        mtp_max_seqs=draw(MAX_SEQS_BLOCKED if t["G4"] else MAX_SEQS_OPEN),
        dflash_unified_ctx=unified,
        dflash_serial_append=serial,
    )


def envelope(draw: st.DrawFn, t: Targets, m: ModelSpec, n: int) -> ModelSpec:
    """The model's drafter, logits dtype and batched-verify envelope (G5-G7, the stash): a stash of
    exactly n rows when reached, or one row short when G7 blocks through it (none at all for one
    row); n + 1 or 64 rows when not reached; else G7 blocks through EP or HSS."""
    short = t["stash"] and t["G7"] and draw(BOOLS)
    stash = (n - 1 if short else n) if t["stash"] else under(draw, n, 64)
    ep, hss = draw(EP_HSS) if t["G7"] and not short else (False, False)
    gamma = DFLASH_GAMMA if t["drafter"] else None
    return replace(m, dflash_gamma=gamma, logits_fp32=t["G6"], stash_capacity=stash, ep=ep, hss=hss)


def row_draft_rooms(
    draw: st.DrawFn, reached: bool, seqs: tuple[SeqSpec, ...], boot: tuple[int, ...], ladder: int
) -> tuple[SeqSpec, ...]:
    """The rows, one bootstrapped row left room for exactly the ladder or for nothing (its token is
    its last) when reached; else every bootstrapped row given room past the ladder (a grammar row
    losing its grammar where the ladder asks more than a grammar row may draft)."""
    out = list(seqs)
    if reached:
        i = boot[draw(ints(0, len(boot) - 1))]
        out[i] = replace(out[i], max_tokens_left=1 if draw(AT_OR_PAST) else ladder + 1)
        return tuple(out)
    for i in boot:
        s = out[i]
        grammar = s.grammar if ladder < GRAMMAR_MAX_DRAFTS else None
        out[i] = replace(s, grammar=grammar, max_tokens_left=max(s.max_tokens_left, ladder + 2))
    return tuple(out)


def stride(draw: st.DrawFn, reached: bool, spec: WorldSpec) -> int | None:
    """The propose-meta stride: exactly a bootstrapped row's drafter table, or one block short of it,
    when reached; else the drawn stride where every table fits under it, or one block past the longest."""
    m, ladder = spec.model, spec.step.ladder_nd
    tables = [draft_table_len(spec.seqs[i], m, ladder) for i in spec.bootstrap]
    if reached:
        return max(1, tables[draw(ints(0, len(tables) - 1))] - draw(AT_OR_PAST))
    return m.meta_stride if max(tables) < meta_stride(spec) else max(tables) + 1
