"""P3 with P1 and P7 on mixes where most rows propose: group caps mostly of 2 and more, ladders from 0 up
(some above the batched drafter's limit, so groups return None), confidences asked for by D-Cut, by
a draft-stop logprob, by both or by neither, and faults aimed at the stash, the group proposes and
the per-sequence fallbacks; and on mixes where every row proposes, so that the first group always
forms and its one outcome (drafts, an empty member, None, an error) or a fallback's is what varies.
General mixes reach a group of two proposing rows too rarely to show a wrong chunking, a wrong
confidence source or a mishandled group result."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.worlds.aimed_worlds import group_worlds, proposing_worlds
from properties.worlds.specs import WorldSpec


@covers("P3 call accounting", "B14", "B16", "B17", "B18", "B19", "B20", "B21", "B22", "B23", "D4")
@sharded(2)
@given(data=st.data())
def test_p3_group_outcomes(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(group_worlds(run), label="spec")
    checked_side_by_side("P3 group outcomes", run, spec, check_equivalence, check_calls, check_logs)


@covers(
    "P3 call accounting",
    "B13",
    "B14",
    "B15",
    "B16",
    "B17",
    "B18",
    "B19",
    "B20",
    "B21",
    "B22",
    "B23",
    "B24",
    "B25",
    "B26",
    "D4",
)
@sharded(2)
@given(data=st.data())
def test_p3_proposing_mixes(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(proposing_worlds(run), label="spec")
    checked_side_by_side("P3 proposing mixes", run, spec, check_equivalence, check_calls, check_logs)
