"""The paged decode attention kernel (`batched.vector.attention`): on a GPU, each row's output against
float64 attention over the row's own gathered positions, whatever the cache holds past its length;
off a GPU, the fully batched step's model keeps the gather path."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from batched.vector.attention import paged_attention, split_count
from batched.vector.model import VectorMtpModel
from batched.vector.triton_device import available
from tests.interpreted import run_interpreted
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


def poisoned_case(rows: int, heads: int, dim: int, block: int, seed: int) -> tuple[torch.Tensor, ...]:
    """q, k, v, tables, lengths of one case (float32, CPU): each row's own scattered blocks, and
    whatever sits at or past a row's length poisoned (the rest of its last block NaN and inf, the
    blocks its table lists past that NaN; no other row's table lists them)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 12 * block, (rows,), generator=gen)
    span = -(-int(lengths.max()) // block) + 2
    blocks = rows * span
    k = torch.randn(blocks + 1, block, heads, dim, generator=gen)
    v = torch.randn(blocks + 1, block, heads, dim, generator=gen)
    q = torch.randn(rows, heads, dim, generator=gen)
    tables = torch.randperm(blocks, generator=gen).view(rows, span)
    return q, k, v, tables, lengths


def poison_past_lengths(k: torch.Tensor, v: torch.Tensor, tables: torch.Tensor, lengths: torch.Tensor) -> None:
    block = k.shape[1]
    for m in range(tables.shape[0]):
        n = int(lengths[m])
        if n % block:
            k[tables[m, n // block], n % block :] = float("nan")
            v[tables[m, n // block], n % block :] = float("inf")
        k[tables[m, -(-n // block) :]] = float("nan")
        v[tables[m, -(-n // block) :]] = float("nan")


def interpreted_cases() -> None:
    """The kernel run by Triton's interpreter on the CPU (TRITON_INTERPRET=1 set before Triton is
    imported) over cases of every tile shape and of one to eight chunks per row (rows shorter than a
    chunk leave later chunks empty), against float64 attention."""
    for seed, (rows, heads, dim, block, tile, splits) in enumerate(
        [
            (1, 1, 16, 8, 8, 1),
            (3, 2, 16, 4, 64, 1),
            (5, 4, 32, 16, 64, 1),
            (7, 1, 16, 8, 16, 1),
            (4, 2, 32, 4, 128, 1),
            (6, 2, 16, 8, 8, 2),
            (5, 1, 16, 4, 8, 4),
            (9, 2, 16, 8, 16, 8),
            (3, 1, 32, 4, 16, None),
        ]
    ):
        q, k, v, tables, lengths = poisoned_case(rows, heads, dim, block, seed)
        want = float64_attention(q, k, v, tables, lengths)
        poison_past_lengths(k, v, tables, lengths)
        got = paged_attention(q, k, v, tables, lengths, tile=tile, splits=splits, prefetch=False)
        assert bool(torch.isfinite(got).all()), f"case {seed}: a poisoned position reached the output"
        torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5, msg=f"case {seed}")
        ahead = paged_attention(q, k, v, tables, lengths, tile=tile, splits=splits, prefetch=True)
        assert torch.equal(ahead, got), f"case {seed}: loading ahead changed the output"


def test_split_count_fills_the_device_and_keeps_chunks_whole() -> None:
    assert split_count(64, 16, 512, 16) == 4  # the benchmark's decode: 4096 programs
    assert split_count(1, 16, 512, 16) == 16  # capped: at least two tiles a chunk
    assert split_count(256, 16, 4096, 16) == 1
    assert split_count(8, 1, 16, 16) == 1
    for rows, heads, positions, tile in [(3, 2, 100, 16), (1, 1, 4096, 8), (40, 16, 256, 16)]:
        s = split_count(rows, heads, positions, tile)
        assert s & (s - 1) == 0 and (s == 1 or positions >= 2 * tile * s)


def test_the_kernel_in_the_triton_interpreter_on_the_cpu() -> None:
    """CI has no GPU: the kernel's logic (tiles over several blocks, masks at each row's length, the
    online softmax, chunks and their combination) still runs, interpreted, in a fresh process."""
    run_interpreted("tests.test_paged_attention", "interpreted_cases")


@pytest.mark.gpu
@settings(max_examples=60)
@given(
    rows=st.integers(1, 40),
    heads=st.sampled_from([1, 4, 16]),
    dim=st.sampled_from([16, 64, 128]),
    block=st.sampled_from([8, 16]),
    dtype=st.sampled_from([torch.bfloat16, torch.float32]),
    splits=st.sampled_from([None, 1, 2, 4, 16]),
    warps=st.sampled_from([None, 1, 2, 4]),
    seed=st.integers(0, 2**31 - 1),
)
def test_paged_attention_equals_attention_over_the_rows_own_positions(
    rows, heads, dim, block, dtype, splits, warps, seed
) -> None:
    q, k, v, tables, lengths = poisoned_case(rows, heads, dim, block, seed)
    want = float64_attention(q.to(dtype), k.to(dtype), v.to(dtype), tables, lengths)
    poison_past_lengths(k, v, tables, lengths)
    dev = torch.device("cuda")
    args = (*(t.to(dev, dtype) for t in (q, k, v)), tables.to(dev), lengths.to(dev))
    got = paged_attention(*args, warps=warps, splits=splits, prefetch=False)
    assert got.dtype == dtype and bool(torch.isfinite(got).all())
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    torch.testing.assert_close(got.double().cpu(), want, atol=tol, rtol=tol)
    ahead = paged_attention(*args, warps=warps, splits=splits, prefetch=True)
    assert torch.equal(ahead, got), "loading ahead changed the output"


@pytest.mark.gpu
def test_the_step_reads_the_cache_in_place_in_fast_numerics_on_a_gpu() -> None:
    from dataclasses import replace

    from batched.batched_model import BatchedMtpModel
    from batched.vector.attention import paged_read

    cfg = replace(base_model("bfloat16").cfg, device="cuda", numerics="fast")
    model = VectorMtpModel.from_model(BatchedMtpModel(cfg))
    assert model.attention_read() is paged_read
    assert VectorMtpModel.from_model(BatchedMtpModel(cfg), paged=False).attention_read() is None
    assert VectorMtpModel.from_model(BatchedMtpModel(replace(cfg, numerics="exact"))).attention_read() is None


def test_the_gathered_entry_point_is_the_step_without_the_kernel() -> None:
    """`vector-gathered` hands the suite a `VectorMtpModel` that never takes the paged kernel, with
    the fully batched step's call contract."""
    from batched.vector.step import step_mtp_bootstrap_vectorized
    from properties.impl import load

    impl = load("vector-gathered")
    assert impl.step is step_mtp_bootstrap_vectorized
    model = impl.prepare_model(base_model("float32").clone())
    assert isinstance(model, VectorMtpModel) and model.paged is False
    assert not impl.per_row_fast_greedy_calls
