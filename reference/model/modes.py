"""The numerics modes and dtypes a model runs in, as the one vocabulary every layer speaks.

Both are string enums: a member equals and hashes as its name (`NumericsMode.EXACT == "exact"`), so
JSON specs, command lines and environment variables carry plain names, and `NumericsMode(name)` /
`DType(name)` turn a name into a member or raise ValueError naming the choices. A member's repr is its
name's, so a spec printed in a report can be pasted back as code.
"""

from __future__ import annotations

from enum import StrEnum

import torch


class NumericsMode(StrEnum):
    """`EXACT`: tile-padded batch-invariant kernels, bit-equal across batch shapes on one device;
    `FAST`: native batched kernels, equal within rounding (the replay oracle holds every decision)."""

    EXACT = "exact"
    FAST = "fast"

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def _missing_(cls, value: object) -> NumericsMode:
        raise ValueError(f"numerics {value!r}: expected one of {', '.join(m.value for m in cls)}")


class DType(StrEnum):
    """The dtypes a model's weights and activations may have."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"

    @property
    def torch(self) -> torch.dtype:
        return getattr(torch, self.value)

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def _missing_(cls, value: object) -> DType:
        raise ValueError(f"dtype {value!r}: expected one of {', '.join(m.value for m in cls)}")
