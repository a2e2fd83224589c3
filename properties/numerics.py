"""Tolerances of the fast numerics mode, per dtype. Exact numerics compare bit for bit."""

from __future__ import annotations

from collections.abc import Callable

from reference.decisions import Decision

# A decision may differ between the two sides only when the reference's margin (best minus second
# best score, in logits) is below this: the largest drift batched and per-row kernels show in that
# dtype at the model's logit scale, with headroom.
MARGIN_ATOL: dict[str, float] = {"bfloat16": 0.25, "float32": 1e-3, "float64": 1e-9}

# Continuous values (caches, logprobs, confidences): (rtol, atol). bf16 logits at the model's scale
# (|logit| up to ~16) are rounded to 1/16: a logprob may move by two such steps.
CLOSE: dict[str, tuple[float, float]] = {
    "bfloat16": (3e-2, 0.125),
    "float32": (1e-4, 1e-5),
    "float64": (1e-10, 1e-12),
}


def margin_tolerance(dtype: str) -> Callable[[Decision], float]:
    atol = MARGIN_ATOL[dtype]
    return lambda d: atol


def close_tolerance(dtype: str, exact: bool) -> tuple[float, float]:
    """(rtol, atol) for continuous values; zero in exact numerics."""
    return (0.0, 0.0) if exact else CLOSE[dtype]
