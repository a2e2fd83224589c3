"""Where every tolerance of the suite comes from: `Tolerance` (one numerics mode and dtype), the
rounding of each dtype behind it, and the comparisons that apply it. Exact numerics compare bit for
bit; fast numerics within rounding.

The same number computed by two kernels (a batched pass against one row at a time) may differ by
rounding, and rounding error scales with the operands, not with the result: a logit near zero that
came out of a dot product of large terms carries the rounding of those terms. So a value is held to
a tolerance relative to the largest magnitude of the unit it belongs to (the last dimension: a logits
row, one head's key or value vector, an SSM state row): `ROUNDING[dtype]` times that magnitude.

The tolerance counts unit roundoffs u (bf16 2^-8, float32 2^-24, float64 2^-53) of that magnitude:
16 u in bf16, 64 u in float32 and float64. A value the properties compare is the end of a chain of
operations (a drafter row four drafts deep has gone through four drafter steps, each several
rounded operations), and the batched kernels reduce in another order (a group's drafter attends
over the span of its longest member). In bf16 every operation's output is rounded to 8 bits, so the
error is about one u per operation in series; in float32 the sums inside each operation add their
own (tens of terms each). Measured over generated worlds (`python -m benchmarks.profile --mode rounding`,
docs/numerics.md) the worst is 4-6 u in bf16 and 20 u in float32: the tolerances leave 3-4x
headroom, and every catalogued bug still dies in fast numerics (docs/mutants.md). Non-finite values
must match exactly (NaN with NaN, inf with inf of the same sign).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch

from reference.model.modes import DType, NumericsMode
from reference.state import TokenLogprobs

ROUNDING: dict[DType, float] = {
    DType.BFLOAT16: 16 * 2.0**-8,
    DType.FLOAT32: 64 * 2.0**-24,
    DType.FLOAT64: 64 * 2.0**-53,
}
# Values an oracle recomputes from the same row in another kernel (draft confidences in float32,
# logprobs in float64): the rounding of that computation alone.
COMPUTE_ROUNDING: dict[torch.dtype, float] = {torch.float32: 2.0**-19, torch.float64: 2.0**-47}


class HasNumerics(Protocol):
    """A model's description: `ModelSpec`, `ModelConfig`, a generation's model."""

    @property
    def numerics(self) -> str: ...
    @property
    def dtype(self) -> str: ...


@dataclass(slots=True, frozen=True)
class Tolerance:
    """How numbers are compared in one numerics mode and dtype: bit for bit in exact numerics, else
    within `ROUNDING[dtype]` of the unit's largest magnitude (`differing`), with the replay oracle
    holding every decision. Names convert: `Tolerance("fast", "bfloat16")`."""

    numerics: NumericsMode
    dtype: DType

    def __post_init__(self) -> None:
        object.__setattr__(self, "numerics", NumericsMode(self.numerics))
        object.__setattr__(self, "dtype", DType(self.dtype))

    @classmethod
    def of(cls, model: HasNumerics) -> Tolerance:
        """The tolerance of a model's numerics and dtype."""
        return cls(NumericsMode(model.numerics), DType(model.dtype))

    @property
    def exact(self) -> bool:
        return self.numerics == NumericsMode.EXACT

    @property
    def fast(self) -> bool:
        return self.numerics == NumericsMode.FAST

    @property
    def rtol(self) -> float:
        """The relative tolerance of values: 0 in exact numerics, else the dtype's rounding."""
        return 0.0 if self.exact else ROUNDING[self.dtype]

    @property
    def rounding(self) -> float:
        """The dtype's rounding whatever the mode: what separates a near tie from a clear decision."""
        return ROUNDING[self.dtype]


def unit_scale(ref: torch.Tensor) -> torch.Tensor:
    """The largest finite magnitude of each unit (last dimension) of `ref`, kept as a trailing dim."""
    r = ref.detach().double()
    mag = torch.where(torch.isfinite(r), r.abs(), torch.zeros_like(r))
    return mag.amax(dim=-1, keepdim=True) if r.dim() else mag


def differing(
    ref: torch.Tensor, impl: torch.Tensor, rtol: float, computed_from: torch.Tensor | None = None
) -> torch.Tensor:
    """Bool mask of the elements of `impl` outside the tolerance of `ref` (same shape): bitwise
    where rtol = 0; else finite values within rtol times their unit's scale, non-finite equal. The
    scale is `computed_from`'s where given: the unit before a mask replaced most of it with -inf
    (a masked row's few survivors were computed alongside the entries the mask hid)."""
    if rtol == 0:
        return _bits(ref) != _bits(impl)
    r = ref.detach().double()
    m = impl.detach().double().to(r.device)
    finite = torch.isfinite(r) & torch.isfinite(m)
    scale = unit_scale(r if computed_from is None else computed_from.to(r.device))
    close = (r - m).abs() <= rtol * scale
    same_special = (r.isnan() & m.isnan()) | (~torch.isfinite(r) & (r == m))
    return ~torch.where(finite, close, same_special)


def row_difference(ref: torch.Tensor, impl: torch.Tensor) -> float:
    """The largest absolute difference of two rows over entries finite in both; inf when their
    non-finite entries differ."""
    r, m = ref.detach().double(), impl.detach().double().to(ref.device)
    finite = torch.isfinite(r) & torch.isfinite(m)
    same_special = (r.isnan() & m.isnan()) | (~torch.isfinite(r) & (r == m))
    if not bool((finite | same_special).all()):
        return float("inf")
    return float((r - m)[finite].abs().max()) if bool(finite.any()) else 0.0


def _bits(t: torch.Tensor) -> torch.Tensor:
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()]
    return t.detach().contiguous().view(as_int)


def logprobs_match(got: TokenLogprobs | None, want: TokenLogprobs | None) -> bool:
    """Whether two `TokenLogprobs` agree: the same ids, each logprob within float64 compute rounding."""
    if got is None or want is None:
        return got is want
    tol = COMPUTE_ROUNDING[torch.float64]
    scale = max([abs(want.logprob)] + [abs(v) for _, v in want.top] + [1.0])

    def near(x: float, y: float) -> bool:
        return (math.isnan(x) and math.isnan(y)) or x == y or abs(x - y) <= tol * scale

    return (
        got.token == want.token
        and near(got.logprob, want.logprob)
        and [i for i, _ in got.top] == [i for i, _ in want.top]
        and all(near(x, y) for (_, x), (_, y) in zip(got.top, want.top, strict=True))
    )
