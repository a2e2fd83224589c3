"""How a mutant is written down: a file of the project, exact snippets to replace, the behaviour ids
the change breaks, and one line saying what the bug is. A mutant is data: the catalogue keeps each as
a `[[mutant]]` table of a TOML file under `mutants/catalogue/` (`mutants.catalogue` reads them and
describes the format); `mutant(...)` builds one in code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Edit:
    """Replace `original`, which must occur exactly once in the file, by `replacement`."""

    original: str
    replacement: str


@dataclass(slots=True, frozen=True)
class Mutant:
    """One deliberate bug: `edits` applied in order to `file` (relative to the project root)."""

    id: str
    file: str
    edits: tuple[Edit, ...]
    ids: tuple[str, ...]
    description: str
    impl: str | None = None  # the implementation the suite runs against (module:function); None: the default


def mutant(mid: str, file: str, ids: str, description: str, *pairs: tuple[str, str], impl: str | None = None) -> Mutant:
    """A `Mutant` from its id, file, space-separated behaviour ids, description and
    (original, replacement) pairs; `impl` names the implementation under test when not the default."""
    return Mutant(mid, file, tuple(Edit(o, r) for o, r in pairs), tuple(ids.split()), description, impl)
