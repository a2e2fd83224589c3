"""A released request held to its solo decode: its tokens, finish and logprobs
(`properties.generations.solo`), and, in fast numerics, each engine's rows against the solo decode's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from properties.generations.checks import result_equal
from properties.generations.oracle import Taken
from properties.sides.mismatch import Mismatch, short
from properties.tolerance import Tolerance, differing, row_difference
from reference.engine import Finished
from reference.solo import SoloResult


def check_solo(
    done: Finished,
    want: SoloResult,
    hit_by_fault: bool,
    fast: bool = False,
    logprobs: Callable[[list[Any], list[Any]], bool] | None = None,
) -> list[Mismatch]:
    """A request finished by its own reason equals its solo decode (tokens, logprobs, reason). One
    aborted, or finished by an error, holds a prefix of it; an error needs a fault that hit it.
    Fast numerics: logprobs as `field_equal` holds them (`solo_rows` holds the rows)."""
    sid = done.seq_id
    got = (done.tokens, done.logprobs, done.finish_reason)
    full = (want.tokens, want.logprobs, want.finish_reason)
    if not done.aborted and result_equal(got, full, fast, logprobs):
        return []  # a sampling failure ends the solo decode without a reason too
    if done.finish_reason is not None:
        if not result_equal(got, full, fast, logprobs):
            return [Mismatch(sid, "result against its solo decode", short(want), short(done), ("B8", "B11"))]
        return []
    out = []
    n = len(done.tokens)
    if not result_equal((done.tokens, done.logprobs), (want.tokens[:n], want.logprobs[:n]), fast, logprobs):
        out.append(Mismatch(sid, "partial result against its solo decode (a prefix)", short(want), short(done)))
    if done.errored and not hit_by_fault:
        out.append(Mismatch(sid, "finished by an error with no fault", "a finish reason", short(done), ("B3", "B9")))
    return out


def solo_rows(spec: Any, sid: int, solo: dict[int, torch.Tensor], trace: dict[int, Taken], name: str) -> list[Mismatch]:
    """Fast numerics: the logits row each of an engine's token decisions for request `sid` was made
    on, within the dtype's rounding of the solo decode's row at the same output position (the first
    that is not)."""
    rtol = Tolerance.of(spec.model).rtol
    for pos in sorted(set(solo) & set(trace)):
        r, m = solo[pos], trace[pos].row
        if bool(differing(r, m, rtol).any()):
            return [
                Mismatch(
                    sid,
                    f"{name}: logits row of output position {pos} against the solo decode's (beyond rounding)",
                    f"within {rtol:.3g} of the row's largest magnitude",
                    f"largest difference {row_difference(r, m):.3g}",
                    ("B1", "B2"),
                )
            ]
    return []
