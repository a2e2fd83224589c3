"""The catalogue of mutants, in a fixed order: gate and dispatch, per-row part of the step, proposes
and checkpoints, model operations and the propose-error log."""

from __future__ import annotations

import re

from mutants import catalogue_gate, catalogue_model, catalogue_propose, catalogue_rows
from mutants.spec import Mutant

CATALOGUE: tuple[Mutant, ...] = (
    *catalogue_gate.MUTANTS,
    *catalogue_rows.MUTANTS,
    *catalogue_propose.MUTANTS,
    *catalogue_model.MUTANTS,
)

REQUIRED_IDS: tuple[str, ...] = (*(f"G{i}" for i in range(1, 9)), *(f"B{i}" for i in range(1, 27)))
ID_PATTERN = re.compile(r"^(G[1-8]|B([1-9]|1[0-9]|2[0-6])|D[1-4])$")


def by_id(mid: str) -> Mutant:
    """The mutant named `mid`; KeyError names the known ids when there is none."""
    for m in CATALOGUE:
        if m.id == mid:
            return m
    raise KeyError(f"no mutant {mid!r}; known: {', '.join(m.id for m in CATALOGUE)}")


def uncovered_ids() -> list[str]:
    """Gate and batched-step behaviour ids no mutant names."""
    named = {i for m in CATALOGUE for i in m.ids}
    return [i for i in REQUIRED_IDS if i not in named]
