"""Spreading a round over the workers of a host and the hosts of a job.

pytest-xdist deals whole tests to workers, so one slow property would keep one core busy. A round
runs with `--dist each` instead: every worker runs every test of the shard on its own share of the
test's examples, each test case (each case of a split property too) from its own seed, against one
example database. A test that is not a Hypothesis test runs on the first worker only; the others
skip it with `SHARE_SKIP`, which the results leave out. `--shard i/N` gives host i every N-th test
(`by="tests"`) or every test (`by="seeds"`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

SHARE_SKIP = "nightly: not this worker's share"
SHARD_BY = ("tests", "seeds")


@dataclass(slots=True, frozen=True)
class Shard:
    index: int = 0
    count: int = 1
    by: str = "tests"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, by: str = "tests") -> Shard:
    """`i/N` as a Shard; ValueError unless 0 <= i < N and `by` is one of `SHARD_BY`."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 0 <= int(match.group(1)) < int(match.group(2)):
        raise ValueError(f"--shard {text!r}: expected i/N with 0 <= i < N, e.g. 0/4")
    if by not in SHARD_BY:
        raise ValueError(f"--shard-by {by!r}: expected one of {', '.join(SHARD_BY)}")
    return Shard(int(match.group(1)), int(match.group(2)), by)


def select_tests(nodeids: list[str], shard: Shard) -> list[str]:
    """The node ids `shard` runs, in their given order: with `by="tests"` every N-th of them in
    sorted order (the shards are disjoint, cover `nodeids` and differ in size by at most one),
    with `by="seeds"` all of them."""
    if shard.by == "seeds" or shard.count == 1:
        return list(nodeids)
    mine = {n for k, n in enumerate(sorted(set(nodeids))) if k % shard.count == shard.index}
    return [n for n in nodeids if n in mine]


def share(total: int, index: int, count: int) -> int:
    """Worker `index`'s part of `total` examples dealt over `count` workers: the parts differ by at
    most one and add up to `total`. A worker xdist starts in place of a crashed one has a number
    past the count and takes the share its number wraps to."""
    k = index % count
    return total // count + (1 if k < total % count else 0)


def worker_seed(run_seed: int, host: int, round_no: int, index: int, nodeid: str) -> int:
    """The seed of one test case (`nodeid`: each case of a split property its own) on one worker of
    one host in one round: a 64-bit hash of all five, so no two of them draw the same stream and one
    run seed gives the same streams again."""
    digest = hashlib.sha256(f"{run_seed}/{host}/{round_no}/{index}/{nodeid}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def replays_database(index: int, count: int) -> bool:
    """Whether this worker replays the example database (and runs the plain tests): the first
    worker of the host only, so a saved failure is replayed and shrunk once, not once per worker."""
    return index % count == 0
