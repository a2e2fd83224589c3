"""Everything a step could change besides its world, and a check that it changed none of it.

A step may change the world it is given (sequences, caches, checkpoints, scheduler context: the
comparator holds all of that to the reference) and nothing else; nor may the implementation's
`prepare_model`, which the harness watches with the step (it may build new objects, never change
existing ones). Outside the world are:
- the model objects: their configuration, weights object, numerics and device, and their answers to
  the envelope queries (vocabulary, group cap, meta stride, batched-verify room)
  (`properties.sides.outside_facts`);
- the weights' values, held bit for bit to a copy taken the first time they were seen (worlds share
  weights, so a step that wrote them would change the reference's model too, and every later world;
  `properties.sides.outside_weights`);
- the process: the global random generators (torch, CUDA, `random`, NumPy), torch's global flags,
  the environment and the scheduler's and the root logger's configuration (`outside_facts`);
- every global of every module of the watched packages (`properties.sides.outside_scope`): every
  loaded top-level package outside the standard library, the libraries the suite depends on (and
  theirs) and the suite's own `properties`, so the implementation's helpers in another package of
  its own too, however the step reaches them; and the roots, the spec's `reference` and `batched`
  and the implementation's, even when a library. Dunder-named globals are watched (`__cache__`,
  `__counter__`, a module's `__getattr__`) except `MODULE_STANDARD`, which the import system and
  the warnings module keep; so is the binding the import system makes for a submodule imported
  during the step. A module first imported during the step has no state before it, and is not
  compared.

A global is fingerprinted by value, recursively, up to `MAX_DEPTH` levels
(`properties.sides.outside_fingerprint` says how, kind by kind): data and containers (`deque`,
`array.array`, `SimpleNamespace`, weak mappings among them), tensors and NumPy arrays by a hash of
their bytes (a write through `.data` or `.numpy()` moves no version counter), generators by their
state; and the implementation's and the spec's code (what no library, the standard library nor the
suite defines): its functions by their defaults, closure cells and attributes (a factory's closure
kept as another module's global too), its classes by their attributes (their methods' defaults
among them), its objects by their `__dict__` and the slots of every class in their MRO. A function
or class another module binds under its own name is fingerprinted there, and here only by identity;
libraries' functions and classes by identity, as code. A change is reported by global and by the
first attribute or key within it that differs (`first_difference`).

What is compared by identity only though it may hold state (an object of a library's class, a
closure a library made, a structure deeper than `MAX_DEPTH`) does not fail the check, but is
recorded: `Outside.unfingerprinted` by `module.global`, `unwatched(packages)` for a given
implementation, and the report of any change names it (`not_fingerprinted`: "not fingerprinted:
module.global (kind), ..."). A cache a module needs for the life of the process goes behind a
function (`functools.cache`), whose contents are not module state. Weights a step wrote are put
back before anything else runs, so one bad example cannot spoil the next.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import xgrammar  # noqa: F401  (see below)

from properties.sides.outside_facts import model_facts, process_facts
from properties.sides.outside_fingerprint import MAX_DEPTH, Named, Walk, bound_in_its_module
from properties.sides.outside_scope import SUITE_PACKAGE, modules_of, watched_packages

# xgrammar is imported here, where steps are watched, though the spec imports it only where it first
# builds a grammar (to keep the job's controller light): importing it may touch the global random
# generators (on a GPU host it does), and a first import inside a watched step would read as the
# step's change, or inside a strategy's draw as a use of `random`.

__all__ = [
    "MAX_DEPTH",
    "SUITE_PACKAGE",
    "Outside",
    "changes",
    "model_facts",
    "not_fingerprinted",
    "process_facts",
    "snapshot",
    "unwatched",
]

# The packages every step reaches: the spec and the batched model operations it runs on.
SPEC_PACKAGES = ("reference", "batched")
# A module's globals that are not its state: what the import system sets, and the warnings module's
# registry of warnings already shown (a step that warns once would otherwise change it).
MODULE_STANDARD = frozenset(
    {"__name__", "__doc__", "__file__", "__loader__", "__spec__", "__package__", "__path__"}
    | {"__builtins__", "__cached__", "__all__", "__annotations__", "__warningregistry__"}
)
NOTED = 12  # unfingerprinted globals named in a report; the rest counted


@dataclass(slots=True)
class Outside:
    """A snapshot: `facts` by name (model objects and process), `modules` by module then global, and
    `unfingerprinted`: by `module.global`, the kinds within it compared by identity only; and the
    packages it watched."""

    facts: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    unfingerprinted: dict[str, str] = field(default_factory=dict)
    packages: frozenset[str] = frozenset()  # the packages whose modules it watched


def packages_of(*names: str) -> tuple[str, ...]:
    """The top-level packages of modules named `names` (dotted), with the spec's, never the suite's
    own: the roots, watched even when libraries (`properties.sides.outside_scope`)."""
    tops = [n.split(".", 1)[0] for n in names if n]
    return tuple(dict.fromkeys(p for p in (*SPEC_PACKAGES, *tops) if p != SUITE_PACKAGE))


def snapshot(models: Sequence[Any], packages: Sequence[str], like: Outside | None = None) -> Outside:
    """What `models` and the process look like now, with the globals of every module of the packages
    watched with roots `packages` (see the module docstring), or of the packages `like` watched (the
    snapshot before, so that the two compare the same modules)."""
    out = model_snapshot(models)
    out.facts.update(process_facts())
    out.packages = like.packages if like is not None else watched_packages(packages)
    out.modules, out.unfingerprinted = module_state(out.packages)
    return out


def model_snapshot(models: Sequence[Any], first: int = 0) -> Outside:
    """The facts of `models` alone, numbered from `first` (a model made after the first snapshot)."""
    out = Outside()
    for i, m in enumerate(models, first):
        out.facts.update({f"model {i} ({type(m).__name__}) {k}": v for k, v in model_facts(m).items()})
    return out


def module_state(packages: frozenset[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """By module of `packages` then global, the fingerprints of their state; and by `module.global`,
    the kinds compared by identity only within it."""
    walk, modules, gaps = Walk(), {}, {}
    for name, module in modules_of(sorted(packages)):
        state: dict[str, Any] = {}
        for k, v in list(vars(module).items()):
            if k in MODULE_STANDARD or _own_submodule(name, k, v):
                continue
            walk.gaps = []
            state[k] = ("id", id(v)) if _imported(v, name) else walk.of(v)
            if walk.gaps:
                gaps[f"{name}.{k}"] = ", ".join(sorted(set(walk.gaps)))
        modules[name] = state
    return modules, gaps


def unwatched(packages: Sequence[str]) -> list[tuple[str, str]]:
    """(`module.global`, the kinds within it compared by identity only) for every global that holds
    such a kind, in the packages watched with roots `packages` (an implementation's
    `packages_of(...)`): where a change would go unseen."""
    return sorted(module_state(watched_packages(packages))[1].items())


def _own_submodule(module: str, name: str, v: Any) -> bool:
    """Whether global `name` of `module` is the binding the import system makes for its submodule
    `module.name` (a step may import code lazily); like the standard names, not the module's state."""
    return isinstance(v, types.ModuleType) and v.__name__ == f"{module}.{name}"


