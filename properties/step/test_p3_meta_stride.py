"""P3 with P1 and P7 at the propose-meta stride (B26): every row proposes, so the first group forms,
and the stride sits one below, at or one above the drafter block table of one of its members, whose
main block table is shorter. The general mixes rarely put a stride next to a table length, where a
bound that is off by one or read from the wrong table shows."""

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
from properties.worlds.aimed_worlds import stride_worlds
from properties.worlds.specs import WorldSpec


@covers("P3 call accounting", "B21", "B25", "B26")
@sharded(2)
@given(data=st.data())
def test_p3_meta_stride_boundary(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(stride_worlds(run), label="spec")
    checked_side_by_side("P3 meta stride", run, spec, check_equivalence, check_calls, check_logs)
