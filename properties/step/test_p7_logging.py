"""P7: logging. The implementation writes exactly the lines the seed writes for what happened —
errors at error, the meta-stride overflow at debug wherever it sits in the error chain, the empty
propose at warning, the engaged notices once per process — compared as multisets (D3). The suite's
own propose-error logger is checked in `properties/self_tests/test_propose_log.py`."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.run.fresh_process import run_fresh
from properties.run.shards import sharded
from properties.sides.call_plan import KEY_ARGMAX, KEY_ENGAGED, KEY_GATE
from properties.sides.harness import checked_side_by_side
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs


@covers("P7 logging", "B3", "B6", "B7", "B9", "B13", "B21", "B22", "B24", "B25", "D3")
@sharded(2)
@given(data=st.data(), seen=st.sets(st.sampled_from((KEY_ARGMAX, KEY_GATE, KEY_ENGAGED))))
def test_p7_logs(run: RunConfig, shard: int, data: st.DataObject, seen: set[str]) -> None:
    spec: WorldSpec = data.draw(world_specs(run, faults=True), label="spec")
    spec = replace(spec, step=replace(spec.step, seen_log_keys=tuple(sorted(seen))))
    checked_side_by_side("P7 logging", run, spec, check_logs, record=True)


@covers("P7 logging", "B3", "B13", "B21", "B24", "B25")
@settings(max_examples=max(3, settings().max_examples // 6))
@given(data=st.data())
def test_p7_the_first_steps_of_a_process(run: RunConfig, data: st.DataObject) -> None:
    """A process's first steps log, and leave everything, as any later step does: the examples run in
    a process that has run no step before (`properties.run.fresh_process`), every check on each."""
    specs = data.draw(st.lists(world_specs(run, faults=True), min_size=1, max_size=3), label="specs")
    reports = run_fresh(specs, run)
    assert not reports, "\n\n".join(reports)
