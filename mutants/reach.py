"""Which catalogue mutants another implementation under test can meet: those whose changed code it
runs. The catalogue is written against the literal batched step; a second implementation shares
some of that code (the model's batched operations, `select_rows`, `propose_from_stash`, the gate)
and replaces the rest. A mutant applies to it when the function its edits sit in runs while the
implementation's step runs on the suite's own examples (measured with a profiler hook over a fixed
sample of the side-by-side properties' strategies), or lives in code the suite checks without any
implementation (the gate and dispatch).
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from mutants.spec import Mutant

if TYPE_CHECKING:
    from properties.impl import Impl

ROOT = Path(__file__).resolve().parent.parent
SHARED_FILES = frozenset({"batched/gate.py", "batched/dispatch.py"})  # checked by P2 whatever the impl
SAMPLE = 15  # examples of each strategy the step is traced on


def enclosing(file: str, snippet: str, root: Path = ROOT) -> str:
    """The qualified name (Class.method or function) of the innermost function holding the first
    line of `snippet` in `file`; "" when the snippet sits outside any function. ValueError when the
    snippet is not in the file."""
    text = (root / file).read_text()
    at = text.find(snippet)
    if at < 0:
        raise ValueError(f"{file}: mutant snippet not found: {snippet[:60]!r}")
    line = text.count("\n", 0, at) + 1
    best = ""

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                child.lineno <= line <= (child.end_lineno or child.lineno)
            ):
                best = f"{prefix}{child.name}"
                visit(child, f"{prefix}{child.name}.<locals>.")

    visit(ast.parse(text), "")
    return best


def sample_specs(count: int) -> list[Any]:
    """A fixed sample of the worlds the side-by-side properties draw: general mixes with and without
    faults, and the worlds aimed at groups, the argmax path, proposing mixes and the meta stride."""
    from properties.config import RunConfig
    from properties.worlds.aimed_worlds import greedy_worlds, group_worlds, proposing_worlds, stride_worlds
    from properties.worlds.fixed_sample import fixed_sample
    from properties.worlds.strategies import world_specs

    run = RunConfig()  # the CPU in exact numerics: which code runs does not depend on the numerics
    strategies = (world_specs(run), world_specs(run, faults=True), group_worlds(run), proposing_worlds(run),
                  greedy_worlds(run), stride_worlds(run))  # fmt: skip
    return [spec for s in strategies for spec in fixed_sample(s, count)]


def traced_functions(impl: Impl, count: int = SAMPLE) -> frozenset[tuple[str, str]]:
    """(file relative to the project, qualified name) of every project function that ran while
    `impl` ran as the implementation of `sample_specs(count)`."""
    from properties.sides.harness import run_side_by_side

    seen: set[tuple[str, str]] = set()
    root = str(ROOT) + "/"
    active = False

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if active and event == "call":
            path = frame.f_code.co_filename
            if path.startswith(root):
                seen.add((path[len(root) :], frame.f_code.co_qualname))

    def traced(*args: Any) -> Any:
        nonlocal active
        active = True
        try:
            return impl.step(*args)
        finally:
            active = False

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        for spec in sample_specs(count):
            run_side_by_side(spec, impl.with_step(traced))
    finally:
        sys.setprofile(previous)
    return frozenset(seen)


@functools.lru_cache(maxsize=4)
def reached_by(impl: str) -> frozenset[tuple[str, str]]:
    """`traced_functions` of the implementation `impl` (module:function)."""
    from properties.impl import load

    return traced_functions(load(impl))


def applies(m: Mutant, reached: frozenset[tuple[str, str]], root: Path = ROOT) -> bool:
    """Whether mutant `m` changes code in `reached` (or code the suite checks without an
    implementation): some edit sits in a function that ran, or in a shared file."""
    if m.file in SHARED_FILES:
        return True
    names = {enclosing(m.file, e.original, root) for e in m.edits}
    return any((m.file, n) in reached for n in names if n)
