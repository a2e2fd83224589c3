"""The noise kernel (`batched.vector.noise`): the uniforms of `batched.vector.noise` bit for bit, run
by Triton's interpreter on the CPU (CI) and on a GPU."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from batched.vector.noise import noise_key_rows, noise_uniform, uniform_from_keys
from batched.vector.triton_device import available
from tests.interpreted import run_interpreted

SEEDS = st.integers(-(2**70), 2**70)
POSITIONS = st.integers(0, 2**40)


def same_bits(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.shape == want.shape and torch.equal(got.view(torch.int64), want.view(torch.int64))


def interpreted_cases() -> None:
    """Run with TRITON_INTERPRET=1: rows of seeds that set every key bit, vocabularies that do and do
    not fill the last program, against the tensor arithmetic."""
    seeds = [0, 1, -5, 2**64 - 1, 2**64 + 9, 123456789, 2**63]
    positions = [0, 7, 1, 300, 2, 2**33, 5]
    keys = torch.tensor(noise_key_rows(seeds, positions), dtype=torch.int64)
    for vocab in (1, 600, 1024, 3000):
        got, want = noise_uniform(keys, vocab), uniform_from_keys(keys, vocab)
        assert same_bits(got, want), f"vocab {vocab}: {(got != want).nonzero()[:5].tolist()}"


def test_the_kernel_in_the_triton_interpreter_on_the_cpu() -> None:
    run_interpreted("tests.test_noise_kernel", "interpreted_cases")


def test_keys_that_are_not_four_int64_per_row_are_refused() -> None:
    with pytest.raises(ValueError, match="4 int64 per row"):
        noise_uniform(torch.zeros(6, dtype=torch.int64), 10)
    with pytest.raises(ValueError, match="4 int64 per row"):
        noise_uniform(torch.zeros(4, dtype=torch.int32), 10)
    assert not available(torch.device("cpu"))


@pytest.mark.gpu
@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(SEEDS, POSITIONS), min_size=1, max_size=20), vocab=st.integers(1, 40000))
def test_the_kernel_equals_the_tensor_arithmetic_on_a_gpu(rows, vocab) -> None:
    keys = torch.tensor(noise_key_rows(*zip(*rows, strict=True)), dtype=torch.int64, device="cuda")
    assert same_bits(noise_uniform(keys, vocab), uniform_from_keys(keys, vocab))
