"""The catalogue of mutants, in a fixed order: gate and dispatch, per-row part of the step, proposes
and checkpoints, model operations and the propose-error log, and those only a later step reveals."""

from __future__ import annotations

import re

from mutants import (
    catalogue_blind_spots,
    catalogue_gate,
    catalogue_generations,
    catalogue_model,
    catalogue_propose,
    catalogue_rows,
    catalogue_stray,
    catalogue_vector,
)
from mutants.spec import Mutant

CATALOGUE: tuple[Mutant, ...] = (
    *catalogue_gate.MUTANTS,
    *catalogue_rows.MUTANTS,
    *catalogue_propose.MUTANTS,
    *catalogue_model.MUTANTS,
    *catalogue_stray.MUTANTS,
    *catalogue_generations.MUTANTS,
    *catalogue_blind_spots.MUTANTS,
)
# Mutants of other implementations under test, each run against its own (`Mutant.impl`; `--impl`).
OTHER_IMPLS: tuple[Mutant, ...] = (*catalogue_vector.MUTANTS, *catalogue_blind_spots.VECTOR_MUTANTS)

REQUIRED_IDS: tuple[str, ...] = (*(f"G{i}" for i in range(1, 9)), *(f"B{i}" for i in range(1, 27)))
ID_PATTERN = re.compile(r"^(G[1-8]|B([1-9]|1[0-9]|2[0-6])|D[1-4])$")


def by_id(mid: str) -> Mutant:
    """The mutant named `mid`; KeyError names the known ids when there is none."""
    for m in (*CATALOGUE, *OTHER_IMPLS):
        if m.id == mid:
            return m
    raise KeyError(f"no mutant {mid!r}; known: {', '.join(m.id for m in (*CATALOGUE, *OTHER_IMPLS))}")


# By implementation: catalogue mutants of code it runs that cannot change its behaviour, and why.
EQUIVALENT_FOR: dict[str, dict[str, str]] = {catalogue_vector.VECTOR_IMPL: catalogue_vector.EQUIVALENT}


def for_impl(impl: str) -> list[Mutant]:
    """The mutants written for implementation `impl` (module:function)."""
    return [m for m in OTHER_IMPLS if m.impl == impl]


def uncovered_ids() -> list[str]:
    """Gate and batched-step behaviour ids no mutant names."""
    named = {i for m in CATALOGUE for i in m.ids}
    return [i for i in REQUIRED_IDS if i not in named]
