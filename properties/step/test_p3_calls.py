"""P3: call accounting. Each sequence is decoded once, in one `decode_batch` of the rows in slot
order; `argmax_batch` runs once or not at all; the stash, the groups, the fallbacks and the
checkpoints are exactly the calls the oracle expects, with the inputs it expects."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs


@covers(
    "P3 call accounting",
    "B1",
    "B2",
    "B3",
    "B5",
    "B6",
    "B12",
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
)
@sharded(2)
@given(data=st.data())
def test_p3_call_accounting(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, faults=True), label="spec")
    checked_side_by_side("P3 call accounting", run, spec, check_calls, record=True)


@covers("P3 call accounting", "B12", "B13", "B23")
@given(data=st.data())
def test_p3_no_row_may_propose(run: RunConfig, data: st.DataObject) -> None:
    """Every bootstrapped row ends with this step's token or is backed off: the calls are still the
    oracle's (no stash, no propose; the decode, argmax and checkpoints as ever), and the world equals
    the reference's. Drawn for the whole world: row by row, such a world all but disappears once
    mixes pass a few rows, and with it every bug of work done for an empty set of proposers."""
    spec: WorldSpec = data.draw(world_specs(run, faults=True, no_proposer=True), label="spec")
    checked_side_by_side("P3 no row may propose", run, spec, check_calls, check_equivalence, record=True)
