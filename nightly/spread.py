"""Spreading a nightly job over hosts: `--shard i/N` gives host i every N-th test (`by="tests"`;
a property split over cases is one test, its cases on one host, as the rounds plan it whole) or
every test (`by="seeds"`, each host drawing its own examples: the shard index is part of every
seed). Within a host, a round spreads each test's examples over the workers as the suite spreads a
property's examples over its cases (`properties.run.shards`, through `nightly.plugin`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from properties.run.shards import property_id

SHARD_BY = ("tests", "seeds")


@dataclass(slots=True, frozen=True)
class Shard:
    """Host `index` of `count`, which takes every `count`-th test (`by="tests"`) or every test (`by="seeds"`)."""

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
    """The node ids `shard` runs, in their given order: with `by="tests"` every N-th test in sorted
    order, a split property's cases together (`property_id`; the shards are disjoint, cover
    `nodeids` and differ by at most one test), with `by="seeds"` all of them."""
    if shard.by == "seeds" or shard.count == 1:
        return list(nodeids)
    tests = sorted({property_id(n) for n in nodeids})
    mine = {t for k, t in enumerate(tests) if k % shard.count == shard.index}
    return [n for n in nodeids if property_id(n) in mine]
