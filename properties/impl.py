"""The implementation under test: the batched step by default, or any `module:function` with the
step's signature `(model, active, sched, idxs, ladder_nd, verify_ctx) -> None`."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

StepFn = Callable[..., Any]
DEFAULT_IMPL = "batched.step:step_mtp_bootstrap_batched"
ENV_IMPL = "MTP_VERIFY_IMPL"

_selected: str | None = None


def select(spec: str | None) -> None:
    """Set the implementation for this process (the `--impl` option)."""
    global _selected
    _selected = spec


def current_name() -> str:
    return _selected or os.environ.get(ENV_IMPL) or DEFAULT_IMPL


def load(spec: str | None = None) -> StepFn:
    """Import `module:function`; a clear error names what was wrong."""
    spec = spec or current_name()
    module_name, sep, fn_name = spec.partition(":")
    if not sep or not module_name or not fn_name:
        raise ValueError(f"--impl {spec!r}: expected module:function, e.g. {DEFAULT_IMPL}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"--impl {spec!r}: cannot import module {module_name!r}: {e}") from e
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ValueError(f"--impl {spec!r}: module {module_name!r} has no callable {fn_name!r}")
    return fn


def per_row_fast_greedy_calls(spec: str | None = None) -> bool:
    """The implementation's call contract for greedy rows the batched argmax does not serve: True
    (the default, `batched.step`'s) when each takes the per-row sampler's fast-greedy argmax
    (`argmax_on_device`) as the loop does; False when its module says `PER_ROW_FAST_GREEDY_CALLS =
    False` (it argmaxes them inside a batched sampling pass and makes no such call)."""
    module_name = (spec or current_name()).partition(":")[0]
    return bool(getattr(importlib.import_module(module_name), "PER_ROW_FAST_GREEDY_CALLS", True))


def prepare_model(step: StepFn, model: Any) -> Any:
    """The model `step` runs on for a world whose model is `model`: its module's
    `prepare_model(model)` when it has one (a model class of its own over the world's buffers, as
    the fully batched step's `VectorMtpModel`), else `model` itself."""
    prepare = getattr(sys.modules.get(getattr(step, "__module__", ""), None), "prepare_model", None)
    return model if prepare is None else prepare(model)
