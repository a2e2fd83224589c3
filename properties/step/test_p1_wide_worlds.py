"""P1 at serving sizes: mixes past 16 and 64 rows, sequence and SSM slots past 64 and 256, token ids
past 32767 and 65535 (`properties.worlds.wide_worlds.wide_world_specs`), with faults over every row. The
other properties keep examples small, which never passes a row tile of 16, a 64-bit slot mask, an
8-bit slot id or a 16-bit token; here the whole check runs on one example: the world, the calls and
the logs. A fifth of the profile's examples: each costs a few small ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.sides.harness import checked_side_by_side
from properties.worlds.specs import WorldSpec
from properties.worlds.wide_worlds import wide_world_specs


@covers("P1 equivalence", "B1", "B2", "B6", "B8", "B10", "B13", "B16", "B19", "B23")
@settings(max_examples=max(5, settings().max_examples // 5))
@given(data=st.data())
def test_p1_wide_worlds(run: RunConfig, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(wide_world_specs(run), label="spec")
    checked_side_by_side("P1 wide worlds", run, spec, check_equivalence, check_calls, check_logs, record=True)
