"""Which property tests run first for a mutant: the test that killed it last time
(`mutants.killers`), the tests whose `@covers` names one of the mutant's behaviour ids, then every
other test of the suite, so that a kill is found fast and a survivor has faced the whole suite.
Read from the source (no import), so the order costs nothing."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SUITE_DIR = "properties"


@dataclass(slots=True, frozen=True)
class SuiteTest:
    """One test function of the suite: its pytest node id, the behaviour ids it covers and the
    property it belongs to (the first argument of its `@covers`, "" without one)."""

    nodeid: str
    ids: frozenset[str]
    prop: str = ""


def _covers_calls(fn: ast.FunctionDef) -> list[ast.Call]:
    return [
        d
        for d in fn.decorator_list
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "covers"
    ]


def _strings(args: list[ast.expr]) -> list[str]:
    return [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def _covered_ids(fn: ast.FunctionDef) -> frozenset[str]:
    """The behaviour ids named by `fn`'s `@covers(...)` decorators."""
    return frozenset(i for d in _covers_calls(fn) for i in _strings(d.args[1:]))


def _property(fn: ast.FunctionDef) -> str:
    """The property `fn`'s first `@covers(...)` names, or ""."""
    names = [n for d in _covers_calls(fn) for n in _strings(d.args[:1])]
    return names[0] if names else ""


def suite_tests(root: Path, suite_dir: str = SUITE_DIR) -> list[SuiteTest]:
    """Every module-level `test_*` function of `suite_dir/test_*.py`, in file and source order."""
    out: list[SuiteTest] = []
    for path in sorted((root / suite_dir).rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(root).as_posix()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                out.append(SuiteTest(f"{rel}::{node.name}", _covered_ids(node), _property(node)))
    return out


def ordered_nodeids(tests: list[SuiteTest], ids: tuple[str, ...], last_killer: str | None = None) -> list[str]:
    """All node ids: `last_killer` first when it is still a test of the suite, then those covering
    the most of `ids` (ties keep suite order), then the rest in suite order. Each test appears once."""
    wanted = set(ids)
    hits = [(len(t.ids & wanted), i, t.nodeid) for i, t in enumerate(tests) if t.ids & wanted]
    first = [nodeid for _, _, nodeid in sorted(hits, key=lambda h: (-h[0], h[1]))]
    if last_killer is not None and any(t.nodeid == last_killer for t in tests):
        first = [last_killer] + [n for n in first if n != last_killer]
    return first + [t.nodeid for t in tests if t.nodeid not in first]
