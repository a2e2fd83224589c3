"""GPU utilities of the suite's processes.

Pinning: which `cuda:i` a pytest-xdist worker runs on, several workers per GPU, spread evenly.
A worker claims a place on a GPU by holding an exclusive lock on a file named after the GPU and the
place (`cuda-<i>-<place>.lock`), starting with the GPU its worker number points at (worker k prefers
GPU k modulo the GPU count). A GPU has `ceil(workers / GPUs)` places. The lock dies with the
process, so the worker xdist starts in place of a crashed one claims the place the crashed worker
held instead of doubling up on another GPU.

MPS: CUDA MPS for the worker processes of one GPU host (`--mps` of the nightly and of `mutants.run`,
the default of `properties.run.verify`).

Without it, each worker process has a CUDA context of its own and the GPU runs one context at a
time: the suite's kernels are tiny and every host read waits for its context's turn. Under MPS the
workers' kernels share the GPU at once: 16 workers on one H200 checked 56.7 P1 examples a second
(fast bf16), about three times what they checked taking turns (`docs/numerics.md`). `cuda_mps`
starts a control daemon (`nvidia-cuda-mps-control -d`) with its pipe and log folders in a fresh
temporary folder, points the environment (hence every worker started later) at it, and quits it
when the run ends. Nothing about the GPU's own settings changes: the compute mode stays as it is,
and the daemon's clients are the run's processes alone. Where `CUDA_MPS_PIPE_DIRECTORY` already
names a running daemon, that one is used and left running.
"""

from __future__ import annotations

import fcntl
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PINNED_REQUESTS = ("cuda", "best")  # a device choice a worker may narrow to its own cuda:i
ENV_WORKER_COUNT = "PYTEST_XDIST_WORKER_COUNT"
_held: list[int] = []  # file descriptors of the locks this process holds, for its lifetime


def worker_index(worker_id: str | None) -> int | None:
    """The number in an xdist worker id (3 for "gw3"); None outside an xdist worker."""
    match = re.fullmatch(r"gw(\d+)", worker_id or "")
    return int(match.group(1)) if match else None


def lock_dir(run_id: str) -> Path:
    """Where the GPU locks of one xdist run live (`run_id`: xdist's test-run uid)."""
    return Path(tempfile.gettempdir()) / f"mtp-verify-gpus-{run_id}"


def places_per_gpu(workers: int | None, n_gpus: int) -> int:
    """How many workers share one GPU: the workers spread evenly, at least one place per GPU."""
    return max(1, math.ceil((workers or 1) / max(n_gpus, 1)))


def _try_lock(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held.append(fd)
    return True


def claim_gpu(preferred: int, n_gpus: int, locks: Path, places: int = 1) -> int:
    """The GPU this process runs on: the first of `preferred`, `preferred + 1`, ... (modulo
    `n_gpus`) with a free place out of `places`, held until the process ends; `preferred % n_gpus`
    when every place is taken (more workers than places share)."""
    locks.mkdir(parents=True, exist_ok=True)
    for k in range(n_gpus):
        i = (preferred + k) % n_gpus
        for place in range(places):
            name = f"cuda-{i}.lock" if place == 0 else f"cuda-{i}-{place}.lock"
            if _try_lock(locks / name):
                return i
    return preferred % n_gpus


def release_all() -> None:
    """Give back every GPU place this process claimed."""
    while _held:
        os.close(_held.pop())


def pinned_device(
    requested: str | None, worker_id: str | None, run_id: str | None, n_gpus: int, workers: int | None = None
) -> str | None:
    """The `cuda:i` an xdist worker runs on when the run asked for `cuda` or `best` and GPUs are
    visible, with `workers` workers in the run (default: xdist's `PYTEST_XDIST_WORKER_COUNT`, else
    one per GPU) spread evenly over the GPUs; None when no pinning applies (not a worker, no GPU,
    the CPU or an explicit `cuda:N`)."""
    index = worker_index(worker_id)
    if index is None or n_gpus < 1 or requested not in PINNED_REQUESTS:
        return None
    if workers is None:
        workers = int(os.environ.get(ENV_WORKER_COUNT) or n_gpus)
    places = places_per_gpu(workers, n_gpus)
    return f"cuda:{claim_gpu(index % n_gpus, n_gpus, lock_dir(run_id or 'default'), places)}"


CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"


class MpsError(RuntimeError):
    """MPS was asked for and cannot run (no control binary, or the daemon did not start)."""


def running_daemon(pipe_dir: str | None) -> bool:
    """Whether `pipe_dir` holds the control pipe of a running daemon."""
    return bool(pipe_dir) and (Path(pipe_dir) / "control").exists()


@contextmanager
def cuda_mps(control: str | None = None) -> Iterator[dict[str, str]]:
    """Run the body with an MPS daemon serving every CUDA process started from this one; yields the
    environment variables it set (also set in `os.environ`, restored after). MpsError, naming what
    is missing, when `control` (default: `nvidia-cuda-mps-control` on PATH) is not there or the
    daemon does not come up."""
    if running_daemon(os.environ.get(PIPE_ENV)):
        yield {PIPE_ENV: os.environ[PIPE_ENV]}
        return
    binary = control or shutil.which(CONTROL)
    if binary is None or not Path(binary).exists():
        raise MpsError(f"--mps: {control or CONTROL} is not on this machine (it comes with the NVIDIA driver)")
    root = Path(tempfile.mkdtemp(prefix="mtp-mps-"))  # short: the pipe's path must fit a socket name
    env = {PIPE_ENV: str(root / "pipe"), LOG_ENV: str(root / "log")}
    for d in env.values():
        Path(d).mkdir()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    started = None
    try:
        started = subprocess.run([binary, "-d"], capture_output=True, text=True, timeout=30)
        if started.returncode != 0:
            raise MpsError(f"--mps: {binary} -d exited {started.returncode}: {started.stderr.strip()}")
        yield env
    finally:
        if started is not None and started.returncode == 0:
            subprocess.run([binary], input="quit\n", capture_output=True, text=True, timeout=60)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(root, ignore_errors=True)
