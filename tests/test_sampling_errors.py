"""Sampling never modifies its input row, and fails with a SamplingError (a ModelError) instead of
returning a token it cannot justify."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import ModelError
from reference.penalties import PenaltyParams
from reference.sampling import SamplingError, sample_token_with_grammar
from reference.sched_ctx import SamplingConfig
from tests.row_models import ArgmaxModel


class MaskGrammar:
    """A grammar state reduced to its mask: what sampling reads from a grammar."""

    def __init__(self, allowed: list[bool]) -> None:
        self.allowed = torch.tensor(allowed)

    def allowed_mask(self, device: torch.device | str | None = None) -> torch.Tensor:
        return self.allowed.to(device)


def run(
    row: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    eos_mask: tuple[int, ...] = (),
    grammar: MaskGrammar | None = None,
    pen: PenaltyParams | None = None,
    history: tuple[int, ...] = (),
    sampling: SamplingConfig | None = None,
    vocab: int | None = None,
) -> int:
    return sample_token_with_grammar(
        ArgmaxModel(vocab or row.shape[-1]),
        row,
        temperature,
        top_k,
        top_p,
        eos_mask,
        grammar,  # type: ignore[arg-type]
        pen or PenaltyParams(),
        history,
        sampling or SamplingConfig(),
        seq_id=1,
        seed=2,
        position=3,
    )


@given(
    data=st.data(),
    vocab=st.integers(2, 16),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
    temperature=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    top_k=st.integers(0, 4),
    top_p=st.sampled_from([1.0, 0.9, 0.3]),
    rep=st.sampled_from([1.0, 1.3, 0.7]),
    freq=st.sampled_from([0.0, 0.5]),
    pres=st.sampled_from([0.0, -0.5]),
    fast=st.booleans(),
)
def test_row_is_never_modified(
    data: st.DataObject,
    vocab: int,
    dtype: torch.dtype,
    temperature: float,
    top_k: int,
    top_p: float,
    rep: float,
    freq: float,
    pres: float,
    fast: bool,
) -> None:
    values = data.draw(st.lists(st.floats(-10, 10), min_size=vocab, max_size=vocab))
    row = torch.tensor(values, dtype=dtype)
    before = row.clone()
    allowed = data.draw(st.lists(st.booleans(), min_size=vocab, max_size=vocab).filter(any))
    history = tuple(data.draw(st.lists(st.integers(0, vocab - 1), max_size=6)))
    eos = (0,) if allowed[1:] and any(allowed[1:]) and data.draw(st.booleans()) else ()
    tok = run(
        row,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        eos_mask=eos,
        grammar=MaskGrammar(allowed),
        pen=PenaltyParams(rep, freq, pres),
        history=history,
        sampling=SamplingConfig(fast_greedy_grammar=fast),
    )
    assert torch.equal(row, before) and row.dtype == dtype
    assert allowed[tok] and tok not in eos


def test_errors_are_model_errors() -> None:
    assert issubclass(SamplingError, ModelError)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_nan_row(temperature: float) -> None:
    row = torch.tensor([0.0, float("nan"), 1.0])
    with pytest.raises(SamplingError, match="row has NaN"):
        run(row, temperature=temperature)


def test_posinf_row() -> None:
    with pytest.raises(SamplingError, match=r"row has \+inf"):
        run(torch.tensor([0.0, float("inf")]))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_everything_masked(temperature: float) -> None:
    row = torch.tensor([0.0, 1.0, 2.0])
    with pytest.raises(SamplingError, match="no token is allowed"):
        run(
            row,
            temperature=temperature,
            eos_mask=(0,),
            pen=PenaltyParams(banned_ids=(1,)),
            grammar=MaskGrammar([True, True, False]),
        )
    with pytest.raises(SamplingError, match="no token is allowed"):
        run(torch.full((3,), float("-inf")), temperature=temperature)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": -0.5}, "temperature"),
        ({"temperature": float("inf")}, "temperature"),
        ({"top_k": -1}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"pen": PenaltyParams(repetition=0.0)}, "repetition"),
        ({"pen": PenaltyParams(frequency=float("nan"))}, "frequency"),
        ({"pen": PenaltyParams(banned_ids=(9,))}, "banned"),
        ({"history": (5,), "pen": PenaltyParams(presence=1.0)}, "history"),
        ({"eos_mask": (3,)}, "EOS mask"),
        ({"grammar": MaskGrammar([True, True])}, "grammar mask"),
        ({"vocab": 4}, "shape"),
    ],
)
def test_invalid_inputs(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(SamplingError, match=match):
        run(torch.tensor([0.0, 1.0, 2.0]), **kwargs)  # type: ignore[arg-type]


def test_penalty_overflow_is_an_error() -> None:
    with pytest.raises(SamplingError, match=r"\+inf"):
        run(torch.tensor([0.0, 1e308]), pen=PenaltyParams(repetition=1e-10), history=(1,))
