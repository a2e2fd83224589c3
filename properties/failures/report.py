"""Failure reports a person can act on: the shrunk mix, the first differing field per sequence
(reference vs implementation), the behaviour ids involved, and the one command that replays it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from properties.behaviours import ALL_IDS
from properties.impl import DEFAULT_IMPL, canonical
from properties.sides.mismatch import Mismatch
from properties.worlds.specs import WorldSpec, compact

if TYPE_CHECKING:
    from properties.sides.side_by_side import SideBySide


def save_json(text: str, folder: Path, prefix: str = "") -> Path:
    """Write `text` under `folder`, named `prefix` + its content hash, and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prefix}{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    path.write_text(text + "\n")
    return path


def save_replay(spec: WorldSpec, folder: Path) -> Path:
    """Write the spec as JSON under `folder`; the file name is its content hash."""
    return save_json(spec.to_json(), folder)


REPLAY_COMMAND = "python -m properties.replay"  # the one command for every kind of replay file


def replay_command(path: Path, impl: str) -> str:
    """The command that replays `path` (`properties.replay`, any kind of file), naming the
    implementation when not the default."""
    extra = f" --impl {impl}" if canonical(impl) != DEFAULT_IMPL else ""
    return f"{REPLAY_COMMAND} {path}{extra}"


def first_differences(mismatches: list[Mismatch], owner: str, sides: tuple[str, str], run: str) -> list[str]:
    """The first difference per owner (`owner` N, or `run` for the whole run), each side's value
    under its label in `sides`, how many more fields differ, then the behaviour ids involved."""
    lines: list[str] = []
    seen: set[int | None] = set()
    ids: set[str] = set()
    for m in mismatches:
        ids.update(m.ids)
        if m.seq_id in seen:
            continue
        seen.add(m.seq_id)
        lines.append(f"  {run if m.seq_id is None else f'{owner} {m.seq_id}'}: {m.field}")
        lines.append(f"      {sides[0]} {m.ref}")
        lines.append(f"      {sides[1]} {m.impl}")
    if len(mismatches) > len(seen):
        lines.append(f"  (+{len(mismatches) - len(seen)} more differing fields)")
    if ids:
        lines += ["", "behaviours involved:"]
        lines += [f"  {i}: {ALL_IDS[i]}" for i in sorted(ids, key=_id_order)]
    return lines


def format_report(title: str, sbs: SideBySide, mismatches: list[Mismatch]) -> str:
    """The report for a failed example (`mismatches` non-empty)."""
    path = save_replay(sbs.spec, sbs.replay_dir)
    lines = [f"{title}: {len(mismatches)} difference(s)", "", "mix (non-default fields; * = bootstrapped):"]
    lines += ["  " + line for line in compact(sbs.spec).splitlines()]
    notes = sbs.translation.notes + sbs.translation.untrusted
    if notes:
        lines.append("")
        lines += [f"  note: {n}" for n in notes]
    lines += ["", "first difference per sequence (reference | implementation):"]
    lines += first_differences(mismatches, "seq", ("reference:     ", "implementation:"), "run")
    if sbs.forced_decisions:
        lines += ["", f"decisions forced onto the reference (teacher forcing): {len(sbs.forced_decisions)}"]
        lines += [f"  {f.text()}" for f in sbs.forced_decisions]
    if sbs.own_draws:
        lines += ["", f"the implementation's own draws forced onto the reference: {len(sbs.own_draws)}"]
        lines += [f"  {f.key.kind} of seq {f.key.owner} at {f.key.position}: {f.impl_choice}" for f in sbs.own_draws]
    calls = [f"{c.op}{list(c.slots)}={c.outcome}" for c in sbs.impl.model.calls]
    lines += ["", "implementation calls: " + ", ".join(calls[:24]) + (" ..." if len(calls) > 24 else "")]
    lines += ["", f"replay: {replay_command(path, sbs.under_test.name)}"]
    return "\n".join(lines)


def _id_order(i: str) -> tuple[str, int]:
    return (i[0], int(i[1:]))
