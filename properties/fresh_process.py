"""Run examples in a process that has run no step yet.

Behaviour that is per process (a notice once per process, a flag set by the first error, a cache that
outlives a step) shows only in the first steps of a process; a test run reaches its first step in
whichever test happens to come first, which may check nothing of it. Here each call runs its
examples, in order and with every check, in a new process forked from a server that imported the
suite and then nothing else ran (`multiprocessing`'s forkserver, started once per test process):
the first example is the first step of a process, whatever ran in this one before.

On CUDA too: the server is a new interpreter (started by exec, not forked from this process), and
importing the suite and torch initializes no CUDA, so its children may use CUDA however much this
process has. A fork costs milliseconds where a spawned interpreter re-imports torch and the suite,
seconds an example on a GPU host whose every core runs a worker.
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext

from properties.config import RunConfig
from properties.specs import WorldSpec

# What the server imports before it forks: the suite and the spec, never a step's state.
PRELOAD = ["properties.harness", "properties.checks.compare", "properties.checks.calls", "properties.checks.logs"]


@functools.cache
def _server() -> BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
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
    from properties.harness import run_side_by_side
    from properties.report import format_report

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
