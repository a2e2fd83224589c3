"""The comparators: worlds, calls, logs, the replay oracle, what a step may not change. The checks a
case runs are importable from here (`from properties.checks import check_equivalence`), loaded on
first use so that importing one submodule does not import them all; `properties.api` holds them
too."""

from __future__ import annotations

import importlib
from typing import Any

WHERE = {
    "check_equivalence": "properties.checks.compare",
    "compare_untouched": "properties.checks.compare",
    "check_calls": "properties.checks.calls",
    "check_failures_explained": "properties.checks.calls",
    "check_logs": "properties.checks.logs",
    "Mismatch": "properties.sides.mismatch",
}
__all__ = sorted(WHERE)


def __getattr__(name: str) -> Any:
    if name not in WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(WHERE))
