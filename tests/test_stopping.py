"""The one stopper of child process groups (`properties.run.stopping`): Ctrl-C first, each harder
signal only once the last one's grace period ran out, the whole group reached, and a wait that
stops only what outlives its limit."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from properties.run.stopping import stop_group, wait_or_stop

GRACE = 1.0
LADDER = ((signal.SIGINT, GRACE), (signal.SIGTERM, GRACE), (signal.SIGKILL, None))
# A child that ignores the signals named on its command line, with a grandchild in its group that
# inherits that; it prints the grandchild's pid once both are running, then sleeps.
CHILD = """
import signal, subprocess, sys, time
for name in sys.argv[1:]:
    signal.signal(getattr(signal, name), signal.SIG_IGN)
code = "import time; print(flush=True); time.sleep(60)"
grandchild = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
grandchild.stdout.readline()
print(grandchild.pid, flush=True)
time.sleep(60)
"""


def child(*ignored: str) -> tuple[subprocess.Popen[bytes], int]:
    """A child in a process group of its own ignoring `ignored`, and its grandchild's pid, both ready."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *ignored], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def gone(pid: int) -> bool:
    """Whether process `pid` is gone (or a zombie waiting for a parent that is gone too)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize(
    ("ignored", "signal_that_stops", "at_least"),
    [
        ((), signal.SIGINT, 0.0),
        (("SIGINT",), signal.SIGTERM, GRACE),
        (("SIGINT", "SIGTERM"), signal.SIGKILL, 2 * GRACE),
    ],
    ids=["ctrl-c", "terminate", "kill"],
)
def test_each_signal_comes_only_after_the_last_ones_grace(
    ignored: tuple[str, ...], signal_that_stops: signal.Signals, at_least: float
) -> None:
    proc, grandchild = child(*ignored)
    start = time.monotonic()
    assert stop_group(proc, LADDER)
    took = time.monotonic() - start
    assert proc.returncode == -signal_that_stops and at_least <= took < at_least + 0.9, (proc.returncode, took)
    deadline = time.monotonic() + 5
    while not gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(grandchild), "the signal reaches the whole group"


def test_a_ladder_that_runs_out_says_so_and_a_gone_group_is_stopped() -> None:
    proc, _ = child("SIGINT", "SIGTERM")
    try:
        assert not stop_group(proc, ((signal.SIGINT, 0.2),)), "still running after the last grace period"
    finally:
        assert stop_group(proc, ((signal.SIGKILL, None),))
    assert stop_group(proc, LADDER), "a group that is gone is stopped"


def test_wait_or_stop_stops_only_what_outlives_its_limit() -> None:
    quick = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    assert not wait_or_stop(quick, 30.0, LADDER) and quick.returncode == 0
    proc, _ = child()
    assert wait_or_stop(proc, 0.2, LADDER) and proc.returncode == -signal.SIGINT
