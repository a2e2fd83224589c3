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
from types import CodeType, ModuleType
from typing import Any

REMOVED_IN = "the next release"
MOVED: dict[str, str] = {
    "properties.aimed_worlds": "properties.worlds.aimed_worlds",
    "properties.call_checks": "properties.checks.calls",
    "properties.call_plan": "properties.sides.call_plan",
    "properties.checks.call_plan": "properties.sides.call_plan",
    "properties.checks.forcing": "properties.sides.forcing",
    "properties.checks.mismatch": "properties.sides.mismatch",
    "properties.checks.numerics": "properties.tolerance",
    "properties.checks.outside": "properties.sides.outside",
    "properties.checks.outside_facts": "properties.sides.outside_facts",
    "properties.checks.outside_fingerprint": "properties.sides.outside_fingerprint",
    "properties.checks.outside_kinds": "properties.sides.outside_kinds",
    "properties.checks.outside_scope": "properties.sides.outside_scope",
    "properties.checks.outside_weights": "properties.sides.outside_weights",
    "properties.checks.own_noise": "properties.sides.own_noise",
    "properties.checks.replay_oracle": "properties.sides.replay_oracle",
    "properties.compare": "properties.checks.compare",
    "properties.corner_reach": "properties.worlds.corner_reach",
    "properties.corners": "properties.worlds.corners",
    "properties.covering_worlds": "properties.worlds.covering_worlds",
    "properties.databases": "properties.run.databases",
    "properties.differences": "properties.checks.differences",
    "properties.dispatch_checks": "properties.step.dispatch_check",
    "properties.draws": "properties.worlds.draws",
    "properties.engine_pair": "properties.generations.pair",
    "properties.fault_kinds": "properties.worlds.fault_kinds",
    "properties.fault_plans": "properties.worlds.fault_plans",
    "properties.faults": "properties.sides.faults",
    "properties.fixed_sample": "properties.worlds.fixed_sample",
    "properties.forced_budget": "properties.checks.forced_budget",
    "properties.fresh_process": "properties.run.fresh_process",
    "properties.gate_worlds": "properties.worlds.gate_worlds",
    "properties.generation_checks": "properties.generations.checks",
    "properties.generation_oracle": "properties.generations.oracle",
    "properties.generation_reach": "properties.generations.reach",
    "properties.generation_report": "properties.generations.report",
    "properties.generation_run": "properties.generations.run",
    "properties.generation_spec": "properties.generations.spec",
    "properties.generation_strategies": "properties.generations.strategies",
    "properties.gpu": "properties.run.gpu",
    "properties.grammars": "properties.worlds.grammars",
    "properties.harness": "properties.sides.harness",
    "properties.log_checks": "properties.checks.logs",
    "properties.mismatch": "properties.sides.mismatch",
    "properties.model_strategies": "properties.worlds.model_strategies",
    "properties.numerics": "properties.tolerance",
    "properties.outside": "properties.sides.outside",
    "properties.p9_figures": "properties.generations.figures",
    "properties.plugin": "properties.run.plugin",
    "properties.promote_generation": "properties.generations.promote",
    "properties.regression_files": "properties.failures.regression_files",
    "properties.replay_generation": "properties.generations.replay",
    "properties.replay_oracle": "properties.sides.replay_oracle",
    "properties.report": "properties.failures.report",
    "properties.row_shaping": "properties.worlds.row_shaping",
    "properties.run_config": "properties.config",
    "properties.seq_strategies": "properties.worlds.seq_strategies",
    "properties.shard_budget": "properties.run.shard_budget",
    "properties.shards": "properties.run.shards",
    "properties.side_by_side": "properties.sides.side_by_side",
    "properties.specs": "properties.worlds.specs",
    "properties.stats": "properties.sides.stats",
    "properties.strategies": "properties.worlds.strategies",
    "properties.summary_plugin": "properties.run.summary_plugin",
    "properties.translate": "properties.sides.translate",
    "properties.verify": "properties.run.verify",
    "properties.wide_worlds": "properties.worlds.wide_worlds",
    "properties.world": "properties.worlds.world",
    "properties.world_state": "properties.checks.world_state",
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

    def get_code(self, name: str) -> CodeType:
        """`python -m <old>`: says where the command went, then runs the new module as `__main__`."""
        new = MOVED[name]
        source = (
            "import runpy, sys\n"
            f"print('python -m {name} moved to python -m {new}; the old name goes in {REMOVED_IN}', file=sys.stderr)\n"
            f"runpy.run_module({new!r}, run_name='__main__', alter_sys=True)\n"
        )
        return compile(source, f"<moved {name}>", "exec")


def install() -> None:
    """Put the finder on `sys.meta_path` once."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
