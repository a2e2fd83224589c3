"""The weights a step must not write: a bit-for-bit copy of every live weights object, taken the first
time it is seen, and the check that puts back what a step wrote (`properties.sides.outside`)."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import torch

from reference.model.kernels import bits_equal

# Bit-for-bit copies of every live weights object by id, taken the first time it is seen; a copy goes
# when its weights do, so an id is never another object's while its copy is here.
PRISTINE: dict[int, dict[str, torch.Tensor]] = {}


def pristine(weights: Any) -> dict[str, torch.Tensor]:
    """The copy of `weights` taken when they were first seen (taken now if never seen)."""
    key = id(weights)
    if key not in PRISTINE:
        PRISTINE[key] = {k: v.detach().clone() for k, v in weights.state_dict().items()}
        weakref.finalize(weights, PRISTINE.pop, key, None)
    return PRISTINE[key]


def remember_weights(models: Iterable[Any]) -> None:
    """Take the pristine copy of each model's weights now, if not taken before."""
    for m in models:
        w = getattr(m, "weights", None)
        if w is not None:
            pristine(w)


def weights_written(models: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(what, before, after) for every weight of `models` that no longer equals its pristine copy;
    each such weight is put back."""
    out = []
    seen: set[int] = set()
    for m in models:
        w = getattr(m, "weights", None)
        if w is None or id(w) in seen:
            continue
        seen.add(id(w))
        copy = pristine(w)
        for name, t in w.state_dict().items():
            want = copy[name]
            if bits_equal(t, want):
                continue
            if t.shape == want.shape and t.dtype == want.dtype:
                bad = (t != want) | (t.isnan() != want.isnan())
                first = tuple(int(x) for x in torch.nonzero(bad)[0].tolist()) if bool(bad.any()) else ()
                out.append(
                    (
                        f"weight {name} {first} (written by the step; put back)",
                        f"{float(want[first]):.6g}",
                        f"{float(t[first]):.6g} ({int(bad.sum())} elements differ)",
                    )
                )
                t.copy_(want)
            else:
                out.append((f"weight {name}", f"{want.dtype}{tuple(want.shape)}", f"{t.dtype}{tuple(t.shape)}"))
    return out
