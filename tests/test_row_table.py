"""The row columns of the fully batched step (`batched.row_table`) classify every row exactly as the
per-row functions do: EOS hold, neutral penalties and batched-argmax eligibility (B4, B5)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batched.row_table import column, eos_held, greedy_rows, penalties_neutral, row_table
from batched.step import greedy_eligible
from properties.run_config import current
from properties.specs import WorldSpec
from properties.strategies import world_specs
from properties.world import build_world
from reference.eos_hold import presample_hold_for
from reference.penalties import PenaltyGate, PositionKind, classify_penalties, penalty_params_for

RUN = current()


@given(spec=world_specs(RUN))
def test_columns_classify_rows_as_the_per_row_functions(spec: WorldSpec) -> None:
    w = build_world(spec)
    floor = w.sched.watchdog.min_reasoning_floor
    t = row_table(w.active, floor)
    pens = [penalty_params_for(a, PositionKind.VERIFY, floor) for a in w.active]
    assert eos_held(t).tolist() == [presample_hold_for(a, len(a.output_tokens)).any() for a in w.active]
    assert penalties_neutral(t).tolist() == [classify_penalties(p) is PenaltyGate.NEUTRAL for p in pens]
    want = [greedy_eligible(a, p, w.sched, w.verify_ctx) for a, p in zip(w.active, pens, strict=True)]
    assert greedy_rows(t, w.sched, w.verify_ctx).tolist() == want


def test_an_empty_batch_has_empty_columns() -> None:
    t = row_table([], 0)
    assert t.temperature.shape == (0,) and eos_held(t).tolist() == []


scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)


@pytest.mark.parametrize(("code", "dtype"), [("d", torch.float64), ("q", torch.int64), ("B", torch.bool)])
@given(values=st.lists(scalars, max_size=6))
def test_a_column_is_what_torch_tensor_makes_of_the_values(code: str, dtype: torch.dtype, values: list) -> None:
    if code == "B":
        values = [bool(v) for v in values]  # the bool columns hold bools only
    try:
        want: torch.Tensor | type = torch.tensor(tuple(values), dtype=dtype)
    except Exception as e:  # the same exception, whatever it is
        want = type(e)
    try:
        got: torch.Tensor | type = column(tuple(values), code, dtype)
    except Exception as e:
        got = type(e)
    if isinstance(want, type) or isinstance(got, type):
        assert got == want
    else:
        assert got.dtype == want.dtype and got.shape == want.shape and bool(((got == want) | (got != got)).all())
