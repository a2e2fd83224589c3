"""The catalogue of mutants, kept as data: one TOML file a concept under `mutants/catalogue/`, read in
a fixed order (`GROUP_ORDER`): gate and dispatch, per-row part of the step, proposes and checkpoints,
model operations and the propose-error log, stray writes, those only a later step reveals and the
blind spots; then the mutants of other implementations under test (the fully batched step's sampler,
step, passes and blind spots; the own-noise samplers), and the selections a run makes of them.

Each file holds `[[mutant]]` tables with exactly these keys:

- `id`: the mutant's name, unique in the whole catalogue;
- `file`: the project file it changes, relative to the project root;
- `ids`: the behaviour ids it breaks, an array of strings;
- `description`: one line saying what the bug is;
- `impl`: the implementation under test its suite runs against, only where not the default;
- `edits`: an array of `{old = '''...''', new = '''...'''}`, applied in order, each `old` occurring
  exactly once in the file (`mutants.apply` checks that when it applies one).

Snippets are TOML literal strings, multi-line ones where they span lines, so code needs no escaping:
a newline right after the opening `'''` is not part of the text, every other character is. A file may
also hold `[equivalent.<impl>]`: catalogue mutant id = why that mutant cannot change the behaviour of
`<impl>`. Reading checks keys, types, duplicate ids and the files present; `CatalogueError` names
the file and the mutant."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutants.spec import Edit, Mutant

_ROOT = Path(__file__).resolve().parent.parent
CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"
# The catalogue files (stems under CATALOGUE_DIR) in catalogue order.
GROUP_ORDER: tuple[str, ...] = (
    "gate",
    "rows",
    "propose",
    "model",
    "stray",
    "generations",
    "blind_spots",
    "vector_sampling",
    "vector",
    "vector_passes",
    "vector_blind_spots",
    "samplers",
)
_MUTANT_KEYS: tuple[str, ...] = ("id", "file", "ids", "description", "impl", "edits")
_REQUIRED_KEYS: tuple[str, ...] = ("id", "file", "ids", "description", "edits")
_EDIT_KEYS: tuple[str, ...] = ("old", "new")
_FILE_KEYS: tuple[str, ...] = ("mutant", "equivalent")
# The fully batched step's registry name, the `impl` its mutants name (`--impl vector`).
VECTOR_IMPL = "vector"


class CatalogueError(ValueError):
    """A catalogue file that does not read as a catalogue: the message names the file and the mutant."""


@dataclass(slots=True, frozen=True)
class CatalogueFile:
    """One catalogue file as read: its mutants in file order and its `[equivalent.<impl>]` tables."""

    name: str
    mutants: tuple[Mutant, ...]
    equivalent: dict[str, dict[str, str]]


def _shown(path: Path) -> str:
    """`path` relative to the project root where it lies below it, else as given."""
    return str(path.relative_to(_ROOT)) if path.is_relative_to(_ROOT) else str(path)


def _string(value: Any, where: str, key: str, *, empty: bool = False) -> str:
    """`value` when it is a string (non-empty unless `empty`); CatalogueError at `where` otherwise."""
    if not isinstance(value, str) or (not empty and not value):
        raise CatalogueError(f"{where}: {key!r} must be a {'' if empty else 'non-empty '}string, not {value!r}")
    return value


def _edit(value: Any, where: str) -> Edit:
    """The `Edit` of one `{old = ..., new = ...}` table; CatalogueError at `where` for any other shape."""
    if not isinstance(value, dict):
        raise CatalogueError(f"{where}: must be a table {{old = ..., new = ...}}, not {value!r}")
    unknown = sorted(set(value) - set(_EDIT_KEYS))
    missing = [k for k in _EDIT_KEYS if k not in value]
    if unknown or missing:
        raise CatalogueError(f"{where}: unknown keys {unknown}, missing keys {missing} (an edit has old and new)")
    return Edit(_string(value["old"], where, "old"), _string(value["new"], where, "new", empty=True))


def _mutant(table: Any, path: str, n: int) -> Mutant:
    """The `Mutant` of the `n`-th (from 1) `[[mutant]]` table of file `path`. Raises CatalogueError
    naming the file and the mutant for an unknown key, a missing key or a value of the wrong type."""
    where = f"{path}: mutant #{n}"
    if not isinstance(table, dict):
        raise CatalogueError(f"{where}: must be a [[mutant]] table, not {table!r}")
    if isinstance(table.get("id"), str):
        where = f"{path}: mutant {table['id']!r}"
    unknown = sorted(set(table) - set(_MUTANT_KEYS))
    if unknown:
        raise CatalogueError(f"{where}: unknown keys {unknown} (known: {', '.join(_MUTANT_KEYS)})")
    missing = [k for k in _REQUIRED_KEYS if k not in table]
    if missing:
        raise CatalogueError(f"{where}: missing keys {missing}")
    ids, edits = table["ids"], table["edits"]
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise CatalogueError(f"{where}: 'ids' must be a non-empty array of strings, not {ids!r}")
    if not isinstance(edits, list) or not edits:
        raise CatalogueError(f"{where}: 'edits' must be a non-empty array of {{old, new}} tables, not {edits!r}")
    impl = table.get("impl")
    return Mutant(
        _string(table["id"], where, "id"),
        _string(table["file"], where, "file"),
        tuple(_edit(e, f"{where}: edit {k}") for k, e in enumerate(edits, start=1)),
        tuple(ids),
        _string(table["description"], where, "description"),
        None if impl is None else _string(impl, where, "impl"),
    )


def _equivalent(value: Any, path: str) -> dict[str, dict[str, str]]:
    """The `[equivalent.<impl>]` tables of file `path`: impl -> mutant id -> reason."""
    if not isinstance(value, dict) or not all(
        isinstance(reasons, dict) and all(isinstance(r, str) and r for r in reasons.values())
        for reasons in value.values()
    ):
        raise CatalogueError(f"{path}: [equivalent.<impl>] tables must map mutant ids to reasons, not {value!r}")
    return {impl: dict(reasons) for impl, reasons in value.items()}


def read_file(path: Path) -> CatalogueFile:
    """The catalogue file at `path`, every table checked. Raises CatalogueError naming the file (and
    the mutant, where one is at fault) when it is not valid TOML or not a catalogue."""
    shown = _shown(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CatalogueError(f"{shown}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - set(_FILE_KEYS))
    if unknown:
        raise CatalogueError(f"{shown}: unknown top-level keys {unknown} (known: [[mutant]], [equivalent.<impl>])")
    tables = data.get("mutant", [])
    if not isinstance(tables, list):
        raise CatalogueError(f"{shown}: 'mutant' must be an array of [[mutant]] tables")
    mutants = tuple(_mutant(t, shown, n) for n, t in enumerate(tables, start=1))
    return CatalogueFile(path.stem, mutants, _equivalent(data.get("equivalent", {}), shown))


def read_catalogue(directory: Path = CATALOGUE_DIR, order: tuple[str, ...] = GROUP_ORDER) -> tuple[CatalogueFile, ...]:
    """Every catalogue file of `directory`, in `order`. Raises CatalogueError when a file of `order`
    is missing or one there is not in it (its mutants would silently not run), when two mutants share
    an id (naming both files), or when an `[equivalent.<impl>]` entry names no mutant or is given twice."""
    present = {p.stem for p in directory.glob("*.toml")}
    missing, extra = [s for s in order if s not in present], sorted(present - set(order))
    if missing or extra:
        raise CatalogueError(f"{_shown(directory)}: files missing {missing}, files not in GROUP_ORDER {extra}")
    files = tuple(read_file(directory / f"{stem}.toml") for stem in order)
    shown = {stem: _shown(directory / f"{stem}.toml") for stem in order}
    seen: dict[str, str] = {}
    for f in files:
        for m in f.mutants:
            if m.id in seen:
                raise CatalogueError(f"{shown[f.name]}: mutant {m.id!r}: duplicate id (also in {shown[seen[m.id]]})")
            seen[m.id] = f.name
    given: set[tuple[str, str]] = set()
    for f in files:
        for impl, reasons in f.equivalent.items():
            for mid in reasons:
                where = f"{shown[f.name]}: [equivalent.{impl}] {mid!r}"
                if mid not in seen:
                    raise CatalogueError(f"{where}: no such mutant")
                if (impl, mid) in given:
                    raise CatalogueError(f"{where}: given twice")
                given.add((impl, mid))
    return files


_FILES = read_catalogue()
# Each catalogue file's mutants by its stem, in catalogue order.
GROUPS: dict[str, tuple[Mutant, ...]] = {f.name: f.mutants for f in _FILES}
# Mutants of the default implementation under test.
CATALOGUE: tuple[Mutant, ...] = tuple(m for f in _FILES for m in f.mutants if m.impl is None)
# Mutants of other implementations under test, each run against its own (`Mutant.impl`; `--impl`).
OTHER_IMPLS: tuple[Mutant, ...] = tuple(m for f in _FILES for m in f.mutants if m.impl is not None)

REQUIRED_IDS: tuple[str, ...] = (*(f"G{i}" for i in range(1, 9)), *(f"B{i}" for i in range(1, 27)))
ID_PATTERN = re.compile(r"^(G[1-8]|B([1-9]|1[0-9]|2[0-6])|D[1-4])$")
# By implementation: catalogue mutants of code it runs that cannot change its behaviour, and why.
EQUIVALENT_FOR: dict[str, dict[str, str]] = {
    impl: {mid: why for f in _FILES for mid, why in f.equivalent.get(impl, {}).items()}
    for impl in dict.fromkeys(impl for f in _FILES for impl in f.equivalent)
}


def by_id(mid: str) -> Mutant:
    """The mutant named `mid`; KeyError names the known ids when there is none."""
    for m in (*CATALOGUE, *OTHER_IMPLS):
        if m.id == mid:
            return m
    raise KeyError(f"no mutant {mid!r}; known: {', '.join(m.id for m in (*CATALOGUE, *OTHER_IMPLS))}")


def for_impl(impl: str) -> list[Mutant]:
    """The mutants written for implementation `impl` (module:function)."""
    return [m for m in OTHER_IMPLS if m.impl == impl]


def uncovered_ids() -> list[str]:
    """Gate and batched-step behaviour ids no mutant names."""
    named = {i for m in CATALOGUE for i in m.ids}
    return [i for i in REQUIRED_IDS if i not in named]


def named_ids(mutants: tuple[Mutant, ...] | list[Mutant]) -> list[str]:
    """Every behaviour id the mutants name, in order of first appearance."""
    return list(dict.fromkeys(i for m in mutants for i in m.ids))


def cover(mutants: tuple[Mutant, ...] | list[Mutant], per_id: int = 1) -> list[Mutant]:
    """A bounded, deterministic subset for a second CI mode, in catalogue order: every id named by
    `mutants` keeps at least `per_id` of its mutants (or all it has). Greedy and dependent on the
    catalogue only: ids are taken in catalogue order of their first mutant, and for an id that still
    needs mutants the one covering the most still-uncovered ids is taken (catalogue order breaks ties)."""
    chosen: list[Mutant] = []
    count: dict[str, int] = {}
    for bid in named_ids(mutants):
        candidates = [m for m in mutants if bid in m.ids and m not in chosen]
        while count.get(bid, 0) < per_id and candidates:
            best = max(candidates, key=lambda m: (sum(count.get(i, 0) < per_id for i in m.ids), -mutants.index(m)))
            chosen.append(best)
            candidates.remove(best)
            for i in best.ids:
                count[i] = count.get(i, 0) + 1
    return [m for m in mutants if m in chosen]
