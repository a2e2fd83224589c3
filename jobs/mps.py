"""`python -m jobs.mps -- COMMAND ...`: run COMMAND with a CUDA MPS daemon serving it and its children
(`properties.run.gpu.cuda_mps`: started before, stopped after), so that the processes of one step share
each GPU. Exits with COMMAND's code, or 2 (the reason printed) when MPS cannot start."""

from __future__ import annotations

import subprocess
import sys

from properties.run.gpu import MpsError, cuda_mps


def run_waiting(command: list[str]) -> int:
    """COMMAND's exit code; an interrupt (which reached COMMAND too) waits for it to finish."""
    proc = subprocess.Popen(command)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[1:] if args[:1] == ["--"] else args
    if not command:
        print("usage: python -m jobs.mps -- COMMAND ...", file=sys.stderr)
        return 2
    try:
        with cuda_mps():
            return run_waiting(command)
    except MpsError as e:
        print(f"jobs.mps: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
