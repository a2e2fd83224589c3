"""Modules that moved or left, still importable for one release: importing one warns
(DeprecationWarning) with its new place and hands out the new module's names; `properties.api` is
where hand-built cases import from. Installed by `properties/__init__.py`.

`MOVED` maps an old module to its new one. `LEGACY` holds names whose meaning changed with the move,
kept as they were: `properties.run_config.current()` (the run from the environment, as it read it)
and the four-argument `compare_untouched(model_before, model_after, before, after)`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

REMOVED_IN = "the next release"
MOVED: dict[str, str] = {
    "properties.call_checks": "properties.checks.calls",
    "properties.call_plan": "properties.checks.call_plan",
    "properties.compare": "properties.checks.compare",
    "properties.differences": "properties.checks.differences",
    "properties.forced_budget": "properties.checks.forced_budget",
    "properties.log_checks": "properties.checks.logs",
    "properties.mismatch": "properties.checks.mismatch",
    "properties.numerics": "properties.checks.numerics",
    "properties.outside": "properties.checks.outside",
    "properties.replay_oracle": "properties.checks.replay_oracle",
    "properties.world_state": "properties.checks.world_state",
    "properties.engine_pair": "properties.generations.pair",
    "properties.generation_checks": "properties.generations.checks",
    "properties.generation_oracle": "properties.generations.oracle",
    "properties.generation_reach": "properties.generations.reach",
    "properties.generation_report": "properties.generations.report",
    "properties.generation_run": "properties.generations.run",
    "properties.generation_spec": "properties.generations.spec",
    "properties.generation_strategies": "properties.generations.strategies",
    "properties.p9_figures": "properties.generations.figures",
    "properties.promote_generation": "properties.generations.promote",
    "properties.replay_generation": "properties.generations.replay",
    "properties.run_config": "properties.config",
}


def current() -> Any:
    """The run the environment asks for (`MTP_VERIFY_*`), as `properties.run_config.current()` gave it;
    now `RunConfig.build(options, os.environ)`, or the `run` fixture in a property."""
    from properties.config import RunConfig

    return RunConfig.build({}, os.environ)


def compare_untouched(*args: Any) -> Sequence[Any]:
    """`compare_untouched(before, after)`, also called as it once was, with the two models first
    (the caches are now part of the whole-world comparison, so the models are not read)."""
    from properties.checks.compare import compare_untouched as now

    if len(args) == 4:
        return now(args[2], args[3])
    return now(*args)


LEGACY: dict[str, dict[str, Callable[..., Any]]] = {
    "properties.run_config": {"current": current},
    "properties.compare": {"compare_untouched": compare_untouched},
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names of `MOVED` (never a module that exists) and makes each a module whose
    names come from its new place, with a warning when it is imported."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        old, new = module.__name__, MOVED[module.__name__]
        warnings.warn(
            f"{old} moved to {new}; import from properties.api (or {new}): {old} goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        target = importlib.import_module(new)
        legacy = LEGACY.get(old, {})
        module.__dict__.update(legacy)
        module.__getattr__ = lambda attr: getattr(target, attr)  # type: ignore[method-assign]
        module.__dir__ = lambda: sorted(set(dir(target)) | set(legacy))  # type: ignore[method-assign]


def install() -> None:
    """Put the finder on `sys.meta_path` once."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
