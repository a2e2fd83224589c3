"""`properties/` is laid out by stage, and its imports point one way: a module imports only modules
of its own stage or an earlier one. The stages, in order: the root's shared vocabulary (the run's
configuration, the implementation registry, tolerances, behaviour ids, per-test counters, the
Hypothesis internals every stage may need behind their version pin), `worlds`
(what an example is), `sides` (both sides of one example, settled), `checks` (the comparators),
`failures` (report, replay, promotion), `run` (plugin, jobs, spreading examples over workers), then
the properties themselves (`step`, `sampling`, `generations`, `self_tests`) and the two facades at
the top: the public API `properties.api` and the one replay and one promote command (`properties.replay`,
`properties.promote`). Every import counts, a lazy one inside a function too.

A new backward arrow fails here: move the code to the stage it belongs to, or add it to `BACKWARD`
with the reason it has to point back."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = ROOT / "properties"
ROOT_MODULES = {"__init__", "config", "impl", "behaviours", "counters", "tolerance", "moved", "hypothesis_internals"}
STAGES = ("root", "worlds", "sides", "checks", "failures", "run", "properties")
TOP = {"step", "sampling", "generations", "self_tests"}
# (importer, imported): why the arrow points back.
BACKWARD: dict[tuple[str, str], str] = {
    ("properties.sides.harness", "properties.failures.report"): (
        "run_side_by_side raises the report of a step that changed state outside its world itself, "
        "so that no caller can run a step unguarded"
    ),
    ("properties.moved", "properties.checks.compare"): (
        "the old four-argument compare_untouched, kept for one release, calls the new one (lazily)"
    ),
}
# The root modules a file may keep beside the stages (each holds what every stage shares).
FACADES = {"api", "replay", "promote"}  # root files at the top of the order: they may import every stage
MAX_ROOT_FILES = len(ROOT_MODULES) + len(FACADES)


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def stage_of(module: str) -> int:
    parts = module.split(".")
    if (len(parts) == 2 and parts[1] in ROOT_MODULES) or module == "properties":
        return 0
    if parts[1] in FACADES or parts[1] in TOP:
        return STAGES.index("properties")
    return STAGES.index(parts[1])


def imports_of(path: Path) -> set[str]:
    """Every `properties.*` module `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("properties")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("properties"):
            for a in node.names:  # `from properties.sides import harness` imports the module itself
                sub = f"{node.module}.{a.name}"
                found.add(sub if (PROPERTIES.parent / (sub.replace(".", "/") + ".py")).exists() else node.module)
    return found - {"properties", "properties.moved"}


def arrows() -> list[tuple[str, str]]:
    out = []
    for path in sorted(PROPERTIES.rglob("*.py")):
        importer = module_of(path)
        out += [(importer, imported) for imported in sorted(imports_of(path))]
    return out


def backward_arrows() -> list[tuple[str, str]]:
    return [(a, b) for a, b in arrows() if stage_of(b) > stage_of(a)]


def test_every_module_sits_in_a_stage():
    folders = {p.name for p in PROPERTIES.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(STAGES[1:-1]) | TOP, f"packages of properties/ besides the stages: {folders}"
    root_files = sorted(p.stem for p in PROPERTIES.glob("*.py"))
    assert set(root_files) <= ROOT_MODULES | FACADES, f"root modules outside the shared vocabulary: {root_files}"
    assert len(root_files) <= MAX_ROOT_FILES


def test_imports_point_one_way():
    found = backward_arrows()
    unexplained = [f"{a} imports {b}" for a, b in found if (a, b) not in BACKWARD]
    assert not unexplained, "imports against the stage order:\n" + "\n".join(unexplained)


def test_every_explained_arrow_still_exists():
    found = set(backward_arrows())
    stale = [f"{a} -> {b}" for a, b in BACKWARD if (a, b) not in found]
    assert not stale, f"BACKWARD explains arrows that no longer exist (remove them): {stale}"


def test_a_backward_arrow_is_seen(tmp_path, monkeypatch):
    """The check itself: a world module importing the harness is an arrow against the order."""
    fake = tmp_path / "properties" / "worlds" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from properties.sides.harness import run_step\n")
    assert imports_of(fake) == {"properties.sides.harness"}
    assert stage_of("properties.sides.harness") > stage_of("properties.worlds.bad")
