"""The counter-based noise: a pure function of (seed, position, token id), the same on every device,
and sampled tokens that depend on nothing else (batch order, call order, vocabulary prefix)."""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.decisions import argmax_lowest
from reference.penalties import PenaltyParams
from reference.sampling import gumbel_noise, noise_bits, noise_keys, sample_token_with_grammar
from reference.sched_ctx import SamplingConfig
from tests.row_models import ArgmaxModel

M32 = 0xFFFFFFFF
IDS = [0, 1, 2, 1000, 131071]
# (seed, position) -> noise_bits for IDS. Changing these changes every sampled token: a deliberate act.
GOLDEN_BITS = {
    (0, 0): [285795983277685, 4325959942093337, 3300646686447812, 1817302168435768, 2222333127955798],
    (42, 7): [2369415480940083, 2548046429415772, 4059451831781984, 2107618142427279, 3846912258651742],
    (2**64 - 1, 123456): [
        3603029108982908,
        3862001584050795,
        216083798902179,
        2684446475732048,
        414477435888560,
    ],
    (-1, 3): [672421910463278, 268052247125271, 1216430022216332, 1272047423999598, 3706038397711836],
}
GOLDEN_KEYS = {(0, 0): (1293516399, 2802244911, 956087953, 595752380)}
# Tokens sampled at positions 0..11 with seed 2024, temperature 1, from linspace(-1, 1, 16).
GOLDEN_TOKENS = [4, 10, 1, 15, 1, 5, 11, 10, 10, 13, 14, 4]


def py_fmix32(x: int) -> int:
    """MurmurHash3's finalizer in plain Python integers: the oracle for the tensor version."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & M32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & M32
    return x ^ (x >> 16)


def py_bits(seed: int, position: int, token: int) -> int:
    k0, k1, k2, k3 = noise_keys(seed, position)
    h1 = py_fmix32(py_fmix32(token ^ k0) ^ k1)
    h2 = py_fmix32(py_fmix32(token ^ k2) ^ k3)
    return (h1 << 20) | (h2 >> 12)


def test_golden_bits() -> None:
    assert noise_keys(0, 0) == GOLDEN_KEYS[(0, 0)]
    for (seed, position), bits in GOLDEN_BITS.items():
        assert noise_bits(seed, position, torch.tensor(IDS)).tolist() == bits


def test_golden_gumbel() -> None:
    expected = torch.tensor(
        [0.442803019736141, 0.5629086426111075, 2.2650095158844636, 1.484922292742439, 0.6742824749566484],
        dtype=torch.float64,
    )
    torch.testing.assert_close(gumbel_noise(42, 7, 5), expected, rtol=1e-13, atol=0)


@given(
    seed=st.integers(-(2**70), 2**70),
    position=st.integers(0, 2**40),
    tokens=st.lists(st.integers(0, 2**20), min_size=1, max_size=20),
)
def test_tensor_hash_equals_integer_hash(seed: int, position: int, tokens: list[int]) -> None:
    got = noise_bits(seed, position, torch.tensor(tokens)).tolist()
    assert got == [py_bits(seed, position, t) for t in tokens]
    assert all(0 <= b < 2**52 for b in got)


@given(seed=st.integers(0, 2**64 - 1), position=st.integers(0, 10_000), vocab=st.integers(1, 300))
def test_noise_is_finite_and_prefix_stable(seed: int, position: int, vocab: int) -> None:
    g = gumbel_noise(seed, position, vocab)
    assert g.dtype == torch.float64 and bool(torch.isfinite(g).all())
    # A token's noise does not depend on the vocabulary size.
    assert torch.equal(gumbel_noise(seed, position, vocab + 7)[:vocab], g)


def test_negative_position_is_an_error() -> None:
    with pytest.raises(ValueError, match="position"):
        noise_keys(1, -1)


def test_different_seeds_and_positions_differ() -> None:
    base = noise_bits(5, 9, torch.arange(1000))
    assert int((noise_bits(6, 9, torch.arange(1000)) != base).sum()) > 990
    assert int((noise_bits(5, 10, torch.arange(1000)) != base).sum()) > 990
    assert len(set(base.tolist())) == 1000


def test_noise_is_gumbel_distributed() -> None:
    g = gumbel_noise(123, 0, 200_000)
    # Standard Gumbel: mean = Euler-Mascheroni, variance = pi^2 / 6.
    assert abs(float(g.mean()) - 0.5772156649) < 0.01
    assert abs(float(g.var()) - 1.6449340668) < 0.03


def sample(model: ArgmaxModel, row: torch.Tensor, seed: int, position: int, seq_id: int = 0) -> int:
    return sample_token_with_grammar(
        model,
        row,
        1.0,
        0,
        1.0,
        (),
        None,
        PenaltyParams(),
        [],
        SamplingConfig(),
        seq_id=seq_id,
        seed=seed,
        position=position,
    )


@given(
    seeds=st.lists(st.integers(0, 2**63), min_size=2, max_size=8, unique=True),
    order_seed=st.integers(0, 2**32),
)
def test_batch_order_does_not_change_tokens(seeds: list[int], order_seed: int) -> None:
    vocab = 50
    model = ArgmaxModel(vocab)
    gen = torch.Generator().manual_seed(order_seed)
    rows = torch.randn(len(seeds), vocab, generator=gen, dtype=torch.float64)
    in_order = {i: sample(model, rows[i], s, 3, i) for i, s in enumerate(seeds)}
    perm = list(range(len(seeds)))
    random.Random(order_seed).shuffle(perm)
    shuffled = {i: sample(model, rows[i], seeds[i], 3, i) for i in perm}
    assert in_order == shuffled
    # The sequence id names the decision only: it does not feed the noise.
    assert {i: sample(model, rows[i], seeds[i], 3, 1000 + i) for i in perm} == in_order


@given(
    row=st.lists(st.floats(-5, 5), min_size=2, max_size=40),
    seed=st.integers(0, 2**64 - 1),
    position=st.integers(0, 10_000),
)
def test_sampling_is_gumbel_max_with_the_documented_noise(row: list[float], seed: int, position: int) -> None:
    t = torch.tensor(row, dtype=torch.float64)
    expected = argmax_lowest((t - t.max()) + gumbel_noise(seed, position, len(row)))
    assert sample(ArgmaxModel(len(row)), t, seed, position) == expected


def test_golden_tokens() -> None:
    row = torch.linspace(-1.0, 1.0, 16, dtype=torch.float64)
    tokens = [sample(ArgmaxModel(16), row, 2024, position) for position in range(12)]
    assert tokens == GOLDEN_TOKENS


def test_seeds_give_different_tokens() -> None:
    model = ArgmaxModel(64)
    row = torch.zeros(64, dtype=torch.float64)
    tokens = {sample(model, row, seed, 0) for seed in range(200)}
    assert len(tokens) > 40


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_bits_equal_cpu_bits() -> None:
    ids = torch.arange(32768)
    for seed, position in [(0, 0), (42, 7), (2**64 - 1, 123456)]:
        assert torch.equal(noise_bits(seed, position, ids.cuda()).cpu(), noise_bits(seed, position, ids))
        cpu, gpu = gumbel_noise(seed, position, 32768), gumbel_noise(seed, position, 32768, "cuda").cpu()
        torch.testing.assert_close(gpu, cpu, rtol=1e-15, atol=1e-15)
