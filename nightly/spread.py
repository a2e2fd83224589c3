"""Spreading every test's examples over the workers of a host.

A round runs with pytest-xdist's `--dist each`: every worker runs every test of the shard, each on
its own share of the test's examples and from its own random seed, and all of them share one
example database. So one slow property keeps every core busy instead of one. A test that is not a
Hypothesis test (a plain check) runs on the first worker only; the others skip it with
`SHARE_SKIP`, which the result records leave out.
"""

from __future__ import annotations

import hashlib
import os

from properties.gpu import worker_index

SHARE_SKIP = "nightly: not this worker's share"
ENV_WORKER = "PYTEST_XDIST_WORKER"
ENV_WORKER_COUNT = "PYTEST_XDIST_WORKER_COUNT"


def worker_slot(env: dict[str, str] | None = None) -> tuple[int, int]:
    """(this process's worker number, the number of workers): from pytest-xdist's environment, or
    (0, 1) outside a worker. A worker xdist starts in place of a crashed one has a number past the
    count; it takes the share of its number modulo the count."""
    env = dict(os.environ) if env is None else env
    index = worker_index(env.get(ENV_WORKER))
    if index is None:
        return 0, 1
    return index, max(1, int(env.get(ENV_WORKER_COUNT) or 1))


def share(total: int, index: int, count: int) -> int:
    """Worker `index`'s part of `total` examples dealt over `count` workers: the parts differ by at
    most one and add up to `total` over the indices 0..count-1 (indices past the count wrap)."""
    k = index % count
    return total // count + (1 if k < total % count else 0)


def worker_seed(run_seed: int, host: int, round_no: int, index: int, nodeid: str) -> int:
    """The Hypothesis seed of one test on one worker of one host (its shard index) in one round: a
    64-bit hash of all five, so that no two hosts, workers, rounds or tests draw the same stream
    and a run's `run_seed` gives the same streams again."""
    digest = hashlib.sha256(f"{run_seed}/{host}/{round_no}/{index}/{nodeid}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def replays_database(index: int, count: int) -> bool:
    """Whether this worker replays the example database before generating: the first worker of
    the host only, so that a saved failure is replayed (and shrunk) once, not once per worker."""
    return index % count == 0
