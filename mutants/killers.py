"""The killers' memo (`mutants/killers.json`): for each mode, the test that killed each mutant the
last time it ran. A mutant's suite runs its last killer first, then the tests covering its
behaviour ids, then the rest (`mutants.order.ordered_nodeids`), so a run finds a kill in one test
where it can. The memo only orders: a mutant its last killer no longer kills still faces every
other test, and a survivor has faced the whole suite, so a stale memo costs time, never a verdict."""

from __future__ import annotations

import json
from pathlib import Path

MEMO = Path(__file__).resolve().parent / "killers.json"


def memo_key(mode_key: str) -> str:
    """The memo's key for a mode: its name without `-subset` (a subset run kills as the whole one)."""
    return mode_key.replace("-subset", "")


def load(path: Path, mode_key: str) -> dict[str, str]:
    """Mutant id -> last killer's node id for `mode_key`; empty when the memo or the mode is absent."""
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text()).get(memo_key(mode_key), {}))


def record(path: Path, mode_key: str, killers: dict[str, str]) -> None:
    """Merge `killers` (mutant id -> node id) into the memo's entry for `mode_key`, sorted, so that
    the file's diff shows what changed."""
    memo = json.loads(path.read_text()) if path.is_file() else {}
    entry = memo.setdefault(memo_key(mode_key), {})
    entry.update(killers)
    memo[memo_key(mode_key)] = dict(sorted(entry.items()))
    path.write_text(json.dumps(dict(sorted(memo.items())), indent=1) + "\n")
