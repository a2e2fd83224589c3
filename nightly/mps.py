"""CUDA MPS for the worker processes of one GPU host (`--mps` of the nightly and of `mutants.run`).

Without it, each worker process has a CUDA context of its own and the GPU runs one context at a
time: the suite's kernels are tiny and every host read waits for its context's turn, so 16 workers
on one H200 checked about 5 P1 examples a second. Under MPS the workers' kernels share the GPU
at once (about 15 a second; docs/gpu-equivalence.md). `cuda_mps` starts a control daemon
(`nvidia-cuda-mps-control -d`) with its pipe and log folders in a fresh temporary folder, points
the environment (hence every worker started later) at it, and quits it when the run ends. Nothing
about the GPU's own settings changes: the compute mode stays as it is, and the daemon's clients are
the run's processes alone. Where `CUDA_MPS_PIPE_DIRECTORY` already names a running daemon, that
one is used and left running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
