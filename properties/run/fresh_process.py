"""Run examples in a process that has run no step yet.

Behaviour that is per process (a notice once per process, a flag set by the first error, a cache that
outlives a step) shows only in the first steps of a process; a test run reaches its first step in
whichever test happens to come first, which may check nothing of it. Here each call runs its
examples, in order and with every check, in a new process forked from a server that imported the
suite and then nothing else ran (`multiprocessing`'s forkserver, started once per test process):
the first example is the first step of a process, whatever ran in this one before.

On CUDA too: the server is a new interpreter (started by exec, not forked from this process), so
its children may use CUDA however much this process has, as long as the server never asked the CUDA
runtime anything. Importing the suite asks one thing: `tvm_ffi` (imported with xgrammar) calls
`torch.cuda.is_available()` at import, and answered by the CUDA runtime that alone makes every later
fork fail on its first CUDA call ("Cannot re-initialize CUDA in forked subprocess"). So the server
runs with `PYTORCH_NVML_BASED_CUDA_CHECK=1`, PyTorch's switch for this case: the question is
answered through NVML, which leaves forks free. A fork costs milliseconds where a spawned interpreter
re-imports torch and the suite, seconds an example on a GPU host whose every core runs a worker.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver
from multiprocessing.context import BaseContext

from properties.config import RunConfig
from properties.worlds.specs import WorldSpec

# What the server imports before it forks: the suite and the spec, never a step's state; xgrammar
# too, which the spec imports only where it builds a grammar (`reference.grammar`), so that no
# fresh process pays for importing it.
PRELOAD = [
    "properties.sides.harness",
    "properties.checks.compare",
    "properties.checks.calls",
    "properties.checks.logs",
    "xgrammar",
]


# The server's environment beyond this process's (module docstring).
SERVER_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


@functools.cache
def _server() -> BaseContext:
    """The forkserver context, its server started with `SERVER_ENV` (then this process's environment
    is as it was)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    saved = {k: os.environ.get(k) for k in SERVER_ENV}
    os.environ.update(SERVER_ENV)
    try:
        forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return ctx


def run_fresh(specs: Sequence[WorldSpec], run: RunConfig) -> list[str]:
    """The report of every example of `specs` that fails any check (equivalence, calls, logs, the
    state outside the world), run in order as the first steps of a new process."""
    with ProcessPoolExecutor(max_workers=1, mp_context=_server()) as pool:
        return pool.submit(_run_all, tuple(specs), run).result()


def _run_all(specs: tuple[WorldSpec, ...], run: RunConfig) -> list[str]:
    from properties.checks.calls import check_calls
    from properties.checks.compare import check_equivalence
    from properties.checks.logs import check_logs
    from properties.failures.report import format_report
    from properties.sides.harness import run_side_by_side

    impl = run.impl
    reports = []
    for i, spec in enumerate(specs, start=1):
        try:
            sbs = run_side_by_side(spec, impl, run.replays)
        except AssertionError as e:  # the state outside the world: its report
            reports.append(f"step {i} of a fresh process: {e}")
            continue
        found = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
        if found:
            reports.append(format_report(f"step {i} of a fresh process", sbs, found))
    return reports
