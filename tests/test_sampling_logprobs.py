"""extract_single_logprobs: the raw row's float64 log-softmax, the chosen token and the top-k."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.logprobs import extract_single_logprobs
from reference.state import TokenLogprobs


class VocabModel:
    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def vocab_size(self) -> int:
        return self.vocab


values = st.one_of(st.floats(-50, 50), st.sampled_from([0.0, 1.0, float("-inf")]))


@given(
    data=st.data(),
    vocab=st.integers(1, 40),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
)
def test_logprobs_are_the_raw_log_softmax(data: st.DataObject, vocab: int, dtype: torch.dtype) -> None:
    row = torch.tensor(data.draw(st.lists(values, min_size=vocab, max_size=vocab)), dtype=dtype)
    if not bool(torch.isfinite(row).any()):
        row[0] = 0.0
    before = row.clone()
    tok = data.draw(st.integers(0, vocab - 1))
    k = data.draw(st.integers(0, vocab + 3))
    lp = extract_single_logprobs(VocabModel(vocab), row, tok, k)
    assert torch.equal(row, before)
    expected = torch.log_softmax(row.double(), dim=0).tolist()
    assert lp is not None and lp.token == tok and lp.logprob == expected[tok]
    best_first = sorted(range(vocab), key=lambda i: (-expected[i], i))[: min(k, vocab)]
    assert lp.top == tuple((i, expected[i]) for i in best_first)


def test_ties_and_k_zero() -> None:
    row = torch.tensor([0.0, 2.0, 2.0, 1.0, 2.0])
    lp = extract_single_logprobs(VocabModel(5), row, 3, 2)
    assert lp is not None and [i for i, _ in lp.top] == [1, 2]
    assert extract_single_logprobs(VocabModel(5), row, 3, 0) == TokenLogprobs(3, lp.logprob, ())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_undefined_log_softmax_gives_none(bad: float) -> None:
    assert extract_single_logprobs(VocabModel(3), torch.tensor([0.0, bad, 1.0]), 0, 2) is None
    assert extract_single_logprobs(VocabModel(2), torch.full((2,), float("-inf")), 0, 2) is None


@pytest.mark.parametrize(
    ("tok", "k", "vocab", "match"),
    [(3, 1, 3, "token"), (-1, 1, 3, "token"), (0, -1, 3, "count"), (0, 1, 4, "shape")],
)
def test_bad_arguments(tok: int, k: int, vocab: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        extract_single_logprobs(VocabModel(vocab), torch.zeros(3), tok, k)
