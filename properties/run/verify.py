"""The verification job: run the properties with a profile on the best available device and end
with a summary table.

    python -m properties.run.verify [--profile dev|ci|nightly|gpu] [--device best|cpu|cuda]
                                [--numerics exact|fast] [--dtype float64|float32|bfloat16]
                                [--max-n N] [--impl module:function] [the suite's other options]
                                [--workers N|auto] [--mps auto|on|off] [--matrix]
                                [-- extra pytest arguments]

The suite's options (`properties.config.OPTION_TABLE`, each also `MTP_VERIFY_<OPTION>`) go to pytest
as given; the device is `best` unless given.

The properties run on pytest-xdist workers, by default one per CPU core (the plugin pins each
worker to one GPU and one torch thread), so a step of the tiny model on one worker overlaps the
Python of the others. On CUDA the workers share each GPU through CUDA MPS (`properties.run.gpu.cuda_mps`,
a private daemon for this run) wherever the driver's control binary is installed: without it the
GPU runs one worker's context at a time, every host read of the tiny model's steps waits for its
context's turn, and the job takes `GPU_WORKERS` per GPU, as more would check no more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import pytest

from properties.behaviours import matrix_text, uncovered
from properties.config import OPTION_TABLE, RunConfig
from properties.run.gpu import CONTROL, MpsError, cuda_mps

GPU_WORKERS = 4  # workers per GPU under `--workers auto` on CUDA where they take turns (no MPS)


def gpus_of(device: str) -> int:
    """The GPUs the job's workers spread over on `device` (0 on the CPU or where CUDA is absent)."""
    if device == "cpu":
        return 0
    import torch

    if not torch.cuda.is_available():
        return 0
    return 1 if device.startswith("cuda:") else torch.cuda.device_count()


def workers(requested: str, device: str, shared: bool = False) -> int:
    """The xdist workers for `--workers` (`auto`, or a count; 0 runs in this process) on `device`.
    `auto`: one per core on the CPU, and on CUDA where the workers share the GPUs through MPS (there
    the examples a second grow with the workers: 16 on one H200 checked 14 times one process's P1
    examples, docs/numerics.md); else `GPU_WORKERS` per GPU, since workers that take turns on a GPU
    check no more for being more."""
    if requested != "auto":
        return int(requested)
    cores = os.cpu_count() or 1
    gpus = gpus_of(device)
    return cores if not gpus or shared else min(cores, GPU_WORKERS * gpus)


def mps_wanted(mode: str, gpus: int) -> bool:
    """Whether the run's workers are to share their GPUs through MPS: `on` always (a ValueError
    without a GPU), `off` never, `auto` on a GPU where the control binary is installed."""
    if mode == "off":
        return False
    if mode == "on":
        if not gpus:
            raise ValueError("--mps on: the run has no CUDA device (give --device cuda on a GPU machine)")
        return True
    return gpus > 0 and shutil.which(CONTROL) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m properties.run.verify",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--profile", default=None, help="Hypothesis profile (default: dev, ci under CI)")
    RunConfig.add_arguments(parser.add_argument_group("the suite's options"), defaults={"device": "best"})
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers, or 0 for none (default auto)")
    parser.add_argument(
        "--mps",
        default="auto",
        choices=("auto", "on", "off"),
        help="workers share each GPU through CUDA MPS (default auto: where its daemon is installed)",
    )
    parser.add_argument("--matrix", action="store_true", help="print the behaviour x property matrix and exit")
    args, extra = parser.parse_known_args(argv)
    if args.matrix:
        print(matrix_text())
        missing = uncovered()
        print(f"\nuncovered: {', '.join(missing)}" if missing else "\nevery G/B/D id is covered")
        return 1 if missing else 0
    pytest_args = ["--pyargs", "properties", "-p", "properties.run.summary_plugin", "-q"]
    # This job imports `properties` (and what it imports) before pytest starts, so pytest reports
    # that it cannot rewrite the asserts of those few modules; the test modules it imports later
    # are rewritten as usual.
    pytest_args += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    given = [("--hypothesis-profile", args.profile), *((o.flag, getattr(args, o.name)) for o in OPTION_TABLE)]
    pytest_args += [str(a) for flag, value in given if value is not None for a in (flag, value)]
    pytest_args += [a for a in extra if a != "--"]
    try:
        gpus = gpus_of(args.device)
        wanted = mps_wanted(args.mps, gpus)
    except ValueError as e:
        print(f"properties.run.verify: {e}", file=sys.stderr)
        return 2
    n = workers(args.workers, args.device, wanted)
    if not wanted or (args.mps == "auto" and n <= gpus):  # no GPU is shared by two workers
        return run_pytest(pytest_args, n)
    try:
        with cuda_mps():
            print(f"properties.run.verify: {n} workers share the GPU through CUDA MPS", flush=True)
            return run_pytest(pytest_args, n)
    except MpsError as e:  # raised before pytest starts: the daemon did not come up
        if args.mps == "on":
            print(f"properties.run.verify: {e}", file=sys.stderr)
            return 2
        n = workers(args.workers, args.device)
        print(f"properties.run.verify: {e}; {n} workers take turns on the GPU without it", flush=True)
    return run_pytest(pytest_args, n)


def run_pytest(pytest_args: list[str], n: int) -> int:
    """pytest's exit code for `pytest_args` on `n` xdist workers (in this process for 0 or 1)."""
    return int(pytest.main(pytest_args + (["-n", str(n)] if n > 1 else [])))


if __name__ == "__main__":
    sys.exit(main())
