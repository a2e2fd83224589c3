"""Host time of the fully batched step's pieces, measured with plain timers around them (a profiler's
per-call overhead inflates Python-heavy code two to three times): the benchmark world of n
sequences, each step on a fresh copy of it in one persistent model (its graphs stay captured).
Prints milliseconds per step for each piece (nested pieces count in their parents too) and writes
them as JSON.

    python scripts/step_timers.py --device cuda --mix greedy --n 64 --out timers.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

import batched.vector.attention as paged_attention
import batched.vector.model as vector_model
import batched.vector.sample as vector_sample
import batched.vector.step as vector_step
from batched.vector.model import VectorMtpModel
from batched.vector.static_passes import HostCopy, PassCache, Staging, StaticPass
from batched.vector.table_mirror import TableMirror
from benchmarks.settings import MIXES, resolve
from benchmarks.worlds import VectorBench, sync

# (owner, attribute): the pieces timed, module functions and methods alike.
PIECES: tuple[tuple[Any, str], ...] = (
    (vector_step, "select_rows"),
    (VectorMtpModel, "_check_decode_batch"),
    (vector_model, "decode_padded"),
    (vector_step, "sample_all"),
    (vector_step, "row_classes"),
    (vector_sample, "sample_pass"),
    (VectorMtpModel, "argmax_batch"),
    (vector_step, "emit_rows"),
    (vector_step, "stash_all"),
    (vector_step, "propose_from_stash"),
    (VectorMtpModel, "_check_propose_batched"),
    (vector_model, "propose_padded"),
    (VectorMtpModel, "propose_ahead"),
    (vector_model, "take"),
    (vector_model, "undo"),
    (vector_step, "checkpoint_rows"),
    (TableMirror, "write"),
    (StaticPass, "load"),
    (Staging, "copy_to"),
    (HostCopy, "of"),
    (HostCopy, "values"),
    (PassCache, "run"),
    (torch.cuda.Event, "synchronize"),
    (torch.cuda.Event, "record"),
)


def timed(fn: Callable[..., Any], label: str, totals: dict[str, float]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - t0

    return wrapper


def staged_copy_parts(totals: dict[str, float]) -> Callable[..., None]:
    """`Staging.copy_to` with a timer around each of its statements (the wait for the last copy, the
    copy into the pinned buffer, the queued copy to the device, the event record). It mirrors that
    method statement for statement (keep the two alike); `scripts/staging_copy.py` times the same
    statements outside the step."""

    def copy_to(self: Staging, dst: torch.Tensor, host: torch.Tensor) -> None:
        t0 = time.perf_counter()
        if self.landed is None:
            self.landed = torch.cuda.Event()
        else:
            self.landed.synchronize()
        t1 = time.perf_counter()
        self.pinned.copy_(host.view(self.pinned.shape))
        t2 = time.perf_counter()
        dst.copy_(self.pinned, non_blocking=True)
        t3 = time.perf_counter()
        self.landed.record(torch.cuda.current_stream(dst.device))
        t4 = time.perf_counter()
        for label, x, y in (("wait", t0, t1), ("into pinned", t1, t2), ("to device", t2, t3), ("record", t3, t4)):
            totals[f"Staging.copy_to: {label}"] += y - x

    return copy_to


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--mix", default="greedy", choices=MIXES)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--staging-parts", action="store_true", help="time each statement of a staged copy")
    p.add_argument("--prefetch", type=int, choices=(0, 1), default=None, help="the paged kernel's loading ahead")
    p.add_argument("--no-ahead", action="store_true", help="launch no propose ahead (`VectorMtpModel.ahead`)")
    p.add_argument(
        "--no-plan", action="store_true", help="the sampling launches it, never the decode (`launch_in_decode`)"
    )
    p.add_argument("--out", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.prefetch is not None:
        paged_attention.PREFETCH = bool(a.prefetch)
    s = replace(resolve({"device": a.device}), mix=a.mix)
    bench = VectorBench.make(s, a.n)
    work = bench.work
    work.ahead = not a.no_ahead
    work.launch_in_decode = not a.no_plan
    totals: dict[str, float] = defaultdict(float)
    for owner, name in PIECES:
        label = f"{getattr(owner, '__name__', owner)}.{name}"
        setattr(owner, name, timed(getattr(owner, name), label, totals))
    if a.staging_parts:
        Staging.copy_to = timed(staged_copy_parts(totals), "Staging.copy_to", totals)  # type: ignore[method-assign]
    step = vector_step.step_mtp_bootstrap_vectorized

    def one() -> float:
        w = bench.fresh()
        t0 = time.perf_counter()
        step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
        sync(s.device)
        return time.perf_counter() - t0

    for _ in range(3):  # eager, capture, replay
        one()
    # As the benchmark (`benchmarks/bench_bootstrap.py`): what lives now moves to the permanent generation,
    # so the collection before each step walks only the steps' own objects, not the whole process.
    gc.collect()
    gc.freeze()
    totals.clear()
    taken = work.taken_ahead
    times = [one() for _ in range(a.steps)]
    taken = work.taken_ahead - taken
    per_step = {k: 1e3 * v / a.steps for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}
    report = {"config": vars(a), "median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times),
              "pieces_ms": per_step, "proposes_taken_ahead": taken}  # fmt: skip
    print(f"vector {a.mix} n={a.n} on {s.device}: median {report['median_ms']:.3f} ms, min {report['min_ms']:.3f} ms, "
          f"proposes launched ahead and taken: {taken} of {a.steps} steps")  # fmt: skip
    for k, v in per_step.items():
        print(f"{v:9.3f}  {k}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
