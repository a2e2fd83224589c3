"""The fully batched step's pieces, wrapped for `benchmarks.profile`: functions and methods patched by
name for the length of a `with` block (a rename in `batched.vector` fails here, loudly).

`TIMED` are the pieces whose host time the `timers` mode adds up (nested pieces count in their
parents too); `MARKED` those whose start, end and device completion the `timeline` mode records. Both
record each call with `marker` (the timers without device events).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

import batched.vector.model as vector_model
import batched.vector.propose_ahead as propose_ahead
import batched.vector.sample as vector_sample
import batched.vector.step as vector_step
from batched.vector.model import VectorMtpModel
from batched.vector.static_passes import HostCopy, PassCache, Staging, StaticPass
from batched.vector.table_mirror import TableMirror

Piece = tuple[Any, str]  # (owner: a module or class, attribute)


def _of(*groups: tuple[Any, ...]) -> tuple[Piece, ...]:
    """The pieces of `(owner, name, name, ...)` groups."""
    return tuple((owner, name) for owner, *names in groups for name in names)


TIMED = _of(
    (vector_step, "select_rows", "sample_all", "row_classes", "emit_rows", "stash_all", "propose_from_stash",
     "checkpoint_rows"),
    (VectorMtpModel, "_check_decode_batch", "argmax_batch", "_check_propose_batched", "propose_ahead"),
    (vector_model, "decode_padded", "propose_padded", "take", "undo"),
    (vector_sample, "sample_pass"), (TableMirror, "write"), (StaticPass, "load"), (Staging, "copy_to"),
    (HostCopy, "of", "values"), (PassCache, "run"), (torch.cuda.Event, "synchronize", "record"),
)  # fmt: skip
MARKED = _of(
    (VectorMtpModel, "_check_decode_batch", "propose_ahead", "_check_propose_batched"),
    (vector_model, "decode_padded", "propose_batch_ok", "take"),
    (vector_step, "sample_all", "row_classes", "emit_rows", "stash_all", "checkpoint_rows"),
    (vector_sample, "sample_pass", "device_tokens", "batched_argmax", "read_together"),
    (propose_ahead, "propose_batch_ok", "launch_propose", "finish_propose"),
)  # fmt: skip


def label(piece: Piece) -> str:
    """`module.function` or `Class.method`, without the `batched.` prefix."""
    owner, name = piece
    return f"{getattr(owner, '__name__', owner)}.{name}".removeprefix("batched.")


@contextmanager
def patched(pieces: tuple[Piece, ...], wrap: Callable[[Callable[..., Any], str], Callable[..., Any]]) -> Iterator[None]:
    """Every piece replaced by `wrap(original, label)` inside the block, the originals put back after it.
    AttributeError names a piece that no longer exists."""
    originals = [(owner, name, getattr(owner, name)) for owner, name in pieces]
    try:
        for owner, name, fn in originals:
            setattr(owner, name, wrap(fn, label((owner, name))))
        yield
    finally:
        for owner, name, fn in reversed(originals):
            setattr(owner, name, fn)


Marks = dict[str, list[tuple[float, float, Any]]]  # label -> (host entry, host exit, event at exit) per call


def marker(
    marks: Marks, clock: dict[str, float], cuda: bool
) -> Callable[[Callable[..., Any], str], Callable[..., Any]]:
    """A `patched` wrapper that records each call's host entry and exit (seconds after `clock["t0"]`)
    and, with `cuda`, a timing event recorded on the current stream at its exit: when the device has
    finished everything the piece queued there."""

    def wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def marked(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                t1 = time.perf_counter()
                event = None
                if cuda:
                    event = torch.cuda.Event(enable_timing=True)
                    event.record()
                marks.setdefault(name, []).append((t0 - clock["t0"], t1 - clock["t0"], event))

        return marked

    return wrap


def host_seconds(marks: Marks) -> dict[str, float]:
    """Per piece, the host seconds of all its calls (nested pieces count in their parents too)."""
    return {name: sum(t1 - t0 for t0, t1, _ in calls) for name, calls in marks.items()}
