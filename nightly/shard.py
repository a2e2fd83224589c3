"""Sharding the nightly job over hosts: `--shard i/N` (0 <= i < N) gives host i either every N-th
test (`by="tests"`, the tests in sorted node-id order, dealt round-robin) or every test
(`by="seeds"`): each host then draws its own random examples, as every Hypothesis run without a
fixed seed does, and the hosts share what they find through the example database."""

from __future__ import annotations

import re
from dataclasses import dataclass

SHARD_BY = ("tests", "seeds")


@dataclass(slots=True, frozen=True)
class Shard:
    index: int = 0
    count: int = 1
    by: str = "tests"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, by: str = "tests") -> Shard:
    """`i/N` as a Shard; ValueError unless 0 <= i < N and `by` is tests or seeds."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 0 <= int(match.group(1)) < int(match.group(2)):
        raise ValueError(f"shard {text!r}: expected i/N with 0 <= i < N, e.g. 0/4")
    if by not in SHARD_BY:
        raise ValueError(f"shard by {by!r}: expected one of {', '.join(SHARD_BY)}")
    return Shard(int(match.group(1)), int(match.group(2)), by)


def select_tests(nodeids: list[str], shard: Shard) -> list[str]:
    """The node ids this shard runs, in their given order. Every shard's selection is disjoint from
    every other's and together they cover `nodeids` (for `by="seeds"` each shard runs them all)."""
    if shard.by == "seeds" or shard.count == 1:
        return list(nodeids)
    mine = {n for k, n in enumerate(sorted(set(nodeids))) if k % shard.count == shard.index}
    return [n for n in nodeids if n in mine]
