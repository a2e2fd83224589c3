"""Each mutant's pytest in a process forked from one server that imported torch, Hypothesis, pytest
and xgrammar (about 3 s a process on a CI core, paid once per run instead of once per mutant;
xgrammar alone, with the tokenizer library it imports, is about 0.7 s of it).

The server imports third-party packages only, never a module of the project, and a child puts its
copy of the project first on the import path, so every module of the suite and of the step comes
from the mutated copy (`mutants.execute.read_outcome` also checks where the step came from). A
child runs exactly what `python -m pytest ARGS` would, in the copy's folder, with the environment
it is given, its output to a log file; it writes its exit status to a file as it ends, so the
server keeps no threads and reaps nothing (its children are reaped by the kernel).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PRELOAD = ("numpy", "torch", "hypothesis", "pytest", "xgrammar")
SERVER = """
import json, os, signal, sys, traceback
for name in sys.argv[1:]:
    __import__(name)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.setsid()
            fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            sys.path[:] = req["path"]
            sys.argv = ["pytest", *req["args"]]
            import pytest
            code = int(pytest.main(req["args"]))
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            with open(req["code"] + ".tmp", "w") as f:
                f.write(str(code))
            os.replace(req["code"] + ".tmp", req["code"])
            os._exit(code)
    sys.stdout.write(json.dumps({"pid": pid}) + "\\n")
    sys.stdout.flush()
"""


@dataclass(slots=True)
class Finished:
    """A child's end: its exit status (None when it ran past its time and was killed, or died
    without writing one) and its output."""

    code: int | None
    output: str
    timed_out: bool = False


@dataclass(slots=True)
class PytestServer:
    """The server process and the lock that keeps one request on its pipe at a time."""

    proc: subprocess.Popen[str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str], path: list[str], work: Path, timeout_s: float
    ) -> Finished:
        """`pytest ARGS` in `cwd` with exactly `env` and the import path `path`; waits for it, at
        most `timeout_s` seconds (then kills its whole process group)."""
        log, code_file = work / "pytest.log", work / "pytest.code"
        code_file.unlink(missing_ok=True)  # a status left by an earlier run in `work` is not this one's
        req = {"args": args, "cwd": str(cwd), "env": env, "path": path, "log": str(log), "code": str(code_file)}
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the pytest server ended (exit {self.proc.poll()})")
        pid = json.loads(line)["pid"]
        deadline = time.monotonic() + timeout_s
        while not code_file.exists():
            if time.monotonic() > deadline:
                _kill_group(pid)
                return Finished(None, _read(log), timed_out=True)
            if not _alive(pid) and not code_file.exists():
                return Finished(None, _read(log) + "\n(the process died without an exit status)")
            time.sleep(0.05)
        return Finished(int(code_file.read_text()), _read(log))

    def close(self) -> None:
        """End the server (its running children end with their own runs)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@contextlib.contextmanager
def pytest_server(env: dict[str, str]) -> Iterator[PytestServer]:
    """A server that imported `PRELOAD`, started with `env` from a neutral folder (no project on its
    own import path but what `env`'s PYTHONPATH or an installed package adds); ended on exit."""
    cmd = [sys.executable, "-c", SERVER, *PRELOAD]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/")
    server = PytestServer(proc)
    try:
        yield server
    finally:
        server.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""
