"""When the fully batched step's pieces start and end on the host, and when the device work each one
queued is done: the critical path of one step, host and device side by side.

Each piece is wrapped: its entry and exit are host timestamps (ms after the step began), and at its
exit a CUDA event is recorded on the stream then current, whose time (against an event recorded when
the step began) is when the device had finished everything that piece queued on that stream. Medians
over the timed steps, in order of entry; the benchmark world of n sequences, as `step_timers.py`.

    python scripts/step_timeline.py --device cuda --mix greedy --n 64 --out timeline.json
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

import batched.vector.model as vector_model
import batched.vector.propose_ahead as propose_ahead
import batched.vector.sample as vector_sample
import batched.vector.step as vector_step
from batched.vector.model import VectorMtpModel
from benchmarks.settings import MIXES, resolve
from benchmarks.worlds import VectorBench, sync

PIECES: tuple[tuple[Any, str], ...] = (
    (VectorMtpModel, "_check_decode_batch"),
    (vector_model, "decode_padded"),
    (vector_step, "sample_all"),
    (vector_step, "row_classes"),
    (vector_sample, "sample_pass"),
    (vector_sample, "device_tokens"),
    (VectorMtpModel, "propose_ahead"),
    (vector_model, "propose_batch_ok"),
    (vector_model, "launch_propose"),
    (vector_sample, "batched_argmax"),
    (vector_sample, "read_together"),
    (vector_step, "emit_rows"),
    (vector_step, "stash_all"),
    (VectorMtpModel, "_check_propose_batched"),
    (vector_model, "take"),
    (propose_ahead, "finish_propose"),
    (vector_step, "checkpoint_rows"),
)

Marks = dict[str, list[tuple[float, float, Any]]]  # label -> (host entry, host exit, event at exit) per call


def marked(fn: Callable[..., Any], label: str, marks: Marks, clock: dict[str, float], cuda: bool) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            t1 = time.perf_counter()
            event = None
            if cuda:
                event = torch.cuda.Event(enable_timing=True)
                event.record()
            marks[label].append((t0 - clock["t0"], t1 - clock["t0"], event))

    return wrapper


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--mix", default="greedy", choices=MIXES)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--no-ahead", action="store_true", help="launch no propose ahead (`VectorMtpModel.ahead`)")
    p.add_argument(
        "--no-plan", action="store_true", help="the sampling launches it, never the decode (`launch_in_decode`)"
    )
    p.add_argument("--out", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    s = replace(resolve({"device": a.device}), mix=a.mix)
    cuda = s.on_cuda
    bench = VectorBench.make(s, a.n)
    bench.work.ahead = not a.no_ahead
    bench.work.launch_in_decode = not a.no_plan
    marks: Marks = defaultdict(list)
    clock = {"t0": 0.0}
    for owner, name in PIECES:
        label = f"{getattr(owner, '__name__', owner)}.{name}".removeprefix("batched.")
        setattr(owner, name, marked(getattr(owner, name), label, marks, clock, cuda))
    step = vector_step.step_mtp_bootstrap_vectorized
    rows: list[dict[str, tuple[float, float, float | None]]] = []

    def one() -> float:
        w = bench.fresh()
        marks.clear()
        start = torch.cuda.Event(enable_timing=True) if cuda else None
        clock["t0"] = time.perf_counter()
        if start is not None:
            start.record()
        step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
        sync(s.device)
        total = time.perf_counter() - clock["t0"]
        row: dict[str, tuple[float, float, float | None]] = {}
        for label, calls in marks.items():
            for i, (h0, h1, ev) in enumerate(calls):
                dev = start.elapsed_time(ev) if start is not None and ev is not None else None
                row[label if i == 0 else f"{label} #{i + 1}"] = (1e3 * h0, 1e3 * h1, dev)
        row["step"] = (0.0, 1e3 * total, None)
        rows.append(row)
        return total

    for _ in range(3):  # eager, capture, replay
        one()
    gc.collect()
    gc.freeze()
    rows.clear()
    times = [one() for _ in range(a.steps)]
    labels = sorted({k for r in rows for k in r}, key=lambda k: statistics.median(r[k][0] for r in rows if k in r))
    table = []
    for k in labels:
        got = [r[k] for r in rows if k in r]
        devs = [d for _, _, d in got if d is not None]
        table.append({
            "piece": k, "calls": len(got),
            "host_start_ms": statistics.median(h0 for h0, _, _ in got),
            "host_end_ms": statistics.median(h1 for _, h1, _ in got),
            "device_done_ms": statistics.median(devs) if devs else None,
        })  # fmt: skip
    report = {"config": vars(a), "median_ms": 1e3 * statistics.median(times), "pieces": table}
    print(f"vector {a.mix} n={a.n} on {s.device}: median step {report['median_ms']:.3f} ms")
    print(f"{'host start':>10} {'host end':>9} {'device done':>11}  piece")
    for t in table:
        dev = "" if t["device_done_ms"] is None else f"{t['device_done_ms']:.3f}"
        print(f"{t['host_start_ms']:10.3f} {t['host_end_ms']:9.3f} {dev:>11}  {t['piece']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
