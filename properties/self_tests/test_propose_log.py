"""The suite's own propose-error logger (`batched.propose_log.log_propose_batched_err`, B25): the
meta-stride overflow logs at debug wherever it sits in the error chain, every other error at error,
with the whole chain in one line. P7 (`properties/step/test_p7_logging.py`) holds the implementation
under test to the lines and levels the seed writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batched.propose_log import log_propose_batched_err
from properties.behaviours import covers
from reference.errors import ModelError
from reference.telemetry import LogCapture

pytestmark = pytest.mark.self_test


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
