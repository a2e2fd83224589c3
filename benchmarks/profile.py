"""`python -m benchmarks.profile --mode MODE [options] [--out REPORT.json]`: one profiler, with modes.
Each mode prints a table and writes its report as JSON (`--out`): the mode, the options, and the
mode's figures.

Where the time of one bootstrap step goes (`benchmarks.step_modes`; the benchmark world of `--n`
sequences, the `--mix`, `--steps` measured steps):

- `timers`: host ms per step of the fully batched step's pieces, from plain timers;
- `timeline`: when each piece starts and ends on the host, and when the device has done its work;
- `torch`: one implementation (`--impl`) under the torch profiler: operators, device kernels and
  copies, the device's busy time; `--python-rows` adds the Python functions (cProfile).

`--no-graphs`, `--prefetch 0|1`, `--no-ahead` and `--no-plan` switch the fully batched model's CUDA
graphs, the paged kernel's loading ahead, the propose launched ahead and the decode's launch of it;
`--impl vector-gathered` runs it without the paged kernel.

The rest:

- `example`: where one P1 example's time goes, by phase (`benchmarks.phases`), `--examples` of them;
- `rounding`: the measured rounding of fast numerics where the properties compare it (`benchmarks.rounding`);
- `kernel`: the paged decode kernel's time per call over a tuning grid (`benchmarks.kernel_sweep`);
- `copies`: the host time of the step's host-to-device copies and table writes (`benchmarks.copies`).

    python -m benchmarks.profile --mode torch --device cuda --impl vector --mix greedy --n 64 --out p.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks.settings import IMPL_NAMES, MIXES
from benchmarks.step_modes import PIECE_IMPLS, StepOptions, run_timeline, run_timers, run_torch
from properties.config import Default, RunConfig

STEP_MODES = ("timers", "timeline", "torch")
MODES = (*STEP_MODES, "example", "rounding", "kernel", "copies")
DEFAULT_IMPL = {"example": "literal", "rounding": "literal"}  # else vector


def step_options(a: argparse.Namespace) -> StepOptions:
    return StepOptions(device=a.device, impl=a.impl, mix=a.mix, n=a.n, steps=a.steps, rows=a.rows,
                       python_rows=a.python_rows, graphs=not a.no_graphs,
                       prefetch=None if a.prefetch is None else bool(a.prefetch), ahead=not a.no_ahead,
                       plan=not a.no_plan)  # fmt: skip


def run_example(a: argparse.Namespace) -> dict[str, Any]:
    """Where a P1 example's time goes (`benchmarks.phases.profile_examples`) at mixes up to `--max-n`."""
    from benchmarks.host_throughput import draw_specs
    from benchmarks.phases import print_examples, print_table, profile_examples

    run = RunConfig.from_args(a, {})
    report = profile_examples(draw_specs(run, a.examples, stream=a.seed), run.impl, run.device, a.python_rows)
    head = f"{a.impl} on {a.device}, {a.numerics} {a.dtype} n <= {a.max_n}: {report['examples']} examples"
    print(f"{head}, {report['rows_per_example']:.1f} rows each, {report['examples_per_s']:.2f} examples/s, one process")
    if report["python"]:
        print_table("own time", report["python"]["tottime"], "own_s", report["examples"])
        print_table("cumulative time", report["python"]["cumulative"], "cum_s", report["examples"])
    print_examples(report)
    return report


