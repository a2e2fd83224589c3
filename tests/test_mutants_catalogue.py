"""Static checks of the mutation catalogue and unit checks of the runner's pieces (cheap: no mutant
runs here; `python -m mutants.run` runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mutants.apply import ApplyError, apply_edits, mutated_source
from mutants.catalogue import CATALOGUE, ID_PATTERN, REQUIRED_IDS, CatalogueError, read_file, uncovered_ids
from mutants.execute import Result
from mutants.modes import DEFAULT_BEGIN as BEGIN
from mutants.modes import DEFAULT_END as END
from mutants.order import ordered_nodeids, suite_tests
from mutants.plugin import ExampleCounter
from mutants.report import summarize, write_markdown
from mutants.spec import mutant

ROOT = Path(__file__).resolve().parent.parent


def test_catalogue_is_large_enough_and_ids_are_unique() -> None:
    assert len(CATALOGUE) >= 28
    ids = [m.id for m in CATALOGUE]
    assert len(set(ids)) == len(ids), "duplicate mutant ids"


def test_every_gate_and_step_behaviour_has_a_mutant() -> None:
    assert not uncovered_ids(), f"no mutant names {uncovered_ids()}"
    assert len(REQUIRED_IDS) == 34


@pytest.mark.parametrize("m", CATALOGUE, ids=[m.id for m in CATALOGUE])
def test_mutant_applies_exactly_once_and_compiles(m) -> None:
    assert m.file.startswith("batched/") and m.file.endswith(".py")
    assert m.ids and all(ID_PATTERN.match(i) for i in m.ids), m.ids
    assert m.description and "\n" not in m.description
    original = (ROOT / m.file).read_text()
    assert mutated_source(ROOT, m) != original


def test_a_snippet_that_is_missing_or_repeated_does_not_apply() -> None:
    missing = mutant("x", "batched/step.py", "B1", "missing", ("no such text", "y"))
    with pytest.raises(ApplyError, match="occurs 0 times"):
        apply_edits("some text", missing)
    repeated = mutant("x", "batched/step.py", "B1", "repeated", ("a", "b"))
    with pytest.raises(ApplyError, match="occurs 2 times"):
        apply_edits("a a", repeated)
    same = mutant("x", "batched/step.py", "B1", "no change", ("a", "a"))
    with pytest.raises(ApplyError, match="changes nothing"):
        apply_edits("a", same)


def test_a_mutant_that_breaks_the_syntax_does_not_apply() -> None:
    broken = mutant("x", "batched/gate.py", "G1", "syntax", ("        n >= 2\n", "        n >= (\n"))
    with pytest.raises(ApplyError, match="does not compile"):
        mutated_source(ROOT, broken)


def test_a_malformed_catalogue_entry_is_named_with_its_file(tmp_path: Path) -> None:
    entry = "[[mutant]]\nid = 'm'\nfile = 'batched/gate.py'\nids = ['G1']\nedits = [{old = 'a', new = 'b'}]\n"
    missing = tmp_path / "missing.toml"
    missing.write_text(entry)
    with pytest.raises(CatalogueError, match=r"missing\.toml: mutant 'm': missing keys \['description'\]"):
        read_file(missing)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text(entry + "description = 'd'\ncolour = 'red'\n")
    with pytest.raises(CatalogueError, match=r"unknown\.toml: mutant 'm': unknown keys \['colour'\]"):
        read_file(unknown)


def test_tests_covering_the_ids_run_first_and_every_test_runs_once() -> None:
    tests = suite_tests(ROOT)
    order = ordered_nodeids(tests, ("B24",))
    assert sorted(order) == sorted(t.nodeid for t in tests)
    covering = [t.nodeid for t in tests if "B24" in t.ids]
    assert covering and order[: len(covering)] == sorted(covering, key=order.index)
    assert set(order[: len(covering)]) == set(covering)


def test_counting_keeps_the_examples_hypothesis_draws() -> None:
    drawn: list[list[int]] = []

    @settings(max_examples=20, derandomize=True, database=None)
    @given(st.lists(st.integers(0, 1000)))
    def plain(xs: list[int]) -> None:
        drawn[-1].append(sum(xs) * 1009 + len(xs))

    drawn.append([])
    plain()
    counter = ExampleCounter(Path("unused.json"))
    counter.current = "plain"
    assert counter.wrap(plain)
    drawn.append([])
    plain()
    assert drawn[0] == drawn[1]
    assert counter.examples["plain"] == len(drawn[1])


def test_markdown_keeps_the_text_outside_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "mutants.md"
    page.write_text(f"# Title\n\nkept above\n\n{BEGIN}\nold table\n{END}\n\nkept below\n")
    killed = Result("m", "batched/step.py", ["B1"], "bug", "killed", killer="p::t", examples=3, seconds=1.0)
    baseline = Result("baseline", "", [], "", "survived", examples_total=10, seconds=2.0)
    write_markdown(page, summarize([killed], baseline, 5.0, "mutants", 2), [killed])
    text = page.read_text()
    assert "kept above" in text and "kept below" in text and "old table" not in text
    assert "**1/1 killed**" in text and "| `m` |" in text
