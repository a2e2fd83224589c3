"""Everything a step could change besides its world, and a check that it changed none of it.

A step may change the world it is given (sequences, caches, checkpoints, scheduler context: the
comparator holds all of that to the reference) and nothing else. Outside the world are:
- the model objects: their configuration, weights, numerics and device, and their answers to the
  envelope queries (vocabulary, group cap, meta stride, batched-verify room);
- the weights' values, held bit for bit to a copy taken the first time they were seen (worlds share
  weights, so a step that wrote them would change the reference's model too, and every later world);
- the process: the globals of every module of the implementation's packages and of the spec's (a
  flag, a counter, a cache keyed by request, a class attribute, a function's defaults), the global
  random generators (torch, CUDA, `random`, NumPy), torch's global flags, the environment, and the
  scheduler logger's configuration.

Module state is fingerprinted by value, recursively, for data and for objects of classes the watched
packages define; other objects by identity. A cache a module needs for the life of the process goes
behind a function (`functools.cache`), whose contents are not module state. Weights a step wrote are
put back before anything else runs, so one bad example cannot spoil the next.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
import os
import random
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import xgrammar  # noqa: F401  (see below)

from reference.telemetry import LOGGER_NAME

# xgrammar is imported here, where steps are watched, though the spec imports it only where it first
# builds a grammar (to keep the job's controller light): importing it may touch the global random
# generators (on a GPU host it does), and a first import inside a watched step would read as the
# step's change, or inside a strategy's draw as a use of `random`.

# The packages every step reaches: the spec and the batched model operations it runs on.
SPEC_PACKAGES = ("reference", "batched")
SUITE_PACKAGE = "properties"  # the suite's own state (counters, captures) is never the step's
MAX_DEPTH = 8


@dataclass(slots=True)
class Outside:
    """A snapshot: `facts` by name (model objects and process), `modules` by module then global."""

    facts: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)


def packages_of(*names: str) -> tuple[str, ...]:
    """The top-level packages to watch for modules named `names` (dotted), with the spec's, never
    the suite's own. Modules are watched by their top-level package."""
    tops = [n.split(".", 1)[0] for n in names if n]
    return tuple(dict.fromkeys(p for p in (*SPEC_PACKAGES, *tops) if p != SUITE_PACKAGE))


def snapshot(models: Sequence[Any], packages: Sequence[str]) -> Outside:
    """What `models` and the process look like now (see the module docstring)."""
    out = Outside()
    for i, m in enumerate(models):
        out.facts.update({f"model {i} ({type(m).__name__}) {k}": v for k, v in model_facts(m).items()})
    out.facts.update(process_facts())
    watched, memo = tuple(packages), {}
    for name, module in list(sys.modules.items()):
        if module is not None and _watched(name, watched):
            out.modules[name] = {
                k: ("id", id(v)) if _imported(v, name) else _fingerprint(v, watched, memo, 0, frozenset())
                for k, v in list(vars(module).items())
                if not (k.startswith("__") and k.endswith("__")) and not _own_submodule(name, k, v)
            }
    return out


def _own_submodule(module: str, name: str, v: Any) -> bool:
    """Whether global `name` of `module` is the binding the import system makes for its submodule
    `module.name` (a step may import code lazily); like the dunder names, not the module's state."""
    return isinstance(v, types.ModuleType) and v.__name__ == f"{module}.{name}"


def _imported(v: Any, module: str) -> bool:
    """A function or class another module defines: its state is fingerprinted there, and here only
    whether the name still holds it."""
    return isinstance(v, types.FunctionType | type) and getattr(v, "__module__", module) != module


def changes(before: Outside, after: Outside) -> list[tuple[str, str, str]]:
    """(what, before, after) for every fact and module global that differs."""
    out = []
    for k, v in before.facts.items():
        if after.facts.get(k) != v:
            out.append((k, _short(v), _short(after.facts.get(k))))
    for mod, names in before.modules.items():
        now = after.modules.get(mod, {})
        for k in sorted(set(names) | set(now)):
            if names.get(k, _MISSING) != now.get(k, _MISSING):
                out.append((f"module {mod} global {k}", _short(names.get(k)), _short(now.get(k))))
    return out


_MISSING = ("<missing>",)


# -- the model objects ----------------------------------------------------------------------------
def model_facts(model: Any) -> dict[str, Any]:
    """The model's configuration, weights object, numerics, device and envelope answers."""
    facts: dict[str, Any] = {}
    for attr in ("cfg", "weights", "nm", "device", "meta_stride"):
        if hasattr(model, attr):
            v = getattr(model, attr)
            facts[attr] = ("object", id(v)) if attr == "weights" else v
    queries = {
        "vocab_size()": lambda: model.vocab_size(),
        "dflash_gamma()": lambda: model.dflash_gamma(),
        "decode_logits_fp32()": lambda: model.decode_logits_fp32(),
        "mtp_propose_batch_max()": lambda: model.mtp_propose_batch_max(),
        "propose_meta_stride()": lambda: model.propose_meta_stride(),
    }
    for name, ask in queries.items():
        try:
            facts[name] = ask()
        except Exception as e:  # an answer that fails is a fact too
            facts[name] = f"raises {type(e).__name__}"
    capacity = getattr(getattr(model, "cfg", None), "stash_capacity", 2)
    for n in sorted({1, 2, max(capacity, 1), capacity + 1}):
        try:
            facts[f"can_batch_verify([2] * {n})"] = model.can_batch_verify([2] * n)
        except Exception as e:
            facts[f"can_batch_verify([2] * {n})"] = f"raises {type(e).__name__}"
    return facts


