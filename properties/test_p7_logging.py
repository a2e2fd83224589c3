"""P7: logging. The implementation writes exactly the lines the seed writes for what happened —
errors at error, the meta-stride overflow at debug wherever it sits in the error chain, the empty
propose at warning, the engaged notices once per process — compared as multisets (D3)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from batched.propose_log import log_propose_batched_err
from properties.behaviours import covers
from properties.call_plan import KEY_ARGMAX, KEY_ENGAGED, KEY_GATE
from properties.harness import run_side_by_side
from properties.log_checks import check_logs
from properties.report import format_report
from properties.run_config import current
from properties.specs import WorldSpec
from properties.stats import record_paths
from properties.strategies import world_specs
from reference.errors import ModelError
from reference.telemetry import LogCapture

RUN = current()


@covers("P7 logging", "B3", "B6", "B7", "B9", "B13", "B21", "B22", "B24", "B25", "D3")
@given(spec=world_specs(RUN, faults=True), seen=st.sets(st.sampled_from((KEY_ARGMAX, KEY_GATE, KEY_ENGAGED))))
def test_p7_logs(spec: WorldSpec, seen: set[str]) -> None:
    spec = replace(spec, step=replace(spec.step, seen_log_keys=tuple(sorted(seen))))
    sbs = run_side_by_side(spec)
    record_paths(sbs)
    mismatches = check_logs(sbs)
    assert not mismatches, format_report("P7 logging", sbs, mismatches)


@covers("P7 logging", "B25")
@given(depth=st.integers(0, 3), where=st.integers(0, 3), stride=st.booleans())
def test_p7_propose_error_level_reads_the_whole_chain(depth: int, where: int, stride: bool) -> None:
    messages = [f"layer {i}" for i in range(depth + 1)]
    if stride:
        messages[min(where, depth)] = "sequence slot 1: drafter block table of 9 blocks exceeds meta stride 8"
    err = ModelError(messages[-1])
    for m in reversed(messages[:-1]):
        err = err.context(m)
    with LogCapture() as cap:
        log_propose_batched_err("prefix", err)
    assert len(cap.records) == 1
    record = cap.records[0]
    assert record.level == ("DEBUG" if stride else "ERROR"), f"chain {messages}: logged at {record.level}"
    assert record.message == "prefix: " + ": ".join(messages)
