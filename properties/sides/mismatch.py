"""One difference a check found: which sequence (None: the run as a whole), what, the reference's
side and the implementation's, and the behaviour ids it points at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(slots=True)
class Mismatch:
    seq_id: int | None
    field: str
    ref: str
    impl: str
    ids: tuple[str, ...] = ()


def short(v: Any, limit: int = 160) -> str:
    """A value as one short line: tensors by shape, dtype and first entries."""
    if isinstance(v, torch.Tensor):
        flat = v.detach().flatten()
        text = f"tensor{tuple(v.shape)} {v.dtype} {flat[:6].tolist()}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def expect(out: list[Mismatch], ok: bool, what: str, expected: object, got: object, ids: tuple[str, ...]) -> None:
    """Append a run-level mismatch to `out` unless `ok`."""
    if not ok:
        out.append(Mismatch(None, what, str(expected), str(got), ids))
