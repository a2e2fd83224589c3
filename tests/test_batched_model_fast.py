"""Fast numerics agree with exact ones within the dtype's tolerance, and on a GPU the exact kernels
stay bit-equal between batched and per-sequence operations while the fast path never syncs."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from batched.batched_model import BatchedMtpModel
from reference.decisions import DecisionLog
from reference.model.config import ModelConfig
from reference.model.kernels import Numerics, attention, bits_equal, linear, mlp, rms_norm, ssm_gates
from reference.model.paged_kv import BlockAllocator
from reference.state import SequenceState

CFG = ModelConfig(
    max_seq_len=64, num_blocks=160, num_draft_blocks=192, num_slots=16, num_ssm_slots=16, stash_capacity=16,
    propose_meta_stride=8,
)  # fmt: skip
N = 12
# (logits atol, logits rtol, confidence atol, smallest exact margin at which a draft must agree)
TOLERANCE = {"float32": (1e-4, 1e-4, 1e-5, 1e-3), "bfloat16": (0.25, 0.05, 0.03, 0.5)}
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _world(cfg: ModelConfig, seed: int = 3) -> tuple[BatchedMtpModel, list[SequenceState], list[int]]:
    """A model with caches from `seed` (the same values in every dtype, up to rounding) and N sequences."""
    model = BatchedMtpModel(cfg, env={})
    gen = torch.Generator().manual_seed(seed)
    model.randomize_caches(gen)
    main = BlockAllocator(cfg.num_blocks, cfg.block_size, gen)
    draft = BlockAllocator(cfg.num_draft_blocks, cfg.block_size, gen)
    lengths = torch.randint(0, cfg.max_seq_len - cfg.max_drafts, (N,), generator=gen).tolist()
    seqs = [main.sequence(draft, i, i if i % 3 else None, n, 1, 1 + cfg.max_drafts) for i, n in enumerate(lengths)]
    return model, seqs, torch.randint(0, cfg.vocab_size, (N,), generator=gen).tolist()


def _exact_reference(k: int) -> tuple[torch.Tensor, list[list[int]], list[list[float]], list[list[float]]]:
    """float64 exact: decode_batch logits, then per-sequence drafts, confidences and margins."""
    model, seqs, tokens = _world(CFG)
    logits = model.decode_batch(tokens, seqs)
    model.stash_verify_hidden_rows(list(range(N)))
    drafts, confs, margins = [], [], []
    for j, s in enumerate(seqs):
        model.save_hidden_for_mtp_from_stash(j)
        conf: list[float] = []
        with DecisionLog() as log:
            drafts.append(model.run_mtp_propose_multi(5, s.seq_len, k, s, conf_out=conf))
        confs.append(conf)
        margins.append([r.margin for r in log.records])
    return logits, drafts, confs, margins


def _check_fast_against_exact(dtype: str, device: str) -> None:
    atol, rtol, conf_atol, min_margin = TOLERANCE[dtype]
    ref_logits, ref_drafts, ref_conf, margins = _exact_reference(k=4)
    model, seqs, tokens = _world(replace(CFG, dtype=dtype, numerics="fast", device=device))
    logits = model.decode_batch(tokens, seqs)
    torch.testing.assert_close(logits.double().cpu(), ref_logits, atol=atol, rtol=rtol)
    model.stash_verify_hidden_rows(list(range(N)))
    conf: list[list[float]] = []
    drafts = model.run_mtp_propose_batched([5] * N, [s.seq_len for s in seqs], list(range(N)), 4, seqs, conf_out=conf)
    assert drafts is not None
    compared = 0
    for g in range(N):
        for i in range(4):
            if drafts[g][i] != ref_drafts[g][i]:
                assert margins[g][i] < min_margin, f"member {g} draft {i}: margin {margins[g][i]}"
                break  # later drafts continue from a different token
            assert conf[g][i] == pytest.approx(ref_conf[g][i], abs=conf_atol)
            compared += 1
    assert compared >= N  # most drafts are compared, not skipped


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fast_cpu_agrees_with_exact_within_tolerance(dtype: str) -> None:
    _check_fast_against_exact(dtype, "cpu")


def test_fast_batched_decode_agrees_with_fast_per_sequence_decodes() -> None:
    cfg = replace(CFG, dtype="float32", numerics="fast")
    batched, seqs, tokens = _world(cfg)
    single, seqs2, _ = _world(cfg)
    logits = batched.decode_batch(tokens, seqs)
    per_seq = torch.stack([single.decode(t, s) for t, s in zip(tokens, seqs2, strict=True)])
    torch.testing.assert_close(logits, per_seq, atol=1e-5, rtol=1e-5)
    assert seqs == seqs2


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fast_cuda_agrees_with_exact_cpu_within_tolerance(dtype: str) -> None:
    _check_fast_against_exact(dtype, "cuda")


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_cuda_batched_ops_are_bit_equal_to_per_sequence_ops(dtype: str) -> None:
    cfg = replace(CFG, dtype=dtype, device="cuda")
    ref, seqs, tokens = _world(cfg)
    impl, impl_seqs = ref.clone(), copy.deepcopy(seqs)
    ref_logits, ref_hidden = [], []
    for t, s in zip(tokens, seqs, strict=True):
        ref_logits.append(ref.decode(t, s))
        ref_hidden.append(ref.hidden_states[0].clone())
    logits = impl.decode_batch(tokens, impl_seqs)
    assert bits_equal(logits, torch.stack(ref_logits))
    assert bits_equal(impl.hidden_states[:N], torch.stack(ref_hidden))
    impl.stash_verify_hidden_rows(list(range(N)))
    ref.stash[:N] = torch.stack(ref_hidden)  # type: ignore[index]
    conf: list[list[float]] = []
    drafts = impl.run_mtp_propose_batched(
        [5] * N, [s.seq_len for s in seqs], list(range(N)), 4, impl_seqs, conf_out=conf
    )
    for j, s in enumerate(seqs):
        ref.save_hidden_for_mtp_from_stash(j)
        c: list[float] = []
        assert ref.run_mtp_propose_multi(5, s.seq_len, 4, s, conf_out=c) == drafts[j]  # type: ignore[index]
        assert c == conf[j]
    assert [d for d in impl.diff_state(ref) if d not in ("hidden_states", "mtp_hidden_in")] == []


@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_exact_cuda_kernels_are_batch_invariant(dtype: torch.dtype) -> None:
    nm, gen = Numerics(exact=True, tile=8), torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, device="cuda").to(dtype)

    w, w_up, w_down, w_s = rand(64, 64) / 8, rand(128, 64) / 8, rand(64, 128) / 11, rand(32, 64) / 8
    kernels = {
        "linear": lambda x: linear(nm, x, w),
        "rms_norm": lambda x: rms_norm(nm, x, w[0], 1e-6),
        "mlp": lambda x: mlp(nm, x, w_up, w_down),
        "ssm_gates": lambda x: ssm_gates(nm, x, w_s, w_s * 2)[0],
    }
    for n in (1, 7, 9, 37):
        x = rand(n, 64)
        for name, kernel in kernels.items():
            batch = kernel(x)
            assert all(bits_equal(batch[i : i + 1], kernel(x[i : i + 1])) for i in range(n)), (name, n)
        q, k, v = rand(n, 4, 16), rand(n, 48, 4, 16), rand(n, 48, 4, 16)
        lengths = torch.randint(1, 49, (n,), generator=gen, device="cuda")
        batch = attention(nm, q, k, v, lengths)
        assert all(
            bits_equal(batch[i : i + 1], attention(nm, q[i : i + 1], k[i : i + 1], v[i : i + 1], lengths[i : i + 1]))
            for i in range(n)
        )


@gpu
@needs_cuda
def test_fast_cuda_decode_batch_and_stash_never_sync() -> None:
    model, seqs, tokens = _world(replace(CFG, dtype="bfloat16", numerics="fast", device="cuda"))
    model.decode_batch(tokens, copy.deepcopy(seqs))  # warm-up: allocator, pinned memory
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        model.decode_batch(tokens, seqs)
        model.stash_verify_hidden_rows(list(range(N)))
        model.save_hidden_for_mtp_from_stash(3)
    finally:
        torch.cuda.set_sync_debug_mode("default")
