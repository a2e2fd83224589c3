"""P1: the implementation leaves every sequence, cache, checkpoint and drafter state as the
per-sequence reference does (bit-equal in exact numerics), untouched sequences bit-identical."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs


# What P1 kills in the measured matrix (docs/coverage-matrix.md): group cap, group outcomes, the
# group-returned-None fallback and the DCUT confidences (B14, B19, B20, D4) are P3's, P4's and P5's, whose
# generators aim at them; P1's general mixes ran against those mutants and killed none.
@covers(
    "P1 equivalence",
    "B1",
    "B2",
    "B4",
    "B5",
    "B6",
    "B8",
    "B10",
    "B11",
    "B12",
    "B13",
    "B15",
    "B16",
    "B17",
    "B18",
    "B22",
    "B23",
    "B26",
)
@sharded(2)
@given(data=st.data())
def test_p1_equivalence(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run), label="spec")
    checked_side_by_side("P1 equivalence", run, spec, check_equivalence, record=True)
