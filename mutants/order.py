"""Which property tests run first for a mutant: the test that killed it last time (the killers' memo,
`mutants/killers.json`), the tests whose `@covers` names one of the mutant's behaviour ids, then every
other test of the suite, so that a kill is found fast and a survivor has faced the whole suite. The
suite is read from the source (no import), so the order costs nothing. The memo only orders: a
mutant its last killer no longer kills still faces every other test, so a stale memo costs time,
never a verdict."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

SUITE_DIR = "properties"
MEMO = Path(__file__).resolve().parent / "killers.json"


@dataclass(slots=True, frozen=True)
class SuiteTest:
    """One test function of the suite: its pytest node id, the behaviour ids it covers and the
    property it belongs to (the first argument of its `@covers`, "" without one)."""

    nodeid: str
    ids: frozenset[str]
    prop: str = ""


def _covers(fn: ast.FunctionDef) -> list[list[str]]:
    """The string arguments of each `@covers(...)` decorator of `fn`."""
    calls = [d for d in fn.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "covers"]
    return [[a.value for a in c.args if isinstance(a, ast.Constant) and isinstance(a.value, str)] for c in calls]


def suite_tests(root: Path, suite_dir: str = SUITE_DIR) -> list[SuiteTest]:
    """Every module-level `test_*` function of `suite_dir/test_*.py`, in file and source order."""
    out: list[SuiteTest] = []
    for path in sorted((root / suite_dir).rglob("test_*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                covers = _covers(node)
                ids = frozenset(i for args in covers for i in args[1:])
                prop = next((args[0] for args in covers if args), "")
                out.append(SuiteTest(f"{rel}::{node.name}", ids, prop))
    return out


def ordered_nodeids(tests: list[SuiteTest], ids: tuple[str, ...], last_killer: str | None = None) -> list[str]:
    """All node ids: the test of `last_killer` first when it is still a test of the suite (the whole
    function of a parametrized case: pytest merges a case given before its function into the
    function, in the function's place), then those covering the most of `ids` (ties keep suite
    order), then the rest in suite order. Each test appears once."""
    wanted = set(ids)
    hits = [(len(t.ids & wanted), i, t.nodeid) for i, t in enumerate(tests) if t.ids & wanted]
    first = [nodeid for _, _, nodeid in sorted(hits, key=lambda h: (-h[0], h[1]))]
    order = first + [t.nodeid for t in tests if t.nodeid not in first]
    killer = None if last_killer is None else last_killer.partition("[")[0]
    return [killer] + [n for n in order if n != killer] if killer in order else order


def memo_key(mode_key: str) -> str:
    """The memo's key for a mode: its name without `-subset` (a subset run kills as the whole one)."""
    return mode_key.replace("-subset", "")


def load_killers(path: Path, mode_key: str) -> dict[str, str]:
    """Mutant id -> last killer's node id for `mode_key`; empty when the memo or the mode is absent."""
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text()).get(memo_key(mode_key), {}))


def record_killers(path: Path, mode_key: str, killers: dict[str, str]) -> None:
    """Merge `killers` (mutant id -> node id) into the memo's entry for `mode_key`, sorted, so that
    the file's diff shows what changed."""
    memo = json.loads(path.read_text()) if path.is_file() else {}
    entry = memo.setdefault(memo_key(mode_key), {})
    entry.update(killers)
    memo[memo_key(mode_key)] = dict(sorted(entry.items()))
    path.write_text(json.dumps(dict(sorted(memo.items())), indent=1) + "\n")
