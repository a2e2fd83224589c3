"""Stopping a child's process group, gently first: a ladder of signals, each sent to the whole group
once the previous one's grace period ran out, so that a pytest run gets Ctrl-C first and still
writes its reports (JUnit XML, pytest-benchmark's JSON) before anything harder reaches it. The one
stopper of the jobs' steps (`jobs.session`) and the nightly's rounds (`nightly.runner`)."""

from __future__ import annotations

import os
import signal
import subprocess

Ladder = tuple[tuple[signal.Signals, float | None], ...]  # (signal, seconds to wait for the exit; None: no limit)
CTRL_C_THEN_KILL: Ladder = ((signal.SIGINT, 20.0), (signal.SIGKILL, None))


def stop_group(proc: subprocess.Popen[bytes], ladder: Ladder = CTRL_C_THEN_KILL) -> bool:
    """Send `proc`'s process group (`proc` started with `start_new_session=True`) each signal of
    `ladder` in turn, each followed by its grace period for `proc` to exit. True once `proc` exited
    or its group is gone; False when the last grace period ran out with `proc` still running."""
    for sig, grace in ladder:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return True
        try:
            proc.wait(timeout=grace)
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


def wait_or_stop(proc: subprocess.Popen[bytes], limit_s: float | None, ladder: Ladder = CTRL_C_THEN_KILL) -> bool:
    """Wait for `proc` up to `limit_s` seconds (None: no limit); past it stop its process group
    (`stop_group`). True when the limit stopped it."""
    try:
        proc.wait(timeout=limit_s)
        return False
    except subprocess.TimeoutExpired:
        stop_group(proc, ladder)
        return True
