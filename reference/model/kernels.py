"""Row kernels: every function takes M rows and treats each row on its own.

Two numerics modes (`Numerics`):
- exact: batch invariant. Every kernel call runs on exactly `tile` rows (M is zero-padded up to a
  multiple of the tile and the chunks run one after another), so shapes, and with them the kernel the
  backend picks and its reduction order, never depend on M or on a row's neighbours. Attention is
  given keys and values over a fixed padded length by its caller. bf16 inputs are reduced in float32.
  A row computed alone is then bit-equal to the same row inside any batch. On the CPU this also
  relies on tile * dim being a multiple of 64 for the transcendental elementwise ops (sigmoid, SiLU;
  `ModelConfig.validate` enforces it) and, for dims where tile * dim exceeds 32768, on the backend
  splitting those ops at vector boundaries; the kernel tests check it for the configurations used.
- fast: the native kernels on the real M (attention padded only to what the caller gathered).

Reductions that are row-local by construction (argmax, elementwise ops whose result is correctly
rounded: add, mul, div, sqrt, where) are safe in both modes. A softmax over the vocabulary is
row-local but not place-free: CUDA's softmax kernels read a row in 16-byte vectors and reduce the
elements before its first aligned one apart, so with a width that is not a multiple of the vector
(a tokenizer's 151665, the suite's 601) a row's bits depend on where it starts, alone or at row r of
a batch. `row_softmax` runs it on rows padded to whole `ALIGN_BYTES` lines, every row on one.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

Tensors = torch.Tensor | tuple[torch.Tensor, ...]

# The attention backends fast mode lets PyTorch choose from on a GPU (None: every backend). Not
# cuDNN: it builds an execution plan for every new (rows, span) shape, and nearly every example of
# the suite brings new shapes, so plans, not attention, took most of a GPU example's time (on the
# H200 the implementation's side of a P1 example took 361 ms with cuDNN, 54 ms without; docs/numerics.md).
FAST_SDPA_BACKENDS: list[SDPBackend] | None = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


@dataclass(slots=True, frozen=True)
class Numerics:
    """`exact`: tile-padded batch-invariant kernels; `tile`: rows per kernel call in exact mode."""

    exact: bool
    tile: int


def _pad_rows(x: torch.Tensor, rows: int, value: float | int) -> torch.Tensor:
    """`x` with rows appended (filled with `value`) up to `rows`, contiguous."""
    if x.shape[0] == rows:
        return x.contiguous()
    # One op: F.pad takes (last dim left, right, ..., first dim left, right).
    return F.pad(x, (0, 0) * (x.dim() - 1) + (0, rows - x.shape[0]), value=value)


def tiled(
    nm: Numerics,
    fn: Callable[..., Tensors],
    xs: Sequence[torch.Tensor],
    pads: Sequence[float | int] | None = None,
) -> Tensors:
    """fn(*xs) where every x has M leading rows and fn is row-wise. Exact mode calls fn on chunks of
    exactly `nm.tile` rows (the last padded with `pads`, zero by default) and concatenates the
    first M rows of its output(s); fast mode calls fn(*xs) once."""
    if not nm.exact:
        return fn(*xs)
    m, t = xs[0].shape[0], nm.tile
    pads = [0] * len(xs) if pads is None else pads
    if m <= t:  # one chunk: no concatenation
        out = fn(*(_pad_rows(x, t, p) for x, p in zip(xs, pads, strict=True)))
        return tuple(o[:m] for o in out) if isinstance(out, tuple) else out[:m]
    outs: list[Tensors] = []
    for start in range(0, max(m, 1), t):
        outs.append(fn(*(_pad_rows(x[start : start + t], t, p) for x, p in zip(xs, pads, strict=True))))
    if isinstance(outs[0], tuple):
        return tuple(torch.cat([o[i] for o in outs], dim=0)[:m] for i in range(len(outs[0])))
    return torch.cat(outs, dim=0)[:m]  # type: ignore[arg-type]


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float32 if x.dtype in (torch.bfloat16, torch.float16) else x.dtype


def linear(nm: Numerics, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x [M, K] @ w [N, K]^T -> [M, N]."""
    return tiled(nm, lambda a: F.linear(a, w), [x])  # type: ignore[return-value]