def _imported(v: Any, module: str) -> bool:
    """A function or class another module defines and binds under its own name: its state is
    fingerprinted there (when watched), and here only whether the name still holds it."""
    return (
        isinstance(v, types.FunctionType | type)
        and getattr(v, "__module__", module) != module
        and bound_in_its_module(v)
    )


def changes(before: Outside, after: Outside) -> list[tuple[str, str, str]]:
    """(what, before, after) for every fact and module global that differs."""
    out = []
    for k, v in before.facts.items():
        if after.facts.get(k) != v:
            out.append((k, _short(v), _short(after.facts.get(k))))
    for mod, names in before.modules.items():
        now = after.modules.get(mod, {})
        for k in sorted(set(names) | set(now)):
            was, is_ = names.get(k, _MISSING), now.get(k, _MISSING)
            if was != is_:
                where, was, is_ = first_difference(was, is_)
                out.append((f"module {mod} global {k}{where}", _short(was), _short(is_)))
    return out


def first_difference(a: Any, b: Any, where: str = "") -> tuple[str, Any, Any]:
    """Where fingerprints `a` and `b` first differ (`.attribute` or `[key]` steps), and the parts
    that differ there."""
    if not (isinstance(a, tuple) and isinstance(b, tuple)):
        return where, a, b
    if isinstance(a, Named) and isinstance(b, Named):
        x, y = dict(a), dict(b)
        k = next((k for k in sorted(set(x) | set(y)) if x.get(k, _MISSING) != y.get(k, _MISSING)), None)
        if k is not None:
            step = f".{k}" if k.isidentifier() else f"[{k}]"
            return first_difference(x.get(k, _MISSING), y.get(k, _MISSING), where + step)
    elif len(a) == len(b):
        i = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)
        if i is not None:
            return first_difference(a[i], b[i], where)
    return where, a, b


def not_fingerprinted(snap: Outside, limit: int = NOTED) -> str | None:
    """One line naming what `snap` compared by identity only (`not fingerprinted: module.global
    (kinds), ...`, at most `limit` named), or None when it fingerprinted everything by value."""
    if not snap.unfingerprinted:
        return None
    items = sorted(snap.unfingerprinted.items())
    named = ", ".join(f"{k} ({kinds})" for k, kinds in items[:limit])
    more = f", and {len(items) - limit} more" if len(items) > limit else ""
    return f"not fingerprinted: {named}{more} (compared by identity only: a change inside would go unseen)"


_MISSING = ("<missing>",)


def _short(v: Any, limit: int = 160) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."
