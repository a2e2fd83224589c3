"""The public API (`properties.api`) as plain text: each name of `__all__` with its kind and, for a
class or function, its parameters (name, annotation, default) and return annotation. `tests/test_api.py`
holds it to `tests/api_pin.txt`; `python -m tests.api_pin > tests/api_pin.txt` rewrites the pin after
a deliberate change (and a removed name gets its shim in `properties.moved`)."""

from __future__ import annotations

import argparse
import enum
import inspect
from pathlib import Path
from typing import Any

import properties.api as api


def shown(value: Any) -> str:
    """A default as a stable string: functions by name, paths relative to nothing, the rest by repr."""
    if isinstance(value, tuple):
        return "(" + ", ".join(shown(v) for v in value) + ")"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    if isinstance(value, Path):
        return f"Path({value.name!r})"
    return repr(value)


def describe(name: str) -> str:
    """One line for `name`."""
    obj = getattr(api, name)
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return f"enum {name}({', '.join(f'{m.name}={m.value!r}' for m in obj)})"
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return f"{name}: {type(obj).__name__}"
    sig = inspect.signature(obj)
    params = []
    for p in sig.parameters.values():
        text = p.name + (f": {p.annotation}" if p.annotation is not p.empty else "")
        if p.default is not p.empty:
            text += f" = {shown(p.default)}"
        params.append(text)
    kind = "class" if inspect.isclass(obj) else "def"
    returns = "" if inspect.isclass(obj) else f" -> {sig.return_annotation}"
    return f"{kind} {name}({', '.join(params)}){returns}"


def pin() -> str:
    return "\n".join(describe(n) for n in sorted(api.__all__)) + "\n"


if __name__ == "__main__":
    argparse.ArgumentParser(prog="python -m tests.api_pin", description=__doc__).parse_args()
    print(pin(), end="")
