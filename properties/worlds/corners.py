"""Corners where two conditions of one step meet, and which of them the derandomized `ci` samples reach.

A condition is one value of a two-valued variable of an example: each gate clause G1-G7 blocking or
open (every clause, not only the first that blocks), the gate as a whole open or closed, each model
limit reached (the batch, or one of its bootstrapped rows, sits exactly at the limit or past it) or
not, and the drafter kind. A pair is two conditions one example holds together. A mix holds the
conditions of each of its bootstrapped rows for the variables of a row (`Variable.scope == "row"`),
so a pair with a row condition may come from two rows of the same mix, and so may both values of a
row variable.

Pairs excluded by construction (two values of one variable of the mix, or values the gate rules out
together) are listed with a reason each in `exclusions()`; every other pair is reachable. A pair is
reached when an example that runs the code meeting both conditions holds it: two gate clauses, gate
inputs or a world (`clause_pair`); a clause or the gate with anything else, a world; two limits, or
a limit and the drafter kind, a world where the batched step runs (`step_pair`).
`tests/test_corner_pairs.py` asserts that the `ci` samples reach every reachable pair and hold no
excluded one; `python -m properties.worlds.corner_reach` prints the tables of `docs/corners.md`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from properties.worlds.specs import WorldSpec
from properties.worlds.world import MAX_DRAFTS, draft_table_len
from reference.spec_step import GRAMMAR_MAX_DRAFTS

Pair = tuple[str, str]  # two conditions, in `CONDITIONS` order


@dataclass(slots=True, frozen=True)
class Variable:
    """A two-valued fact about one example: `corner` names it at the gate's or the model's corner,
    `plain` otherwise; `scope` "mix" (the batch as a whole) or "row" (some bootstrapped row)."""

    name: str
    plain: str
    corner: str
    scope: str
    meaning: str


CLAUSE_MEANINGS = {
    "G1": "fewer than two rows bootstrap (n < 2)",
    "G2": "a DFlash serve with raw-argmax verify (`dflash_verify_raw_argmax`)",
    "G3": "the `mtp_batch_bootstrap` lever off (or its environment switch set)",
    "G4": "the MTP dispatch cap `mtp_max_seqs` at 1 or under",
    "G5": "a DFlash drafter with unified-ctx or serial-append on",
    "G6": "FP32 decode logits",
    "G7": "the batched-verify envelope refuses n rows of width 2: a stash under n rows (or none), EP or HSS",
}
CLAUSES = tuple(CLAUSE_MEANINGS)
VARIABLES: tuple[Variable, ...] = (
    *(Variable(c, f"{c} open", f"{c} blocks", "mix", m) for c, m in CLAUSE_MEANINGS.items()),
    Variable("gate", "gate open", "gate closed", "mix", "some clause blocks: the dispatch takes the per-sequence loop"),
    Variable("stash", "stash under", "stash reached", "mix", "the batch fills the hidden stash or overflows it"),
    Variable("group", "group cap under", "group cap reached", "mix", "the batch fills a propose group or overflows it"),
    Variable(
        "batched_drafts",
        "batched drafts under",
        "batched drafts reached",
        "mix",
        "the ladder at or past `max_batched_drafts` (past it a group returns None)",
    ),
    Variable(
        "verify_width",
        "verify width under",
        "verify width reached",
        "mix",
        "a row with the whole ladder verifies ladder + 1 tokens next: at or past `max_drafts`, the widest verify",
    ),
    Variable(
        "row_drafts",
        "row drafts under",
        "row drafts reached",
        "row",
        "a row may draft no more than the ladder asks (tokens left after this one, 1 under a grammar)",
    ),
    Variable(
        "stride",
        "stride under",
        "stride reached",
        "row",
        "a row's drafter block table at or past the propose-meta stride (past it the group fails)",
    ),
    Variable("drafter", "MTP drafter", "DFlash drafter", "mix", "the drafter kind (`dflash_gamma` set: DFlash)"),
)
BY_NAME = {v.name: v for v in VARIABLES}
ROW_VARIABLES = tuple(v.name for v in VARIABLES if v.scope == "row")
CONDITIONS: tuple[str, ...] = tuple(c for v in VARIABLES for c in (v.plain, v.corner))
_ORDER = {c: i for i, c in enumerate(CONDITIONS)}
_VARIABLE_OF = {c: v for v in VARIABLES for c in (v.plain, v.corner)}


def pair(a: str, b: str) -> Pair:
    """The pair of conditions `a` and `b`, in `CONDITIONS` order."""
    return (a, b) if _ORDER[a] < _ORDER[b] else (b, a)


def pairs_of(conditions: Iterable[str]) -> set[Pair]:
    """Every pair of two distinct conditions among `conditions`."""
    return {pair(a, b) for a, b in combinations(set(conditions), 2)}


def labels(values: dict[str, bool]) -> frozenset[str]:
    """The conditions of variable values (True: at the corner); variables left out stay unknown."""
    return frozenset(BY_NAME[name].corner if at else BY_NAME[name].plain for name, at in values.items())


def gate_values(
    n: int,
    *,
    raw_argmax: bool,
    lever_off: bool,
    max_seqs: int,
    gamma: int | None,
    unified: bool,
    serial: bool,
    fp32: bool,
    stash: int,
    ep: bool,
    hss: bool,
) -> dict[str, bool]:
    """Each clause blocking (True) or not, the gate closed or not, the stash reached, the drafter a
    DFlash one: the design's G1-G7 (`gate_worlds.expected_gate`), with a stash of 0 rows refusing any
    batch (the model allocates none)."""
    values = {
        "G1": n < 2,
        "G2": raw_argmax,
        "G3": lever_off,
        "G4": max_seqs <= 1,
        "G5": gamma is not None and (unified or serial),
        "G6": fp32,
        "G7": stash == 0 or stash < n or ep or hss,
    }
    values["gate"] = any(values[c] for c in CLAUSES)
    values["stash"] = n >= stash
    values["drafter"] = gamma is not None
    return values


def gate_input_values(g: dict[str, Any]) -> dict[str, bool]:
    """The variables of P2's gate inputs (`gate_worlds.gate_inputs`): the gate's, the stash and the
    drafter (the other limits belong to a world, which gate inputs do not describe)."""
    return gate_values(
        g["n"],
        raw_argmax=g["raw_argmax"],
        lever_off=not g["lever"] or g["env_no"],
        max_seqs=g["max_seqs"],
        gamma=g["gamma"],
        unified=g["unified"],
        serial=g["serial"],
        fp32=g["fp32"],
        stash=g["stash"],
        ep=g["ep"],
        hss=g["hss"],
    )


def meta_stride(spec: WorldSpec) -> int:
    """The propose-meta stride of the world's model (worlds hand the model no environment)."""
    m = spec.model
    return m.meta_stride if m.meta_stride is not None else math.ceil(m.max_seq_len / m.block_size)


