"""The memory floor of one batched bootstrap step: the bytes it must move through device memory,
and the device's measured copy bandwidth to divide them by.

Bytes counted (all in the model's dtypes):
- weights: the main model once (attention layers, SSM layer, final norm, the tied head), and per
  draft position the drafter (its norms, projection, block, final norm) plus the tied head, once per
  propose group: the step proposes in groups of at most the group cap, so ceil(rows / cap) passes;
- main KV: each row reads keys and values of its cache plus the new position, in every attention
  layer, and writes the new position;
- drafter KV: draft i of a row at drafter position p reads positions 0..p + i and writes p + i;
- SSM: each row's state read and written, and copied into its checkpoint;
- logits: the decode's [n, vocab] and every drafter pass's rows, each written once and read once.
Embedding-row gathers, per-row metadata and hidden rows are a few KiB and left out.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import fields

import torch

from reference.model.config import ModelConfig
from reference.model.weights import Weights

CUDA_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 128 << 20


def tensor_bytes(*ts: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


def _obj_bytes(obj: object) -> int:
    """Bytes of every tensor field of a weights dataclass (nested dataclasses included)."""
    total = 0
    for f in fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        total += tensor_bytes(v) if isinstance(v, torch.Tensor) else _obj_bytes(v)
    return total


def weight_bytes(w: Weights) -> tuple[int, int, int]:
    """(main model without the embedding, drafter without the embedding, the tied embedding/head)."""
    main = sum(_obj_bytes(layer) for layer in w.layers) + _obj_bytes(w.ssm) + tensor_bytes(w.final_norm)
    return main, _obj_bytes(w.drafter), tensor_bytes(w.embed)


def propose_passes(rows: int, group_cap: int) -> int:
    """Drafter passes per draft position for `rows` proposing rows: one per group of at most the cap
    (a cap below 2 proposes row by row)."""
    if rows == 0:
        return 0
    return rows if group_cap < 2 else math.ceil(rows / group_cap)


def step_bytes(cfg: ModelConfig, w: Weights, cache_lens: list[int], drafting: list[bool], ladder_nd: int) -> int:
    """Bytes one batched bootstrap step must move: rows with cache lengths `cache_lens` (before the
    step), `drafting[j]` when row j proposes `ladder_nd` drafts (see the module docstring)."""
    main_w, draft_w, embed_w = weight_bytes(w)
    elem = torch.empty(0, dtype=cfg.torch_dtype).element_size()
    logit_elem = torch.empty(0, dtype=cfg.logits_dtype).element_size()
    kv_pos = 2 * cfg.hidden * elem  # keys and values of one position in one layer
    n = len(cache_lens)
    proposing = [length for length, d in zip(cache_lens, drafting, strict=True) if d]
    passes = propose_passes(len(proposing), cfg.mtp_propose_batch_max) * ladder_nd

    total = main_w + embed_w + passes * (draft_w + embed_w)
    total += sum(cfg.n_attn_layers * (length + 2) * kv_pos for length in cache_lens)
    for length in proposing:
        p = length + 1  # drafter position after the decode
        total += sum((p + i + 2) * kv_pos for i in range(ladder_nd))
    total += n * 4 * cfg.ssm_state * elem
    total += 2 * logit_elem * cfg.vocab_size * (n + len(proposing) * ladder_nd)
    return total


def measure_bandwidth(device: torch.device | str, reps: int = 10) -> float:
    """Device copy bandwidth in bytes per second (bytes read + written): the median of `reps` large
    device-to-device copies (CUDA events on a GPU; a large memcpy on the CPU)."""
    dev = torch.device(device)
    nbytes = CUDA_COPY_BYTES if dev.type == "cuda" else CPU_COPY_BYTES
    src = torch.ones(nbytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = [_timed_copy(dst, src) for _ in range(reps)]
    return 2 * nbytes / statistics.median(times)


def _timed_copy(dst: torch.Tensor, src: torch.Tensor) -> float:
    """Seconds one dst.copy_(src) takes on the tensors' device."""
    if dst.device.type == "cuda":
        with torch.cuda.device(dst.device):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    dst.copy_(src)
    return time.perf_counter() - t0
