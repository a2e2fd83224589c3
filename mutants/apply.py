"""Applying a mutant: each snippet must occur exactly once (a catalogue that silently stops applying
is a defect), and the mutated file must still compile."""

from __future__ import annotations

import shutil
from pathlib import Path

from mutants.spec import Mutant

# What a copy of the project leaves out: version control, caches, virtual environments, outputs.
COPY_IGNORE = (".git", ".venv", ".hypothesis", ".ruff_cache", ".pytest_cache", ".benchmarks", "__pycache__",
               "*.egg-info", "artifacts", ".whl")  # fmt: skip


class ApplyError(Exception):
    """A mutant does not apply to the current source."""


def apply_edits(text: str, m: Mutant) -> str:
    """`text` with every edit of `m` applied in order. Raises ApplyError when a snippet occurs zero
    or several times, or an edit changes nothing."""
    for n, e in enumerate(m.edits, start=1):
        count = text.count(e.original)
        if count != 1:
            raise ApplyError(f"{m.id}: edit {n} snippet occurs {count} times in {m.file}: {e.original[:70]!r}")
        if e.original == e.replacement:
            raise ApplyError(f"{m.id}: edit {n} changes nothing")
        text = text.replace(e.original, e.replacement)
    return text


def mutated_source(root: Path, m: Mutant) -> str:
    """The mutated text of `m.file` under `root`; ApplyError when the file is missing, a snippet does
    not occur exactly once, or the result does not compile."""
    path = root / m.file
    if not path.is_file():
        raise ApplyError(f"{m.id}: no file {m.file}")
    text = apply_edits(path.read_text(), m)
    try:
        compile(text, str(path), "exec")
    except SyntaxError as e:
        raise ApplyError(f"{m.id}: the mutated {m.file} does not compile: {e}") from None
    return text


def copy_project(root: Path, dest: Path) -> None:
    """Copy the project at `root` to `dest` (which must not exist), leaving out `COPY_IGNORE`."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*COPY_IGNORE), symlinks=True)


def prepare(root: Path, m: Mutant | None, dest: Path) -> None:
    """A copy of the project at `dest` with `m` applied (unchanged for None). Raises ApplyError
    before copying anything when `m` does not apply."""
    text = mutated_source(root, m) if m is not None else None
    copy_project(root, dest)
    if m is not None and text is not None:
        (dest / m.file).write_text(text)