# -- the process ------------------------------------------------------------------------------------
def process_facts() -> dict[str, Any]:
    """The global random generators, torch's global flags, the environment and the logger."""
    facts: dict[str, Any] = {
        "torch CPU random state": bytes(torch.get_rng_state().numpy()),
        "Python random state": random.getstate(),
        "environment": dict(os.environ),
        "torch default dtype": torch.get_default_dtype(),
        "torch threads": torch.get_num_threads(),
        "torch grad mode": torch.is_grad_enabled(),
        "torch deterministic algorithms": (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        "torch float32 matmul precision": torch.get_float32_matmul_precision(),
        "torch matmul reduced precision": (
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        ),
        "torch cudnn flags": (
            torch.backends.cudnn.enabled,
            torch.backends.cudnn.allow_tf32,
            torch.backends.cudnn.benchmark,
            torch.backends.cudnn.deterministic,
        ),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        facts["torch CUDA random states"] = tuple(bytes(s.numpy()) for s in torch.cuda.get_rng_state_all())
    np = sys.modules.get("numpy")
    if np is not None:
        kind, keys, pos, gauss, cached = np.random.get_state()
        facts["NumPy random state"] = (kind, bytes(keys.tobytes()), pos, gauss, cached)
    for name in (LOGGER_NAME, ""):
        lg = logging.getLogger(name)
        facts[f"logger {name or 'root'}"] = (
            lg.level,
            lg.disabled,
            lg.propagate,
            tuple(id(h) for h in lg.handlers),
            tuple(id(f) for f in lg.filters),
        )
    return facts


# -- module state -----------------------------------------------------------------------------------
def _watched(module_name: str, packages: tuple[str, ...]) -> bool:
    return module_name.partition(".")[0] in packages


def _owned(obj: Any, packages: tuple[str, ...]) -> bool:
    return _watched(getattr(obj, "__module__", "") or "", packages)


def _fingerprint(v: Any, packages: tuple[str, ...], memo: dict[int, Any], depth: int, seen: frozenset[int]) -> Any:
    """A value that compares equal exactly when `v` holds the same state (see the module docstring).
    `memo` keeps the fingerprints of functions and classes, which many modules import."""
    if v is None or isinstance(v, bool | int | str | bytes):
        return v
    if isinstance(v, float | complex):
        return repr(v)  # NaN equal to NaN
    if isinstance(v, enum.Enum | types.ModuleType | types.BuiltinFunctionType | torch.dtype | torch.device):
        return ("id", id(v))
    if isinstance(v, torch.Tensor):
        return ("tensor", id(v), v._version, tuple(v.shape), v.dtype)
    if depth >= MAX_DEPTH or id(v) in seen:
        return ("id", id(v))
    if isinstance(v, types.FunctionType | type):
        if id(v) not in memo:
            memo[id(v)] = _code_fingerprint(v, packages, memo, depth, seen | {id(v)})
        return memo[id(v)]
    seen = seen | {id(v)}

    def fp(x: Any) -> Any:
        return _fingerprint(x, packages, memo, depth + 1, seen)

    if isinstance(v, functools.partial):
        return ("partial", fp(v.func), fp(v.args), fp(v.keywords))
    if isinstance(v, list | tuple):
        return (type(v).__name__, tuple(fp(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted(((repr(k), fp(x)) for k, x in v.items()), key=lambda kv: kv[0])))
    if isinstance(v, set | frozenset):
        return (type(v).__name__, tuple(sorted(repr(fp(x)) for x in v)))
    if isinstance(v, bytearray):
        return ("bytearray", bytes(v))
    if _owned(type(v), packages):
        if dataclasses.is_dataclass(v):
            return ("object", id(type(v)), tuple((f.name, fp(getattr(v, f.name, None))) for f in dataclasses.fields(v)))
        state = dict(getattr(v, "__dict__", {}))
        for slot in getattr(type(v), "__slots__", ()):
            if hasattr(v, slot):
                state[slot] = getattr(v, slot)
        return ("object", id(type(v)), tuple(sorted((k, fp(x)) for k, x in state.items())))
    return ("id", id(v))


def _code_fingerprint(v: Any, packages: tuple[str, ...], memo: dict[int, Any], depth: int, seen: frozenset[int]) -> Any:
    """A function's defaults, closure and attributes, or a class's data attributes, when a watched
    package defines it; else its identity."""

    def fp(x: Any) -> Any:
        return _fingerprint(x, packages, memo, depth + 1, seen)

    if isinstance(v, types.FunctionType):
        if not _owned(v, packages):
            return ("id", id(v))
        cells = tuple(fp(c.cell_contents) if _filled(c) else "<empty>" for c in v.__closure__ or ())
        attrs = {k: fp(x) for k, x in vars(v).items() if k != "__wrapped__"}
        return ("function", id(v), fp(v.__defaults__), fp(v.__kwdefaults__), cells, attrs)
    if not _owned(v, packages):
        return ("id", id(v))
    data = tuple(sorted((k, fp(x)) for k, x in vars(v).items() if not _code(x) and not k.startswith("__")))
    return ("class", id(v), data)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _code(x: Any) -> bool:
    """Functions, methods and descriptors a class holds: code, not state."""
    return isinstance(
        x,
        types.FunctionType
        | staticmethod
        | classmethod
        | property
        | functools.cached_property
        | types.MemberDescriptorType
        | types.GetSetDescriptorType,
    )


def _short(v: Any, limit: int = 160) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."
