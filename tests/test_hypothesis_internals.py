"""The Hypothesis internals the tree uses (`properties.hypothesis_internals`): Hypothesis installed
at the version `pyproject.toml` pins exactly, every internal where the module expects it and doing
what the module promises, and no other file reaching into Hypothesis's internals."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from properties import hypothesis_internals as hi

ROOT = Path(__file__).resolve().parent.parent
PRIVATE = re.compile(r"hypothesis\.internal|hypothesis\.strategies\._internal|_hypothesis_internal_")
FOLDERS = ("properties", "nightly", "mutants", "benchmarks", "jobs", "tests", "batched", "reference")


def pinned_version() -> str | None:
    """The version `pyproject.toml`'s dependencies pin Hypothesis to (`hypothesis==X`); None unless exact."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    found = [re.fullmatch(r"hypothesis\s*==\s*([\w.]+)", d.split(";")[0].strip()) for d in deps]
    return next((m.group(1) for m in found if m), None)


def test_hypothesis_is_the_pinned_version() -> None:
    internals = "\n".join(f"  {name}: {why}" for name, why in hi.INTERNALS.items())
    pin = pinned_version()
    assert pin is not None, "pyproject.toml must pin hypothesis exactly (hypothesis==X): the tree uses its internals"
    assert hypothesis.__version__ == pin, (
        f"Hypothesis {hypothesis.__version__} is installed, pyproject.toml pins {pin}. Before moving the pin, "
        f"re-check in the new version's source each internal properties/hypothesis_internals.py uses:\n{internals}"
    )


@pytest.mark.parametrize("name", [n for n in hi.INTERNALS if n.startswith("hypothesis.")])
def test_every_module_internal_is_where_it_was(name: str) -> None:
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            assert hasattr(target, attr), f"{name}: no {attr} in Hypothesis {hypothesis.__version__}"
            target = getattr(target, attr)
        return
    pytest.fail(f"{name}: no such module in Hypothesis {hypothesis.__version__}")


def test_the_test_attributes_do_what_the_module_promises() -> None:
    database = InMemoryExampleDatabase()
    drawn: list[int] = []

    @settings(max_examples=50, database=database, derandomize=False)
    @given(st.integers())
    def prop(x: int) -> None:
        drawn.append(x)

    assert hi.own_settings(prop).max_examples == 50 and hi.own_settings(given(st.integers())(lambda x: None)) is None
    hi.set_settings(prop, settings(hi.own_settings(prop), max_examples=7))
    hi.seed_keeping_database(prop, 1234)
    prop()
    first, drawn[:] = list(drawn), []
    prop()
    assert len(first) == 7 and drawn == first, "the share of examples and the seed hold, run after run"
    assert hi.seed_of(prop) == 1234 and hi.own_settings(prop).database is database, "the database is kept"
    attributes = [n.removeprefix("test.") for n in hi.INTERNALS if n.startswith("test.")]
    assert all(hasattr(prop, a) for a in attributes), "Hypothesis still sets the attributes the module names"


def test_observing_sees_every_example_as_json() -> None:
    seen: list[object] = []

    @settings(max_examples=5, database=None)
    @given(st.integers())
    def prop(x: int) -> None:
        pass

    def callback(observation: object) -> None:
        seen.append(hi.observation_json(observation))

    hi.observe(callback)
    try:
        prop()
    finally:
        hi.stop_observing(callback)
    cases = [s for s in seen if isinstance(s, dict) and s.get("type") == "test_case"]
    assert len(cases) == 5 and all(isinstance(c["arguments"], dict) for c in cases)
    before = len(seen)
    prop()
    assert len(seen) == before, "no records once stopped"


def test_without_local_constants_a_derandomized_draw_does_not_change_with_the_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[int] = []

    @settings(max_examples=200, derandomize=True, database=None)
    @given(st.integers())
    def prop(x: int) -> None:
        drawn.append(x)

    with hi.without_local_constants():
        prop()
    first, drawn[:] = list(drawn), []
    (tmp_path / "constants_here.py").write_text(f"VALUES = {list(range(10**6, 10**6 + 500))}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("constants_here")  # a local module of new constants, as a session imports one
    with hi.without_local_constants():
        prop()
    assert drawn == first


def test_no_other_file_reaches_into_hypothesis_internals() -> None:
    mine = {Path(hi.__file__).resolve(), Path(__file__).resolve()}
    files = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py") if p.resolve() not in mine]
    reaching = sorted(str(p.relative_to(ROOT)) for p in files if PRIVATE.search(p.read_text()))
    assert not reaching, f"Hypothesis internals outside properties/hypothesis_internals.py: {reaching}"