def row_draft_room(spec: WorldSpec, i: int) -> int:
    """Drafts sequence `i` may still take after this step's token: its tokens left, 1 under a grammar."""
    s = spec.seqs[i]
    room = max(0, s.max_tokens_left - 1)
    return min(room, GRAMMAR_MAX_DRAFTS) if s.grammar is not None else room


def world_values(spec: WorldSpec) -> dict[str, bool]:
    """Every variable of a world: the gate's as the dispatch would see it, the limits of its model,
    its drafter, and for the row variables whether some bootstrapped row is at its corner."""
    m, step, n, ladder = spec.model, spec.step, len(spec.bootstrap), spec.step.ladder_nd
    values = gate_values(
        n,
        raw_argmax=step.dflash_verify_raw_argmax,
        lever_off=not step.mtp_batch_bootstrap,
        max_seqs=step.mtp_max_seqs,
        gamma=m.dflash_gamma,
        unified=step.dflash_unified_ctx,
        serial=step.dflash_serial_append,
        fp32=m.logits_fp32,
        stash=m.stash_capacity,
        ep=m.ep,
        hss=m.hss,
    )
    values["group"] = n >= m.group_cap
    values["batched_drafts"] = ladder >= m.max_batched_drafts
    values["verify_width"] = ladder + 1 >= MAX_DRAFTS
    rows = [row_values(spec, i) for i in spec.bootstrap]
    values.update({name: any(r[name] for r in rows) for name in ROW_VARIABLES})
    return values


def row_values(spec: WorldSpec, i: int) -> dict[str, bool]:
    """The row variables of sequence `i`: its draft room at or under the ladder, its drafter table
    at or past the meta stride."""
    ladder = spec.step.ladder_nd
    return {
        "row_drafts": row_draft_room(spec, i) <= ladder,
        "stride": draft_table_len(spec.seqs[i], spec.model, ladder) >= meta_stride(spec),
    }


def conditions_of(example: Any) -> frozenset[str]:
    """The conditions an example holds: a `WorldSpec`, a side-by-side run (its spec), or P2's gate
    inputs (a dict: the gate's variables, the stash and the drafter only). A mix holds the row
    conditions of each of its bootstrapped rows, so both values of a row variable where rows differ."""
    if isinstance(example, dict):
        return labels(gate_input_values(example))
    spec = example if isinstance(example, WorldSpec) else example.spec
    mix = labels({name: at for name, at in world_values(spec).items() if name not in ROW_VARIABLES})
    return mix | {c for i in spec.bootstrap for c in labels(row_values(spec, i))}


def variable_of(condition: str) -> Variable:
    return _VARIABLE_OF[condition]


def clause_pair(p: Pair) -> bool:
    """Both conditions are gate clauses. Only the gate function reads two clauses (the dispatch and
    the step read its answer), so P2's gate inputs reach such a pair as a world does."""
    return all(variable_of(c).name in CLAUSES for c in p)


def step_pair(p: Pair) -> bool:
    """Neither condition is a gate clause's or the gate's: the pair is met by the batched step, so it
    is reached only where the batched step runs."""
    return not any(variable_of(c).name in (*CLAUSES, "gate") for c in p)


def exclusions() -> dict[Pair, str]:
    """The pairs no example can hold, each with the reason; every other pair is reachable."""
    one_value = "a mix takes one value of a variable of the mix"
    out = {pair(v.plain, v.corner): one_value for v in VARIABLES if v.scope == "mix"}
    for c in CLAUSES:
        out[pair("gate open", f"{c} blocks")] = f"the gate is the conjunction of G1-G7: {c} blocking closes it"
    out[pair("G5 blocks", "MTP drafter")] = "G5 blocks a DFlash drafter only"
    return out


def all_pairs() -> list[Pair]:
    return [pair(a, b) for a, b in combinations(CONDITIONS, 2)]


def reachable_pairs() -> list[Pair]:
    excluded = exclusions()
    return [p for p in all_pairs() if p not in excluded]
