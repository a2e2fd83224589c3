"""P1: the implementation leaves every sequence, cache, checkpoint and drafter state as the
per-sequence reference does (bit-equal in exact numerics), untouched sequences bit-identical."""

from __future__ import annotations

from hypothesis import given

from properties.behaviours import covers
from properties.compare import check_equivalence
from properties.harness import run_side_by_side
from properties.report import format_report
from properties.run_config import current
from properties.specs import WorldSpec
from properties.stats import record_paths
from properties.strategies import world_specs

RUN = current()


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
    "B14",
    "B15",
    "B16",
    "B17",
    "B18",
    "B19",
    "B20",
    "B22",
    "B23",
    "B26",
    "D4",
)
@given(spec=world_specs(RUN))
def test_p1_equivalence(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    record_paths(sbs)
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report("P1 equivalence", sbs, mismatches)
