"""The paged decode attention kernel (`batched.paged_attention`): on a GPU, each row's output against
float64 attention over the row's own gathered positions, whatever the cache holds past its length;
off a GPU, the fully batched step's model keeps the gather path."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from batched.paged_attention import available, paged_attention
from batched.vector_model import VectorMtpModel
from tests.test_batched_model_equiv import base_model


def test_off_a_gpu_the_step_gathers() -> None:
    assert not available(torch.device("cpu"))
    model = VectorMtpModel.from_model(base_model("float32").clone())
    assert model.attention_read() is None


def float64_attention(q, k, v, tables, lengths) -> torch.Tensor:
    """Row by row: softmax(q k^T / sqrt(D)) v over positions < length, in float64."""
    out = []
    bs = k.shape[1]
    for m in range(q.shape[0]):
        n = int(lengths[m])
        blocks = tables[m, : -(-n // bs)]
        keys = k[blocks].flatten(0, 1)[:n].double()  # [n, Hh, D]
        values = v[blocks].flatten(0, 1)[:n].double()
        s = torch.einsum("hd,lhd->hl", q[m].double(), keys) / math.sqrt(q.shape[-1])
        out.append(torch.einsum("hl,lhd->hd", torch.softmax(s, dim=-1), values))
    return torch.stack(out)


@pytest.mark.gpu
@settings(max_examples=60)
@given(
    rows=st.integers(1, 40),
    heads=st.sampled_from([1, 4, 16]),
    dim=st.sampled_from([16, 64, 128]),
    block=st.sampled_from([8, 16]),
    dtype=st.sampled_from([torch.bfloat16, torch.float32]),
    seed=st.integers(0, 2**31 - 1),
)
def test_paged_attention_equals_attention_over_the_rows_own_positions(rows, heads, dim, block, dtype, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 12 * block, (rows,), generator=gen)
    span = -(-int(lengths.max()) // block) + 2
    blocks = rows * span  # each row's own blocks, scattered
    k = torch.randn(blocks + 1, block, heads, dim, generator=gen)
    v = torch.randn(blocks + 1, block, heads, dim, generator=gen)
    q = torch.randn(rows, heads, dim, generator=gen)
    tables = torch.randperm(blocks, generator=gen).view(rows, span)
    want = float64_attention(q.to(dtype), k.to(dtype), v.to(dtype), tables, lengths)
    # What sits at or past a row's length must not reach its output: poison it.
    for m in range(rows):
        n = int(lengths[m])
        if n % block:
            k[tables[m, n // block], n % block :] = float("nan")
            v[tables[m, n // block], n % block :] = float("inf")
    dev = torch.device("cuda")
    got = paged_attention(*(t.to(dev, dtype) for t in (q, k, v)), tables.to(dev), lengths.to(dev))
    assert got.dtype == dtype and bool(torch.isfinite(got).all())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(got.double().cpu(), want, atol=tol, rtol=tol)


@pytest.mark.gpu
def test_the_step_reads_the_cache_in_place_in_fast_numerics_on_a_gpu() -> None:
    from dataclasses import replace

    from batched.batched_model import BatchedMtpModel
    from batched.paged_attention import paged_read

    cfg = replace(base_model("bfloat16").cfg, device="cuda", numerics="fast")
    model = VectorMtpModel.from_model(BatchedMtpModel(cfg))
    assert model.attention_read() is paged_read
    assert VectorMtpModel.from_model(BatchedMtpModel(cfg), paged=False).attention_read() is None
    assert VectorMtpModel.from_model(BatchedMtpModel(replace(cfg, numerics="exact"))).attention_read() is None
