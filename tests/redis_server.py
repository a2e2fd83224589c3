"""A throw-away Redis server for tests: `redis-server` on a free loopback port, its files in a
temporary folder, no persistence, stopped when done."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from properties.run.stopping import Ladder, stop_group

BINARY = "redis-server"
INSTALL_HINT = "no redis-server binary (Debian: apt-get install -y redis-server)"
READY_SECONDS = 10.0
STOP: Ladder = ((signal.SIGTERM, 10.0), (signal.SIGKILL, None))  # a server started by `start`


def binary() -> str | None:
    """The path of `redis-server`, or None when it is not installed."""
    return shutil.which(BINARY)


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers_ping(port: int) -> bool:
    """True when a Redis server on `port` answers PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start(folder: Path, attempts: int = 3) -> tuple[subprocess.Popen[bytes], int]:
    """Start `redis-server` on a free loopback port with `folder` as its working folder; the process
    and its port once it answers PING. RuntimeError when it is not installed or never answers."""
    exe = binary()
    if exe is None:
        raise RuntimeError(INSTALL_HINT)
    folder.mkdir(parents=True, exist_ok=True)
    for _ in range(attempts):
        port = free_port()
        cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
        cmd += ["--save", "", "--appendonly", "no"]
        with (folder / f"redis-{port}.log").open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline and proc.poll() is None:
            if answers_ping(port):
                return proc, port
            time.sleep(0.05)
        stop(proc)  # the port was taken in between, or the server did not start
    raise RuntimeError(f"redis-server did not start; see the logs in {folder}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started by `start` (in a process group of its own): SIGTERM, then SIGKILL."""
    stop_group(proc, STOP)


@contextmanager
def running(folder: Path) -> Iterator[str]:
    """A Redis server for the duration of the block; yields its URL (database 0)."""
    proc, port = start(folder)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)
