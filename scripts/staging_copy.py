"""Host time of each part of one staged host-to-device copy (`batched.vector.static_passes.Staging`) at the
step's input size, the device idle and then busy: the wait for the last copy, the copy into the
pinned buffer, the queued copy to the device, the event record; and a whole `StaticPass.load`.

    python scripts/staging_copy.py --ints 2900 --out staging.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from array import array

import torch

from batched.vector.static_passes import PassCache


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ints", type=int, default=2900)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--out", default="")
    a = p.parse_args()
    dev = torch.device("cuda")
    dst = torch.zeros(a.ints, dtype=torch.long, device=dev)
    pinned = torch.empty(a.ints, dtype=torch.long, pin_memory=True)
    landed = torch.cuda.Event()
    values = list(range(a.ints))
    busy = torch.randn(4096, 4096, device=dev)
    report: dict[str, dict[str, float]] = {}
    for state in ("idle", "busy"):
        parts: dict[str, list[float]] = {k: [] for k in ("convert", "wait", "pinned copy", "to device", "record")}
        for _ in range(a.calls):
            torch.cuda.synchronize()
            if state == "busy":
                busy @ busy  # about 0.1 ms of queued device work
            t0 = time.perf_counter()
            host = torch.frombuffer(array("q", values), dtype=torch.long)
            t1 = time.perf_counter()
            landed.synchronize()
            t2 = time.perf_counter()
            pinned.copy_(host)
            t3 = time.perf_counter()
            dst.copy_(pinned, non_blocking=True)
            t4 = time.perf_counter()
            landed.record()
            t5 = time.perf_counter()
            for k, (x, y) in zip(parts, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)], strict=True):
                parts[k].append(1e6 * (y - x))
        report[state] = {k: statistics.median(v) for k, v in parts.items()}
        cache = PassCache(dev)
        sp = cache.get(("probe",), [a.ints])
        loads = []
        for _ in range(a.calls):
            torch.cuda.synchronize()
            if state == "busy":
                busy @ busy
            t0 = time.perf_counter()
            sp.load([values])
            loads.append(1e6 * (time.perf_counter() - t0))
        report[state]["StaticPass.load"] = statistics.median(loads)
        print(state, " ".join(f"{k} {v:.1f} us" for k, v in report[state].items()))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"config": vars(a), "median_us": report}, f, indent=1)


if __name__ == "__main__":
    main()
