"""Static checks of the fully batched step's mutants and of how the runner points a mutant's suite at
its implementation (no mutant runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mutants.apply import mutated_source
from mutants.catalogue import CATALOGUE, GROUPS, ID_PATTERN, OTHER_IMPLS, VECTOR_IMPL, by_id, for_impl
from mutants.execute import RunOptions, pytest_args
from mutants.run import selected
from properties.impl import load

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = (*GROUPS["vector_sampling"], *GROUPS["vector"], *GROUPS["vector_passes"], *GROUPS["vector_blind_spots"])


def test_the_vector_catalogue_is_registered_apart_from_the_default_one() -> None:
    assert 8 <= len(MUTANTS) <= 60
    assert set(MUTANTS) <= set(OTHER_IMPLS) and not set(MUTANTS) & set(CATALOGUE)
    ids = [m.id for m in (*CATALOGUE, *OTHER_IMPLS)]
    assert len(set(ids)) == len(ids), "duplicate mutant ids"
    assert for_impl(VECTOR_IMPL) == list(MUTANTS) == selected(None, impl=VECTOR_IMPL)[: len(MUTANTS)]
    assert by_id(MUTANTS[0].id) is MUTANTS[0]
    assert callable(load(VECTOR_IMPL).step)


@pytest.mark.parametrize("m", MUTANTS, ids=[m.id for m in MUTANTS])
def test_vector_mutant_applies_exactly_once_and_compiles(m) -> None:
    assert m.impl == VECTOR_IMPL
    assert m.file.startswith("batched/") and m.file.endswith(".py")
    assert m.ids and all(ID_PATTERN.match(i) for i in m.ids), m.ids
    assert m.description and "\n" not in m.description
    assert mutated_source(ROOT, m) != (ROOT / m.file).read_text()


def test_the_suite_of_a_mutant_runs_against_its_implementation() -> None:
    opts = RunOptions()
    assert "--impl" not in pytest_args(["t"], opts)
    cmd = pytest_args(["t"], opts, None, VECTOR_IMPL)
    assert cmd[cmd.index("--impl") + 1] == VECTOR_IMPL and cmd[-1] == "t"


def test_a_subset_run_for_an_implementation_keeps_every_id_of_its_whole_run() -> None:
    """`--subset --impl vector` runs a subset of that implementation's selection, not all of it."""
    whole, subset = selected(None, impl=VECTOR_IMPL), selected(None, subset=True, impl=VECTOR_IMPL)
    assert set(subset) < set(whole)
    assert {i for m in subset for i in m.ids} == {i for m in whole for i in m.ids}
