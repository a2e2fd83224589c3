"""The implementation under test, as one `Impl`: its step, the model it runs on, its call contract.

A short name from `REGISTRY` (`literal`, the default; `vector`; `vector-gathered`) or `module:function`
for any other step with the signature `(model, active, sched, idxs, ladder_nd, verify_ctx) -> None`.
Everything besides the step comes from the module the name points at, never from the module where
the function happens to be defined: a module that imports another's step and adds a `prepare_model`
of its own is run on its own preparation. What a module may say:

- `prepare_model(model) -> model`: the model the step runs on, given the world's (default: the
  world's model itself).
- `PER_ROW_FAST_GREEDY_CALLS = False`: greedy rows the batched argmax does not serve are argmaxed
  inside a batched pass, with no per-row `argmax_on_device` call (default True, as the loop does).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

StepFn = Callable[..., Any]
REGISTRY: dict[str, str] = {
    "literal": "batched.step:step_mtp_bootstrap_batched",
    "vector": "batched.vector.step:step_mtp_bootstrap_vectorized",
    # The fully batched step on a model that never takes the paged kernel: in fast numerics its
    # attention is then the reference's own kernel over each row's gathered span. The kernel rounds
    # otherwise, and in bfloat16 that alone forces more near-ties than the budget allows, so a GPU
    # checks the step's logic in bf16 this way and the kernel in fast float32.
    "vector-gathered": "batched.vector.step:step_mtp_bootstrap_vectorized",
}
# Registry names whose model preparation is another than their module's `prepare_model`.
PREPARATIONS: dict[str, str] = {"vector-gathered": "batched.vector.step:prepare_gathered_model"}
DEFAULT_IMPL = REGISTRY["literal"]


@dataclass(slots=True, frozen=True)
class Impl:
    """An implementation under test: `name` as the user gave it, the step, the model preparation
    (None: the world's model as it is) and whether greedy rows outside the batched argmax make the
    per-row `argmax_on_device` call."""

    name: str
    step: StepFn
    prepare: Callable[[Any], Any] | None = None
    per_row_fast_greedy_calls: bool = True

    def prepare_model(self, model: Any) -> Any:
        """The model the step runs on for a world whose model is `model`."""
        return model if self.prepare is None else self.prepare(model)

    def with_step(self, step: StepFn) -> Impl:
        """The same implementation with `step` in place of its own (a wrapper that traces or asserts)."""
        return replace(self, step=step)


def canonical(name: str) -> str:
    """`module:function` for a registry name, else `name` itself."""
    return REGISTRY.get(name, name)


def short_name(name: str) -> str:
    """The registry name for `name`: itself when it is one, the entry whose step `name` spells as
    `module:function` with its module's own preparation, else `name` unchanged."""
    if name in REGISTRY:
        return name
    plain = [short for short, spec in REGISTRY.items() if spec == name and short not in PREPARATIONS]
    return plain[0] if plain else name


def _module(spec: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"--impl {spec!r}: cannot import module {module_name!r}: {e}") from e


def load(name: str = DEFAULT_IMPL) -> Impl:
    """The implementation `name`; a ValueError names what was wrong."""
    spec = canonical(name)
    module_name, sep, fn_name = spec.partition(":")
    if not sep or not module_name or not fn_name:
        known = ", ".join(REGISTRY)
        raise ValueError(f"--impl {name!r}: expected one of {known}, or module:function such as {DEFAULT_IMPL}")
    module = _module(name, module_name)
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ValueError(f"--impl {name!r}: module {module_name!r} has no callable {fn_name!r}")
    prepare = getattr(module, "prepare_model", None)
    if name in PREPARATIONS:
        prep_module, _, prep_name = PREPARATIONS[name].partition(":")
        prepare = getattr(_module(name, prep_module), prep_name)
    if prepare is not None and not callable(prepare):
        raise ValueError(f"--impl {name!r}: {module_name}.prepare_model is not callable")
    contract = getattr(module, "PER_ROW_FAST_GREEDY_CALLS", True)
    if not isinstance(contract, bool):
        raise ValueError(f"--impl {name!r}: {module_name}.PER_ROW_FAST_GREEDY_CALLS must be True or False")
    return Impl(name, fn, prepare, contract)


def plain(step: StepFn, name: str = "") -> Impl:
    """`step` on the world's model, with the loop's call contract (a test's own wrapper step)."""
    return Impl(name or getattr(step, "__qualname__", "step"), step)
