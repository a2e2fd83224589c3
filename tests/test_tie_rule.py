"""The replay oracle never forces a decision between ids of one head row (`properties.sides.forcing`):
ids that share an embedding row have one logit in every row any kernel computes, so rounding cannot
separate them and only the tie rule decides."""

from __future__ import annotations

import math

import pytest
import torch

from properties.impl import load
from properties.sides.forcing import explain, tied_alike
from properties.sides.harness import run_side_by_side
from properties.sides.side_by_side import SideBySide
from properties.worlds.specs import ModelSpec, SeqSpec, WorldSpec
from reference.decisions import Decision


def tied_run(tie_group: int) -> SideBySide:
    """One greedy sequence in fast float32 on a model whose ids share head rows in groups of `tie_group`."""
    model = ModelSpec(dtype="float32", numerics="fast", tie_group=tie_group)
    spec = WorldSpec(model=model, seqs=(SeqSpec(n_out=3, token_seed=5),), bootstrap=(0,))
    return run_side_by_side(spec, load("literal"))


def token_decision(sbs: SideBySide) -> Decision:
    return next(d for d in sbs.ref.decisions if d.key.kind == "token")


@pytest.mark.parametrize("tie_group", [2, 3])
def test_a_choice_within_the_head_row_is_refused_with_the_tie_rule(tie_group: int) -> None:
    """The implementation's row has the other id of the reference's head row one ulp up (a kernel
    that broke the tie), and it took that id: its replay on its own row agrees, a rounding bound
    would forgive it, and the tie rule still refuses it."""
    sbs = tied_run(tie_group)
    d = token_decision(sbs)
    other = d.chosen // tie_group * tie_group + (d.chosen + 1) % tie_group
    slot = sbs.before.active[0].seq.slot_idx
    row = sbs.impl.model.rows[slot].clone()
    row[other] = torch.nextafter(row[other], torch.tensor(math.inf, dtype=row.dtype))
    sbs.impl.model.rows[slot] = row
    sbs.replays.clear()
    assert tied_alike(sbs, d, other, slot, sbs.ref.model.rows[slot])
    forced, why = explain(sbs, d, other, slot)
    assert forced is None and "tie rule" in why, why


def test_ids_of_other_head_rows_or_penalised_apart_are_not_tied() -> None:
    sbs = tied_run(1)
    d = token_decision(sbs)
    slot = sbs.before.active[0].seq.slot_idx
    assert not tied_alike(sbs, d, d.chosen ^ 1, slot, sbs.ref.model.rows[slot])
    sbs = tied_run(2)
    d = token_decision(sbs)
    a = sbs.before.active[0]
    a.output_tokens.append(d.chosen ^ 1)  # in the history, under a presence penalty: scored apart
    a.presence_penalty = 0.5
    assert not tied_alike(sbs, d, d.chosen ^ 1, a.seq.slot_idx, sbs.ref.model.rows[a.seq.slot_idx])