def rms_norm(nm: Numerics, x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * w over the last dim, x [M, H]; bf16 reduced in float32."""
    if not nm.exact:
        return F.rms_norm(x, (x.shape[-1],), w, eps)

    def core(a: torch.Tensor) -> torch.Tensor:
        af = a.to(_compute_dtype(a))
        ms = (af * af).mean(dim=-1, keepdim=True)  # [t, 1]
        return (af / torch.sqrt(ms + eps) * w.to(af.dtype)).to(a.dtype)

    return tiled(nm, core, [x])  # type: ignore[return-value]


def mlp(nm: Numerics, x: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """w_down silu(w_up x), x [M, H] -> [M, H]."""
    return tiled(nm, lambda a: F.linear(F.silu(F.linear(a, w_up)), w_down), [x])  # type: ignore[return-value]


def ssm_gates(nm: Numerics, x: torch.Tensor, w_a: torch.Tensor, w_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(decay, input) = (sigmoid(w_a x), w_b x), x [M, H] -> two [M, S]."""
    return tiled(nm, lambda a: (torch.sigmoid(F.linear(a, w_a)), F.linear(a, w_b)), [x])  # type: ignore[return-value]


def ssm_step(decay: torch.Tensor, inp: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """h' = decay * h + inp, all [M, S]: two correctly rounded elementwise ops, batch invariant as is."""
    return decay * h + inp


def attention(nm: Numerics, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row's query over its own keys: q [M, Hh, D], k/v [M, L, Hh, D], lengths [M] (row m sees
    positions < lengths[m], >= 1). Positions at or past a row's length get probability 0. Exact mode
    also zeroes their keys and values first, so whatever is there never reaches the output; fast mode
    relies on the mask alone, so there they must be finite (the paged gather reads zeros)."""
    scale = 1.0 / math.sqrt(q.shape[-1])

    if not nm.exact:
        valid = torch.arange(k.shape[1], device=k.device)[None, :] < lengths[:, None]  # [M, L]
        backends = FAST_SDPA_BACKENDS if q.device.type == "cuda" else None
        with sdpa_kernel(backends) if backends is not None else contextlib.nullcontext():
            out = F.scaled_dot_product_attention(
                q[:, :, None, :],
                k.transpose(1, 2),
                v.transpose(1, 2),
                attn_mask=valid[:, None, None, :],
                scale=scale,
            )  # [M, Hh, 1, D]
        return out[:, :, 0, :]

    def core(qc: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, lc: torch.Tensor) -> torch.Tensor:
        cd = _compute_dtype(qc)
        valid = torch.arange(kc.shape[1], device=kc.device)[None, :] < lc[:, None]  # [t, L]
        keep = valid[:, :, None, None]
        kc, vc = torch.where(keep, kc.to(cd), 0), torch.where(keep, vc.to(cd), 0)
        s = torch.einsum("thd,tlhd->thl", qc.to(cd), kc) * scale  # [t, Hh, L]
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.einsum("thl,tlhd->thd", p, vc).to(qc.dtype)  # [t, Hh, D]

    return tiled(nm, core, [q, k, v, lengths], pads=[0, 0, 0, 1])  # type: ignore[return-value]


# The line every row of a softmax over the vocabulary starts on (see the module docstring): a
# multiple of any vector width a GPU reads rows in.
ALIGN_BYTES = 128


def row_softmax(x: torch.Tensor, log: bool = False) -> torch.Tensor:
    """softmax (`log`: log-softmax) of each row of x [M, V] -> [M, V], x's dtype; each row's bits are
    the same wherever the row sits in memory and whatever rows are beside it, on the CPU and on CUDA.
    The rows are copied into a fresh [M, V'] tensor, V' the least width of whole `ALIGN_BYTES` lines,
    the new columns -inf (an exact zero of the softmax's sum, and never a row's max unless every
    entry is -inf, whose softmax is undefined either way)."""
    per_line = ALIGN_BYTES // x.element_size()
    wide = F.pad(x, (0, -x.shape[-1] % per_line), value=float("-inf"))  # a new tensor, even when no column is added
    out = torch.log_softmax(wide, dim=-1) if log else torch.softmax(wide, dim=-1)
    return out[:, : x.shape[-1]]


def softmax_confidence(nm: Numerics, logits: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """softmax(logits[m])[chosen[m]] in float32, logits [M, V], chosen [M] int64 -> [M] float32."""

    def core(lc: torch.Tensor, cc: torch.Tensor) -> torch.Tensor:
        return row_softmax(lc.float()).gather(1, cc[:, None])[:, 0]

    return tiled(nm, core, [logits, chosen])  # type: ignore[return-value]


def argmax_rows(logits: torch.Tensor) -> torch.Tensor:
    """Argmax of each row of logits [M, V] -> [M] int64, ties to the lowest id. NaN ranks below every
    number and -inf (as in `reference.decisions.argmax_lowest`); a row of NaN only gives 0."""
    lowest = torch.finfo(logits.dtype).min
    ranked = torch.nan_to_num(logits, nan=float("-inf"), posinf=float("inf"), neginf=lowest)
    return torch.argmax(ranked, dim=-1)


def bits_equal(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """Same shape, dtype and bits (NaN equals NaN of the same payload); None equals None only."""
    if a is None or b is None:
        return a is b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16}[a.element_size()]
    return torch.equal(a.contiguous().view(as_int), b.contiguous().view(as_int).to(a.device))
