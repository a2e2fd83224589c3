"""Exact-mode row kernels are batch invariant: a row computed alone is bit-equal to the same row
inside a batch of any size, wherever it sits, whatever its neighbours hold."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference.decisions import argmax_lowest
from reference.model.kernels import (
    Numerics,
    argmax_rows,
    attention,
    bits_equal,
    linear,
    mlp,
    rms_norm,
    softmax_confidence,
    ssm_gates,
    tiled,
)

EXACT = Numerics(exact=True, tile=8)
H, S, F, HEADS, L, V = 64, 32, 128, 4, 48, 300
DTYPES = [torch.float32, torch.float64]
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rand(gen: torch.Generator, *shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)


def _kernels(gen: torch.Generator, dtype: torch.dtype):
    """name -> (row inputs maker(n), kernel(*inputs) -> [n, ...] tensor or tuple)."""
    w_h = _rand(gen, H, H, dtype=dtype) / 8
    w_up, w_down = _rand(gen, F, H, dtype=dtype) / 8, _rand(gen, H, F, dtype=dtype) / 11
    w_a, w_b = _rand(gen, S, H, dtype=dtype) / 8, _rand(gen, S, H, dtype=dtype) / 8
    norm_w = 1 + _rand(gen, H, dtype=dtype) / 10
    head = _rand(gen, V, H, dtype=dtype) / 3

    def rows(n: int) -> tuple[torch.Tensor, ...]:
        return (_rand(gen, n, H, dtype=dtype),)

    def attn_rows(n: int) -> tuple[torch.Tensor, ...]:
        q = _rand(gen, n, HEADS, H // HEADS, dtype=dtype)
        k = _rand(gen, n, L, HEADS, H // HEADS, dtype=dtype)
        v = _rand(gen, n, L, HEADS, H // HEADS, dtype=dtype)
        lengths = torch.randint(1, L + 1, (n,), generator=gen)
        # Garbage past a row's length must not leak into its output.
        k[torch.arange(L)[None, :] >= lengths[:, None]] = float("nan")
        return q, k, v, lengths

    def conf_rows(n: int) -> tuple[torch.Tensor, ...]:
        return _rand(gen, n, V, dtype=dtype) * 3, torch.randint(0, V, (n,), generator=gen)

    return {
        "linear": (rows, lambda x: linear(EXACT, x, w_h)),
        "rms_norm": (rows, lambda x: rms_norm(EXACT, x * 5, norm_w, 1e-6)),
        "mlp": (rows, lambda x: mlp(EXACT, x, w_up, w_down)),
        "ssm_gates": (rows, lambda x: ssm_gates(EXACT, x, w_a, w_b)),
        "head": (rows, lambda x: linear(EXACT, x, head)),
        "attention": (attn_rows, lambda *a: attention(EXACT, *a)),
        "confidence": (conf_rows, lambda lg, c: softmax_confidence(EXACT, lg, c)),
    }


def _as_tuple(x: torch.Tensor | tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["linear", "rms_norm", "mlp", "ssm_gates", "head", "attention", "confidence"])
@SETTINGS
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_row_alone_equals_row_in_batch(name: str, dtype: torch.dtype, n: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    make, kernel = _kernels(gen, dtype)[name]
    inputs = make(n)
    batch = _as_tuple(kernel(*inputs))
    # Every place in a tile (row mod 8), the middle and the last row.
    for i in sorted({*range(min(n, 9)), n // 2, n - 1}):
        alone = _as_tuple(kernel(*(x[i : i + 1] for x in inputs)))
        for b, a in zip(batch, alone, strict=True):
            assert bits_equal(b[i : i + 1], a), f"{name} row {i} of {n} differs when computed alone"


@pytest.mark.parametrize("name", ["linear", "rms_norm", "mlp", "attention"])
def test_bf16_row_alone_equals_row_in_batch(name: str) -> None:
    gen = torch.Generator().manual_seed(7)
    make, kernel = _kernels(gen, torch.bfloat16)[name]
    inputs = make(21)
    batch = kernel(*inputs)
    for i in range(21):
        assert bits_equal(batch[i : i + 1], kernel(*(x[i : i + 1] for x in inputs))), f"{name} row {i}"


def test_attention_ignores_everything_past_each_length() -> None:
    gen = torch.Generator().manual_seed(3)
    q = _rand(gen, 5, HEADS, 16, dtype=torch.float64)
    k = _rand(gen, 5, L, HEADS, 16, dtype=torch.float64)
    v = _rand(gen, 5, L, HEADS, 16, dtype=torch.float64)
    lengths = torch.tensor([1, 7, 16, 33, L])
    base = attention(EXACT, q, k, v, lengths)
    past = torch.arange(L)[None, :] >= lengths[:, None]
    k2, v2 = k.clone(), v.clone()
    k2[past], v2[past] = float("inf"), float("nan")
    assert bits_equal(attention(EXACT, q, k2, v2, lengths), base)
    # A row of length 1 attends to its one position only: the output is that value row.
    assert torch.allclose(base[0], v[0, 0], rtol=0, atol=1e-12)


def test_tiled_pads_and_chunks_to_the_tile() -> None:
    shapes: list[tuple[int, ...]] = []

    def fn(x: torch.Tensor) -> torch.Tensor:
        shapes.append(tuple(x.shape))
        return x * 2

    out = tiled(EXACT, fn, [torch.arange(19.0)[:, None]])
    assert shapes == [(8, 1)] * 3
    assert torch.equal(out[:, 0], torch.arange(19.0) * 2)
    shapes.clear()
    tiled(Numerics(exact=False, tile=8), fn, [torch.ones(19, 1)])
    assert shapes == [(19, 1)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_argmax_rows_ties_lowest_and_matches_reference_argmax(dtype: torch.dtype) -> None:
    nan, inf = float("nan"), float("inf")
    rows = torch.tensor(
        [
            [1.0, 3.0, 3.0, 2.0],
            [nan, 0.5, nan, 0.5],
            [-inf, -inf, -inf, -inf],
            [nan, nan, nan, nan],
            [-inf, nan, -1.0, -1.0],
            [0.0, inf, inf, 1.0],
        ],
        dtype=dtype,
    )
    got = argmax_rows(rows).tolist()
    assert got == [1, 1, 0, 0, 2, 1]
    assert got == [argmax_lowest(r) for r in rows]


def test_fast_kernels_agree_with_exact_ones() -> None:
    gen = torch.Generator().manual_seed(11)
    fast = Numerics(exact=False, tile=8)
    x = _rand(gen, 13, H, dtype=torch.float64)
    w = _rand(gen, H, H, dtype=torch.float64) / 8
    norm_w = 1 + _rand(gen, H, dtype=torch.float64) / 10
    torch.testing.assert_close(linear(fast, x, w), linear(EXACT, x, w), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(rms_norm(fast, x, norm_w, 1e-6), rms_norm(EXACT, x, norm_w, 1e-6))
    q = _rand(gen, 13, HEADS, 16, dtype=torch.float64)
    k = _rand(gen, 13, L, HEADS, 16, dtype=torch.float64)
    v = _rand(gen, 13, L, HEADS, 16, dtype=torch.float64)
    lengths = torch.randint(1, L + 1, (13,), generator=gen)
    torch.testing.assert_close(attention(fast, q, k, v, lengths), attention(EXACT, q, k, v, lengths))
