"""Penalties: the history scope, each penalty's formula, the gate and the per-sequence parameters."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.penalties import (
    PenaltyGate,
    PenaltyParams,
    PositionKind,
    apply_penalties,
    classify_penalties,
    penalty_history_scope,
    penalty_params_for,
)
from reference.state import ActiveSeq, SequenceState
from tests.row_models import py_penalize

VOCAB = 10
NEG_INF = float("-inf")
rows = st.lists(st.one_of(st.floats(-20, 20), st.just(0.0), st.just(NEG_INF)), min_size=VOCAB, max_size=VOCAB)
histories = st.lists(st.integers(0, VOCAB - 1), max_size=12)
params = st.builds(
    PenaltyParams,
    repetition=st.one_of(st.just(1.0), st.floats(0.25, 4.0)),
    frequency=st.one_of(st.just(0.0), st.floats(-2.0, 2.0)),
    presence=st.one_of(st.just(0.0), st.floats(-2.0, 2.0)),
    banned_ids=st.lists(st.integers(0, VOCAB - 1), max_size=3, unique=True).map(tuple),
)


@given(tokens=st.lists(st.integers(0, 5), max_size=15), end=st.one_of(st.none(), st.integers(0, 5)))
def test_history_scope_is_after_the_last_tool_call_end(tokens: list[int], end: int | None) -> None:
    scope = penalty_history_scope(tokens, end)
    if end is None or end not in tokens:
        assert scope == tokens
    else:
        last = len(tokens) - 1 - tokens[::-1].index(end)
        assert scope == tokens[last + 1 :] and end not in scope
    assert scope is not tokens


@given(row=rows, p=params, history=histories, dtype=st.sampled_from([torch.float64, torch.float32]))
def test_apply_penalties_matches_the_formula(
    row: list[float], p: PenaltyParams, history: list[int], dtype: torch.dtype
) -> None:
    logits = torch.tensor(row, dtype=dtype)
    before = logits.clone()
    out = apply_penalties(logits, p, history)
    assert torch.equal(logits, before) and out is not logits and out.dtype == dtype
    expected = py_penalize(logits.double().tolist(), p, history)
    if dtype == torch.float64:
        assert out.tolist() == expected
    else:
        torch.testing.assert_close(out, torch.tensor(expected, dtype=dtype))


def test_each_penalty() -> None:
    logits = torch.tensor([2.0, -2.0, 2.0, -2.0, 1.0], dtype=torch.float64)
    hist = [0, 1, 0, 4]
    assert apply_penalties(logits, PenaltyParams(repetition=2.0), hist).tolist() == [
        1.0,
        -4.0,
        2.0,
        -2.0,
        0.5,
    ]
    assert apply_penalties(logits, PenaltyParams(frequency=0.5), hist).tolist() == [1.0, -2.5, 2.0, -2.0, 0.5]
    assert apply_penalties(logits, PenaltyParams(presence=0.5), hist).tolist() == [1.5, -2.5, 2.0, -2.0, 0.5]
    banned = apply_penalties(logits, PenaltyParams(banned_ids=(2, 3)), hist).tolist()
    assert banned == [2.0, -2.0, NEG_INF, NEG_INF, 1.0]
    # Repetition applies to the input value, then frequency and presence subtract.
    both = apply_penalties(logits, PenaltyParams(repetition=2.0, frequency=0.25, presence=0.5), hist)
    assert both.tolist() == [0.0, -4.75, 2.0, -2.0, -0.25]


@given(p=params, row=rows, history=histories)
def test_neutral_gate_means_no_effect(p: PenaltyParams, row: list[float], history: list[int]) -> None:
    neutral = p.repetition == 1.0 and p.frequency == 0.0 and p.presence == 0.0 and not p.banned_ids
    assert classify_penalties(p) is (PenaltyGate.NEUTRAL if neutral else PenaltyGate.ACTIVE)
    if neutral:
        logits = torch.tensor(row, dtype=torch.float64)
        assert torch.equal(apply_penalties(logits, p, history), logits)


def test_invalid_parameters_and_history() -> None:
    logits = torch.zeros(4)
    for p in (
        PenaltyParams(repetition=0.0),
        PenaltyParams(repetition=float("inf")),
        PenaltyParams(presence=float("nan")),
        PenaltyParams(banned_ids=(4,)),
    ):
        with pytest.raises(ValueError):
            apply_penalties(logits, p, [0])
    with pytest.raises(ValueError, match="history"):
        apply_penalties(logits, PenaltyParams(frequency=1.0), [4])
    assert classify_penalties(PenaltyParams(repetition=0.0)) is PenaltyGate.ACTIVE


def test_params_for_verify_and_draft() -> None:
    a = ActiveSeq(
        seq_id=0,
        seq=SequenceState(0, None, 1),
        last_token=5,
        sampling_seed=0,
        max_tokens=9,
        eos_ids=(0,),
        repetition_penalty=1.2,
        frequency_penalty=0.1,
        presence_penalty=-0.3,
    )
    assert penalty_params_for(a, PositionKind.VERIFY, 5) == PenaltyParams(1.2, 0.1, -0.3, ())
    assert penalty_params_for(a, PositionKind.DRAFT, 5) == PenaltyParams()
    a.reasoning_end_token = 2
    assert penalty_params_for(a, PositionKind.VERIFY, 5) == PenaltyParams(1.2, 0.1, -0.3, (0, 2))
    assert penalty_params_for(a, PositionKind.DRAFT, 5) == PenaltyParams(banned_ids=(0, 2))
    assert penalty_params_for(a, PositionKind.VERIFY, 0).banned_ids == ()