def run_rounding(a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.rounding import run_rounding as measure

    return measure(a.device, a.dtype, a.impl, a.examples, a.max_n, a.reference_device, a.seed)


def run_kernel(a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.kernel_sweep import KernelGrid
    from benchmarks.kernel_sweep import run_kernel as measure

    grid = KernelGrid(rows=tuple(a.kernel_rows), heads=a.heads, dim=a.dim, block=a.block, length=a.length,
                      calls=a.calls, tiles=tuple(a.tiles), warps=tuple(a.warps), splits=tuple(a.splits),
                      stages=tuple(a.stages), prefetch=tuple(a.prefetch_grid))  # fmt: skip
    return measure(a.device, grid)


def run_copies(a: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.copies import run_copies as measure

    return measure(a.device, a.ints, a.n, a.blocks, a.calls)


RUNS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "timers": lambda a: run_timers(step_options(a)),
    "timeline": lambda a: run_timeline(step_options(a)),
    "torch": lambda a: run_torch(step_options(a)),
    "example": run_example,
    "rounding": run_rounding,
    "kernel": run_kernel,
    "copies": run_copies,
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.profile", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--mode", required=True, choices=MODES)
    # The suite's options (`properties.config.OPTION_TABLE`); the environment is not read.
    impl = Default(None, f"vector, for example and rounding literal; the step modes run one of {', '.join(IMPL_NAMES)}")
    RunConfig.add_arguments(p, ("device", "impl"), {"device": "cpu", "impl": impl}, env=False)
    p.add_argument("--out", type=Path, default=None, help="write the report here as JSON")
    step = p.add_argument_group("timers, timeline, torch (--n: also the copies mode's tables)")
    step.add_argument("--mix", default="greedy", choices=MIXES)
    step.add_argument("--n", type=int, default=64, help="sequences")
    step.add_argument("--steps", type=int, default=30, help="measured steps (each on a fresh copy of the world)")
    step.add_argument("--rows", type=int, default=25, help="rows of the torch mode's tables")
    step.add_argument("--python-rows", type=int, default=0, help="torch, example: the Python profile, this many rows")
    step.add_argument("--no-graphs", action="store_true", help="the fully batched step's passes run eagerly")
    step.add_argument("--prefetch", type=int, choices=(0, 1), default=None, help="the paged kernel's loading ahead")
    step.add_argument("--no-ahead", action="store_true", help="launch no propose ahead")
    step.add_argument("--no-plan", action="store_true", help="the sampling launches the propose, never the decode")
    ex = p.add_argument_group("example, rounding")
    ex.add_argument("--examples", type=int, default=12, help="P1 examples")
    own = {"max_n": 64, "numerics": Default("fast", "fast; the example mode's, rounding is fast always")}
    own |= {"dtype": "bfloat16", "reference_device": Default("same", "same; the rounding mode's")}
    RunConfig.add_arguments(ex, ("max_n", "numerics", "dtype", "reference_device"), own, env=False)
    ex.add_argument("--seed", type=int, default=3, help="the seed the examples are drawn from")
    k = p.add_argument_group("kernel (grids: benchmarks.kernel_sweep), copies")
    k.add_argument("--kernel-rows", type=int, nargs="+", default=[8, 64, 256], help="kernel: rows of each shape")
    k.add_argument("--heads", type=int, default=16)
    k.add_argument("--dim", type=int, default=128)
    k.add_argument("--block", type=int, default=16)
    k.add_argument("--length", type=int, default=512, help="kernel: positions a row")
    k.add_argument("--calls", type=int, default=200, help="kernel, copies: timed calls")
    k.add_argument("--tiles", type=int, nargs="+", default=[16])
    k.add_argument("--warps", type=int, nargs="+", default=[1, 2, 4])
    k.add_argument("--splits", type=int, nargs="+", default=[0], help="chunks a row (0: the kernel's choice)")
    k.add_argument("--stages", type=int, nargs="+", default=[0], help="pipelining depths (0: Triton's default)")
    k.add_argument("--prefetch-grid", type=int, nargs="+", default=[-1], help="loading ahead: 0, 1, -1 (default)")
    k.add_argument("--ints", type=int, default=2900, help="copies: integers a staged copy moves")
    k.add_argument("--blocks", type=int, default=32, help="copies: blocks a table")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the mode the arguments ask for and write its report; 0, or 2 for options that cannot run
    (the message printed)."""
    a = parser().parse_args(argv)
    a.impl = a.impl or DEFAULT_IMPL.get(a.mode, "vector")
    if a.device == "best":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    if a.device.startswith("cuda:"):
        torch.cuda.set_device(a.device)
    allowed = PIECE_IMPLS if a.mode in ("timers", "timeline") else IMPL_NAMES
    if a.mode in STEP_MODES and a.impl not in allowed:
        print(f"benchmarks.profile: --impl {a.impl!r}: the {a.mode} mode runs one of {', '.join(allowed)}")
        return 2
    report = RUNS[a.mode](a)
    if a.out is not None:
        config = {k: v if isinstance(v, int | float | list | None) else str(v) for k, v in vars(a).items()}
        a.out.write_text(json.dumps({"mode": a.mode, "config": config, **report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
