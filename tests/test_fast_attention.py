"""Fast attention on a GPU: PyTorch chooses among flash, memory-efficient and math attention, never
cuDNN's, whose per-shape execution plans cost a suite whose every example brings new shapes more than
the attention itself (docs/numerics.md); and a row's output is the one it gets alone."""

from __future__ import annotations

import pytest
import torch

from reference.model.kernels import FAST_SDPA_BACKENDS, Numerics, attention

FAST = Numerics(exact=False, tile=8)


def rows(device: str) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*shape, generator=g) for shape in ((5, 4, 16), (5, 48, 4, 16), (5, 48, 4, 16)))
    lengths = torch.tensor([1, 7, 48, 13, 2])
    return tuple(
        t.to(device=device, dtype=torch.bfloat16 if t.is_floating_point() else t.dtype) for t in (q, k, v, lengths)
    )


def test_the_fast_backends_leave_cudnn_out() -> None:
    assert FAST_SDPA_BACKENDS is not None
    assert torch.nn.attention.SDPBackend.CUDNN_ATTENTION not in FAST_SDPA_BACKENDS


@pytest.mark.gpu
def test_fast_attention_on_a_gpu_never_runs_cudnn() -> None:
    q, k, v, lengths = rows("cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = attention(FAST, q, k, v, lengths)
        torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages()]
    assert not [n for n in names if "cudnn" in n.lower()], names
    alone = torch.cat([attention(FAST, q[i : i + 1], k[i : i + 1], v[i : i + 1], lengths[i : i + 1]) for i in range(5)])
    assert torch.equal(out, alone), "a row's output depends on the rows beside it"
