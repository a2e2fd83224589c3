"""One pytest-xdist worker per GPU: which `cuda:i` a worker runs on.

A worker claims a GPU by holding an exclusive lock on a file named after it, starting with the GPU
its worker number points at. The lock dies with the process, so the worker xdist starts in place of
a crashed one claims the GPU the crashed worker held instead of doubling up on another.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from pathlib import Path

PINNED_REQUESTS = ("cuda", "best")  # a device choice a worker may narrow to its own cuda:i
_held: list[int] = []  # file descriptors of the locks this process holds, for its lifetime


def worker_index(worker_id: str | None) -> int | None:
    """The number in an xdist worker id (3 for "gw3"); None outside an xdist worker."""
    match = re.fullmatch(r"gw(\d+)", worker_id or "")
    return int(match.group(1)) if match else None


def lock_dir(run_id: str) -> Path:
    """Where the GPU locks of one xdist run live (`run_id`: xdist's test-run uid)."""
    return Path(tempfile.gettempdir()) / f"mtp-verify-gpus-{run_id}"


def claim_gpu(preferred: int, n_gpus: int, locks: Path) -> int:
    """The GPU this process runs on: the first of `preferred`, `preferred + 1`, ... (modulo
    `n_gpus`) whose lock it can take, held until the process ends; `preferred % n_gpus` when every
    GPU is taken (more workers than GPUs share)."""
    locks.mkdir(parents=True, exist_ok=True)
    for k in range(n_gpus):
        i = (preferred + k) % n_gpus
        fd = os.open(locks / f"cuda-{i}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _held.append(fd)
        return i
    return preferred % n_gpus


def release_all() -> None:
    """Give back every GPU this process claimed."""
    while _held:
        os.close(_held.pop())


def pinned_device(requested: str | None, worker_id: str | None, run_id: str | None, n_gpus: int) -> str | None:
    """The `cuda:i` an xdist worker runs on when the run asked for `cuda` or `best` and GPUs are
    visible; None when no pinning applies (not a worker, no GPU, the CPU or an explicit `cuda:N`)."""
    index = worker_index(worker_id)
    if index is None or n_gpus < 1 or requested not in PINNED_REQUESTS:
        return None
    return f"cuda:{claim_gpu(index, n_gpus, lock_dir(run_id or 'default'))}"
